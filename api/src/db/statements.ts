import { AsyncLocalStorage } from "node:async_hooks";
import type { LogEvent } from "kysely";

/** The statements sent through the application's Kysely instances within `recordStatements`. */
const recording = new AsyncLocalStorage<string[]>();

/**
 * Runs `fn` and returns, beside its value, the text of every statement it sent through the
 * application's Kysely instances (createDbHandle), in order: what a public read showed, for the
 * public read cache to know which changes make it stale (PublicReadCache, ReadDependencies).
 */
export async function recordStatements<T>(fn: () => Promise<T>): Promise<{ value: T; statements: string[] }> {
  const statements: string[] = [];
  const value = await recording.run(statements, fn);
  return { value, statements };
}

/** Kysely's `log` hook of the application's instances: records the statement when a recording is under way. */
export function observeStatement(event: LogEvent): void {
  recording.getStore()?.push(event.query.sql);
}
