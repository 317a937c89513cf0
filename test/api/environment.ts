import { type TestEnvironment, testEnvironment as shared } from "../support/environment.ts";

/** The shared harness, plus Redis for the rate-limit store when TEST_REDIS_URL is set (CI's second pass). */
export function testEnvironment(): TestEnvironment & { redisUrl: string | null } {
  return { ...shared(), redisUrl: process.env.TEST_REDIS_URL ?? null };
}
