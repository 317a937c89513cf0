import { type Kysely, sql } from "kysely";

// Marketplace listings (docs/integrators/marketplace.md). One open listing per artwork is the
// database's rule: a partial unique index, so two concurrent listings of one artwork cannot both
// commit.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("listings")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("artwork_id", "text", (c) => c.notNull().references("artworks.id"))
    .addColumn("seller_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("seller_wallet", "text", (c) => c.notNull().check(sql`seller_wallet ~ '^0x[0-9a-f]{40}$'`))
    .addColumn("token_id", "numeric(78, 0)", (c) => c.notNull())
    .addColumn("price_cents", "bigint", (c) => c.notNull().check(sql`price_cents > 0 and price_cents <= 100000000000`))
    .addColumn("currency", "text", (c) => c.notNull().defaultTo("USD").check(sql`currency = 'USD'`))
    .addColumn("accepts_offers", "boolean", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('active', 'pending_payment', 'sold', 'cancelled')`))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("cancelled_at", "timestamptz")
    .addColumn("cancelled_by", "text", (c) => c.references("users.id"))
    .addCheckConstraint("listings_cancelled", sql`(status = 'cancelled') = (cancelled_at is not null)`)
    .execute();
  await sql`create unique index listings_open_artwork_key on listings (artwork_id) where status in ('active', 'pending_payment')`.execute(db);
  await sql`create index listings_status_created_idx on listings (status, created_at desc, id desc)`.execute(db);
  await sql`create index listings_status_price_idx on listings (status, price_cents, id)`.execute(db);
  await db.schema.createIndex("listings_seller_idx").on("listings").columns(["seller_id", "created_at"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("listings").ifExists().execute();
}
