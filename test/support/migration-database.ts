/**
 * A database of its own for a migration's test: created and migrated up to `lastBefore` (the last
 * migration before the one under test) in beforeAll, dropped in afterAll. The test writes rows as
 * the code before the migration did, then runs `migrateToLatest` on it.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll } from "vitest";
import { createDb } from "../../api/src/db/connection.ts";
import { migrateUpTo } from "../../api/src/db/migrate.ts";
import { moduleMigrations } from "../../api/src/modules/index.ts";
import { dropDatabase, ensureDatabase, withDatabase } from "../../tools/stack/postgres.ts";
import { testEnvironment } from "./environment.ts";

export function useDatabaseMigratedUpTo(prefix: string, lastBefore: string): { readonly db: ReturnType<typeof createDb> } {
  const env = testEnvironment();
  const name = `${prefix}_${randomBytes(4).toString("hex")}`;
  let db: ReturnType<typeof createDb> | undefined;
  beforeAll(async () => {
    await ensureDatabase(env.serverUrl, name);
    db = createDb(withDatabase(env.serverUrl, name), 2);
    await migrateUpTo(db, moduleMigrations, lastBefore);
  });
  afterAll(async () => {
    await db?.destroy();
    await dropDatabase(env.serverUrl, name);
  });
  return {
    get db() {
      if (!db) throw new Error("The migration's database exists only inside tests (after beforeAll)");
      return db;
    },
  };
}
