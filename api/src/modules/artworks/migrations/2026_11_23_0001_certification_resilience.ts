import { type Kysely, sql } from "kysely";

// Certification that waits on no single process (docs/contributors/architecture.md#certification):
// image downloads leased per artwork (an artist's downloads in flight are counted against a cap),
// and certifications confirmed from the chain while the indexer lags, reconciled once it catches
// up.
export async function up(db: Kysely<any>): Promise<void> {
  // Set while a download of the artwork's image_url runs (until its deadline): the artist's in-flight count.
  await db.schema.alterTable("artworks").addColumn("image_fetch_lease_until", "timestamptz").execute();
  await sql`create index artworks_image_fetch_idx on artworks (artist_id) where image_fetch_lease_until is not null`.execute(db);
  // When the indexer's view showed the certificate; null while one confirmed from the chain awaits it.
  await db.schema.alterTable("artworks").addColumn("certification_indexed_at", "timestamptz").execute();
  await sql`update artworks set certification_indexed_at = certification_confirmed_at where status = 'certified'`.execute(db);
  await sql`create index artworks_unindexed_idx on artworks (id) where status = 'certified' and certification_indexed_at is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists artworks_unindexed_idx`.execute(db);
  await sql`drop index if exists artworks_image_fetch_idx`.execute(db);
  await db.schema.alterTable("artworks").dropColumn("certification_indexed_at").dropColumn("image_fetch_lease_until").execute();
}
