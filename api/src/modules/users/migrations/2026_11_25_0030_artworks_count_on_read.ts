import { type Kysely, sql } from "kysely";

/**
 * `artworks_count` is counted when a profile is read (the artist's artworks not deleted), no
 * longer kept on the user's row: every creation and deletion updated that one row, so an artist's
 * uploads waited on each other's commits (200 at once: 24 s of lock waits in total, and the HTTP
 * pool's connections held by the waiting).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table users drop column artworks_count`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table users add column artworks_count integer not null default 0`.execute(db);
  await sql`
    update users u set artworks_count = c.n
    from (select artist_id, count(*)::int as n from artworks where deleted_at is null group by artist_id) c
    where u.id = c.artist_id`.execute(db);
}
