import { type Kysely, sql } from "kysely";

/**
 * Each artist's artworks not deleted, counted when read (ArtworksViews in artworks.tables.ts): a
 * profile's `artworks_count`. A reader's `where artist_id = ...` reaches the grouped rows' scan
 * (artworks_artist_idx), so one artist's count never counts the others'.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create view artworks_per_artist as
    select artist_id, count(*)::int as artworks_count from artworks where deleted_at is null group by artist_id`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop view artworks_per_artist`.execute(db);
}
