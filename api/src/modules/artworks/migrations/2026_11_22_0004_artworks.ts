import { type Kysely, sql } from "kysely";

// Artworks and their off-chain provenance. The certificate itself lives on-chain (ArtCertificate)
// and is read through the indexer's views; these rows keep what the API needs to build the
// certificate document, drive the certification pipeline and answer quickly.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("artworks")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("artist_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("title", "text", (c) => c.notNull())
    .addColumn("year", "integer", (c) => c.notNull().check(sql`year between 1000 and 9999`))
    .addColumn("medium", "text", (c) => c.notNull())
    .addColumn("dimensions", "jsonb", (c) => c.notNull())
    .addColumn("description", "text")
    .addColumn("price_cents", "bigint", (c) => c.check(sql`price_cents between 0 and 100000000000`))
    .addColumn("for_sale", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("status", "text", (c) =>
      c.notNull().check(sql`status in ('pending_certification', 'certified', 'certification_failed')`),
    )
    // The image: given as a URL (fetched by the pipeline) or uploaded; stored under image_storage_key.
    .addColumn("image_source_url", "text")
    .addColumn("image_storage_key", "text")
    .addColumn("image_sha256", "text")
    .addColumn("image_content_type", "text")
    .addColumn("image_bytes", "integer")
    // Set from the indexed chain event, in the transaction that marks the artwork certified.
    .addColumn("certificate_hash", "text")
    .addColumn("token_id", "numeric(78, 0)")
    .addColumn("certified_at", "timestamptz")
    .addColumn("certified_by", "text", (c) => c.references("users.id"))
    // The pipeline's own state.
    .addColumn("certification_tx_hash", "text")
    .addColumn("certification_requested_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("certification_confirmed_at", "timestamptz")
    .addColumn("certification_attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("certification_lease_until", "timestamptz")
    .addColumn("certification_error", "text")
    .addColumn("failed_at", "timestamptz")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("deleted_at", "timestamptz")
    .addCheckConstraint(
      "artworks_certified_facts",
      sql`status <> 'certified' or (certificate_hash is not null and token_id is not null and certified_at is not null)`,
    )
    .addCheckConstraint("artworks_image_source", sql`image_source_url is not null or image_storage_key is not null`)
    .execute();
  await sql`create unique index artworks_token_id_key on artworks (token_id) where token_id is not null`.execute(db);
  await sql`create index artworks_listing_idx on artworks (created_at desc, id desc) where deleted_at is null`.execute(db);
  await sql`create index artworks_artist_idx on artworks (artist_id, created_at desc) where deleted_at is null`.execute(db);
  // The pipeline scans the (few) artworks not yet certified; the estimate reads the latest certifications.
  await sql`create index artworks_uncertified_idx on artworks (certification_lease_until) where status <> 'certified'`.execute(db);
  await sql`create index artworks_confirmed_idx on artworks (certification_confirmed_at desc) where certification_confirmed_at is not null`.execute(db);

  await db.schema
    .createTable("artwork_provenance")
    .addColumn("id", "bigserial", (c) => c.primaryKey())
    .addColumn("artwork_id", "text", (c) => c.notNull().references("artworks.id"))
    .addColumn("event", "text", (c) => c.notNull())
    .addColumn("actor_id", "text", (c) => c.references("users.id"))
    .addColumn("tx_hash", "text")
    // Facts of the event beyond who and which transaction (an override's reason and inspector).
    .addColumn("details", "jsonb")
    .addColumn("occurred_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint("artwork_provenance_actor_or_tx", sql`actor_id is not null or tx_hash is not null`)
    .execute();
  await db.schema.createIndex("artwork_provenance_artwork_idx").on("artwork_provenance").columns(["artwork_id", "occurred_at", "id"]).execute();
  // Certified once: the confirmation may run in several instances at once.
  await sql`create unique index artwork_provenance_certified_key on artwork_provenance (artwork_id) where event = 'certified'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("artwork_provenance").ifExists().execute();
  await db.schema.dropTable("artworks").ifExists().execute();
}
