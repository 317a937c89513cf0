import { type Kysely, sql } from "kysely";

// `for_sale` and `price_usd` are the holder's ask (docs/decisions.md#for-sale): they now say whose,
// `for_sale_wallet`, the wallet that held the certificate when the ask was made (null: made before
// the certificate was minted, the artist's). A move of the certificate out of that wallet ends the
// ask (the artworks_asks projection, which reads every indexed transfer once from the chain's start:
// artworks sold or moved before this migration lose their stale ask then).
//
// The ask's entries in the provenance were named like a marketplace listing's (`listed`, `delisted`,
// with no listing): they become `for_sale` and `not_for_sale`, so a listed work shows `listed` once.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("artworks").addColumn("for_sale_wallet", "text").execute();
  await sql`
    update artwork_provenance set event = case event when 'listed' then 'for_sale' else 'not_for_sale' end
    where event in ('listed', 'delisted') and (details is null or not details ? 'listing_id')`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`update artwork_provenance set event = case event when 'for_sale' then 'listed' else 'delisted' end where event in ('for_sale', 'not_for_sale')`.execute(db);
  await db.schema.alterTable("artworks").dropColumn("for_sale_wallet").execute();
}
