import { defineConfig } from "vitest/config";

/**
 * The slow tier: whole stacks booted with `npm start`, processes killed with SIGKILL, outages and
 * faults, several API processes, the seed tool. TEST_TIER=fast (`npm test`) leaves it out,
 * TEST_TIER=slow runs it alone (`npm run test:full` runs both, the slow tier one file at a time);
 * a plain `npx vitest run [files]` runs any file.
 */
export const SLOW_TIER = ["test/e2e/**", "test/api/*-crash.test.ts", "test/tools/seed.test.ts"];
const tier = process.env.TEST_TIER;

export default defineConfig({
  test: {
    include: tier === "slow" ? SLOW_TIER.map((glob) => (glob.endsWith("**") ? `${glob}/*.test.ts` : glob)) : ["test/**/*.test.ts"],
    // test/contracts/** belongs to Hardhat's runner (npm run test:contracts).
    exclude: ["test/contracts/**", "node_modules/**", ...(tier === "fast" ? SLOW_TIER : [])],
    // One Postgres, one Hardhat node and one deployment for the whole run (test/support/global-setup.ts).
    globalSetup: ["test/support/global-setup.ts"],
    setupFiles: ["test/support/setup-file.ts"],
    pool: "forks",
    fileParallelism: true,
    // Most files wait on the chain, the indexer and HTTP rather than compute: on 2 cores three
    // files at a time finish sooner than vitest's default of one (cores - 1). TEST_WORKERS overrides.
    maxWorkers: Number(process.env.TEST_WORKERS ?? 3),
    testTimeout: 30_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
  },
});
