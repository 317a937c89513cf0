import { type Kysely, sql } from "kysely";

/**
 * What other modules show and filter of an artwork beside their own records (ArtworksViews in
 * artworks.tables.ts): a listing's title, medium and artist, a share class's title. A simple view:
 * the planner folds it into the reader's join, on `artworks`' own indexes.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create view artwork_summaries as select id, artist_id, title, medium, deleted_at from artworks`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop view artwork_summaries`.execute(db);
}
