import { type Kysely, sql } from "kysely";

// `medium` and `q` filter by a word anywhere in the text (ILIKE '%word%'), which no btree serves:
// without these indexes every such page read the whole catalogue. Trigram indexes (pg_trgm, a
// trusted extension shipped with Postgres) find the rows that hold the word's three-letter pieces,
// then the filter checks them; `q`'s three columns each have one, so its OR is a union of bitmaps.
// Words under three letters still read every row (docs/operators/production.md#the-database).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create extension if not exists pg_trgm`.execute(db);
  for (const column of ["medium", "title", "description"]) {
    await sql`create index ${sql.raw(`artworks_${column}_trgm_idx`)} on artworks using gin (${sql.ref(column)} gin_trgm_ops) where deleted_at is null`.execute(db);
  }
}

// The extension stays: other schemas of the database may use it.
export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ["medium", "title", "description"]) await sql`drop index ${sql.raw(`artworks_${column}_trgm_idx`)}`.execute(db);
}
