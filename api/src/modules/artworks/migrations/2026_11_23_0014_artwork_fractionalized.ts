import type { Kysely } from "kysely";

// When the artwork was fractionalized (its shares are sold instead of the whole work): a listing of
// the whole work and a fractionalization each lock the artwork row and check the other.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("artworks").addColumn("fractionalized_at", "timestamptz").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("artworks").dropColumn("fractionalized_at").execute();
}
