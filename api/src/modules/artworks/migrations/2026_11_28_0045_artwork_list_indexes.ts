import { type Kysely, sql } from "kysely";

// The catalogue's page is found in its date index alone: the columns its filters other than text
// read (price, status, for_sale, artist) ride in the index's entries, so a deep or filtered page
// skips entries instead of reading rows (repository `search`). A price range is counted from an
// index of its own.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`drop index artworks_listing_idx`.execute(db);
  await sql`create index artworks_listing_idx on artworks (created_at desc, id desc) include (price_cents, status, for_sale, artist_id) where deleted_at is null`.execute(db);
  await sql`create index artworks_price_idx on artworks (price_cents) where deleted_at is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index artworks_price_idx`.execute(db);
  await sql`drop index artworks_listing_idx`.execute(db);
  await sql`create index artworks_listing_idx on artworks (created_at desc, id desc) where deleted_at is null`.execute(db);
}
