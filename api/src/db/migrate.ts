import { promises as fs } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Kysely, sql } from "kysely";
import { FileMigrationProvider, Migrator } from "kysely/migration";

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");

/** Applies every pending migration; concurrent starters serialize on Kysely's migration lock. */
export async function migrateToLatest(db: Kysely<any>): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: new FileMigrationProvider({ fs, path, migrationFolder: MIGRATIONS_DIR }),
    // Named, so that Ponder's own Kysely tables (`ponder_sync.kysely_migration*`) are never taken
    // for ours when the indexer reached this database first.
    migrationTableSchema: "public",
  });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === "Error");
  if (error || failed) {
    const cause = error instanceof Error ? error : new Error(String(error));
    throw new Error(`Migration ${failed?.migrationName ?? ""} failed: ${cause.message}`, { cause });
  }
}

export async function databaseReachable(db: Kysely<any>): Promise<void> {
  await sql`select 1`.execute(db);
}
