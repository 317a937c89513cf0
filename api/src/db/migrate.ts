import { promises as fs } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Kysely } from "kysely";
import { FileMigrationProvider, type Migration, type MigrationProvider, Migrator } from "kysely/migration";

/** The shared tables' migrations (requests, outbox, chain); each module has its own folder. */
const SHARED_MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");

/**
 * The shared folder and the modules' (`moduleMigrations` of api/src/modules/index.ts, handed over
 * by the caller: the migrator sits below the modules): one ordered history, names being
 * date-prefixed and global.
 */
function migrationFolders(moduleFolders: readonly string[]): string[] {
  return [SHARED_MIGRATIONS_DIR, ...moduleFolders];
}

/** Migrations of several folders as one set, sorted by name by the migrator; a name used twice is refused. */
class FoldersMigrationProvider implements MigrationProvider {
  constructor(private readonly folders: readonly string[]) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const all: Record<string, Migration> = {};
    for (const folder of this.folders) {
      const found = await new FileMigrationProvider({ fs, path, migrationFolder: folder }).getMigrations();
      for (const [name, migration] of Object.entries(found)) {
        if (name in all) throw new Error(`Migration ${name} exists twice (${folder})`);
        all[name] = migration;
      }
    }
    return all;
  }
}

/** Applies every pending migration; concurrent starters serialize on Kysely's migration lock. */
export async function migrateToLatest(db: Kysely<any>, moduleFolders: readonly string[]): Promise<void> {
  await migrate(db, migrationFolders(moduleFolders), (migrator) => migrator.migrateToLatest());
}

/** Applies the pending migrations up to `name` included (a test of one migration on the data before it). */
export async function migrateUpTo(db: Kysely<any>, moduleFolders: readonly string[], name: string): Promise<void> {
  await migrate(db, migrationFolders(moduleFolders), (migrator) => migrator.migrateTo(name));
}

async function migrate(db: Kysely<any>, folders: readonly string[], run: (migrator: Migrator) => ReturnType<Migrator["migrateToLatest"]>): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: new FoldersMigrationProvider(folders),
    // Named, so that Ponder's own Kysely tables (`ponder_sync.kysely_migration*`) are never taken
    // for ours when the indexer reached this database first.
    migrationTableSchema: "public",
  });
  const { error, results } = await run(migrator);
  const failed = results?.find((r) => r.status === "Error");
  if (error || failed) {
    const cause = error instanceof Error ? error : new Error(String(error));
    throw new Error(`Migration ${failed?.migrationName ?? ""} failed: ${cause.message}`, { cause });
  }
}
