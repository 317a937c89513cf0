import { type Kysely, sql } from "kysely";
import { publicDataChangedTriggers } from "../../../db/migrations/2026_11_26_0001_public_data_changed.ts";

// One pipeline per image (docs/decisions.md#images): the original as uploaded (its bytes the
// certificate's image_sha256) and, for everyone else, derivatives with no metadata. The artwork
// keeps what the pipeline learnt of its original (its size as displayed, the metadata blocks it
// carries, when it was processed, or why it could not be); artwork_images holds one row per
// derivative. Artworks stored before this migration have image_processed_at null: the
// artwork_images_backfill job makes their derivatives (and an image answer makes one on demand).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("artworks")
    .addColumn("image_width", "integer")
    .addColumn("image_height", "integer")
    .addColumn("image_metadata", sql`text[]`)
    .addColumn("image_processed_at", "timestamptz")
    .addColumn("image_refusal", "text")
    .execute();
  await db.schema
    .createTable("artwork_images")
    .addColumn("artwork_id", "text", (c) => c.notNull().references("artworks.id"))
    .addColumn("name", "text", (c) => c.notNull().check(sql`name in ('thumbnail', 'display')`))
    .addColumn("storage_key", "text", (c) => c.notNull())
    .addColumn("content_type", "text", (c) => c.notNull())
    .addColumn("width", "integer", (c) => c.notNull().check(sql`width > 0`))
    .addColumn("height", "integer", (c) => c.notNull().check(sql`height > 0`))
    .addColumn("bytes", "integer", (c) => c.notNull())
    .addColumn("sha256", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("artwork_images_pkey", ["artwork_id", "name"])
    .execute();
  // The detail's `images`, a public read.
  for (const trigger of publicDataChangedTriggers("artwork_images")) await trigger.execute(db);
  // The backfill's work list: stored images not yet through the pipeline.
  await sql`create index artworks_images_unprocessed on artworks (id) where image_storage_key is not null and image_processed_at is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index artworks_images_unprocessed`.execute(db);
  await db.schema.dropTable("artwork_images").execute();
  await db.schema
    .alterTable("artworks")
    .dropColumn("image_width")
    .dropColumn("image_height")
    .dropColumn("image_metadata")
    .dropColumn("image_processed_at")
    .dropColumn("image_refusal")
    .execute();
}
