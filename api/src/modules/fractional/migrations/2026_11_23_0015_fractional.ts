import { type Kysely, sql } from "kysely";

// Fractional ownership (docs/integrators/fractional.md). No oversell is the database's rule: a
// purchase reserves with one conditional UPDATE of `shares_sold`, checked against `total_shares`.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("fractional_artworks")
    .addColumn("artwork_id", "text", (c) => c.primaryKey().references("artworks.id"))
    .addColumn("token_id", "numeric(78, 0)", (c) => c.notNull().unique())
    // Who fractionalized it (the on-chain owner, or the owner an admin acted for): the proceeds' recipient.
    .addColumn("owner_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("created_by", "text", (c) => c.notNull().references("users.id"))
    .addColumn("total_shares", "integer", (c) => c.notNull().check(sql`total_shares between 1 and 1000000`))
    .addColumn("price_per_share_cents", "bigint", (c) => c.notNull().check(sql`price_per_share_cents > 0`))
    // Reserved (pending) and sold (confirmed) shares; released when a purchase fails.
    .addColumn("shares_sold", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("shares_confirmed", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('pending', 'active', 'failed')`))
    .addColumn("class_tx_hash", "text")
    .addColumn("failure_reason", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("activated_at", "timestamptz")
    .addCheckConstraint("fractional_artworks_no_oversell", sql`shares_sold between 0 and total_shares and shares_confirmed between 0 and shares_sold`)
    .execute();
  await sql`create index fractional_artworks_active_idx on fractional_artworks (created_at desc, artwork_id desc) where status = 'active'`.execute(db);

  await db.schema
    .createTable("fractional_purchases")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("artwork_id", "text", (c) => c.notNull().references("fractional_artworks.artwork_id"))
    .addColumn("token_id", "numeric(78, 0)", (c) => c.notNull())
    .addColumn("buyer_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("buyer_wallet", "text", (c) => c.notNull().check(sql`buyer_wallet ~ '^0x[0-9a-f]{40}$'`))
    .addColumn("owner_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("shares", "integer", (c) => c.notNull().check(sql`shares > 0`))
    .addColumn("price_per_share_cents", "bigint", (c) => c.notNull())
    .addColumn("total_cents", "bigint", (c) => c.notNull().check(sql`total_cents > 0`))
    .addColumn("payment_method_id", "text", (c) => c.notNull())
    .addColumn("transaction_id", "text", (c) => c.notNull().references("transactions.id"))
    // keccak256 of the id: the key ArtShares mints once.
    .addColumn("purchase_key", "text", (c) => c.notNull().unique())
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('pending', 'confirmed', 'failed')`))
    .addColumn("stage", "text", (c) => c.notNull().check(sql`stage in ('charging', 'minting', 'done')`))
    .addColumn("charge_id", "text")
    .addColumn("fee_cents", "bigint")
    .addColumn("mint_tx_hash", "text")
    .addColumn("new_ownership_bps", "integer")
    .addColumn("failure_code", "text")
    .addColumn("failure_reason", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("confirmed_at", "timestamptz")
    .addColumn("failed_at", "timestamptz")
    .execute();
  await sql`create index fractional_purchases_buyer_idx on fractional_purchases (buyer_id, created_at desc)`.execute(db);
  await sql`create index fractional_purchases_charging_idx on fractional_purchases (updated_at) where stage = 'charging'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("fractional_purchases").ifExists().execute();
  await db.schema.dropTable("fractional_artworks").ifExists().execute();
}
