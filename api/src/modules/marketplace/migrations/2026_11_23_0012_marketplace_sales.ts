import { type Kysely, sql } from "kysely";

// Offers, sales and disputes (docs/integrators/marketplace.md). The database holds the rules that
// races test: one pending offer per buyer and listing, one live sale per listing, one open dispute
// per sale.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("offers")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("listing_id", "text", (c) => c.notNull().references("listings.id"))
    .addColumn("buyer_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("seller_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("amount_cents", "bigint", (c) => c.notNull().check(sql`amount_cents > 0 and amount_cents <= 100000000000`))
    .addColumn("message", "text")
    .addColumn("payment_method_id", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) =>
      c.notNull().check(sql`status in ('pending', 'accepted', 'completed', 'payment_failed', 'rejected', 'withdrawn', 'expired')`),
    )
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    // The sale an accepted offer started (a transactions id).
    .addColumn("transaction_id", "text")
    .addColumn("decided_by", "text", (c) => c.references("users.id"))
    .addColumn("decided_at", "timestamptz")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint("offers_decided", sql`(status = 'pending') = (decided_at is null)`)
    .execute();
  await sql`create unique index offers_pending_buyer_key on offers (listing_id, buyer_id) where status = 'pending'`.execute(db);
  await sql`create index offers_buyer_idx on offers (buyer_id, created_at desc, id desc)`.execute(db);
  await sql`create index offers_seller_idx on offers (seller_id, created_at desc, id desc)`.execute(db);
  await sql`create index offers_listing_pending_idx on offers (listing_id) where status = 'pending'`.execute(db);
  await sql`create index offers_pending_expiry_idx on offers (expires_at) where status = 'pending'`.execute(db);

  await db.schema
    .createTable("sales")
    // The id of the sale's `sale` transaction: one row per sale, its settlement state.
    .addColumn("id", "text", (c) => c.primaryKey().references("transactions.id"))
    .addColumn("listing_id", "text", (c) => c.notNull().references("listings.id"))
    .addColumn("offer_id", "text", (c) => c.references("offers.id"))
    .addColumn("artwork_id", "text", (c) => c.notNull().references("artworks.id"))
    .addColumn("token_id", "numeric(78, 0)", (c) => c.notNull())
    .addColumn("buyer_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("seller_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("buyer_wallet", "text", (c) => c.notNull().check(sql`buyer_wallet ~ '^0x[0-9a-f]{40}$'`))
    .addColumn("seller_wallet", "text", (c) => c.notNull().check(sql`seller_wallet ~ '^0x[0-9a-f]{40}$'`))
    .addColumn("price_cents", "bigint", (c) => c.notNull().check(sql`price_cents > 0`))
    .addColumn("payment_method_id", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) =>
      c.notNull().check(sql`status in ('pending_payment', 'paid', 'completed', 'payment_failed', 'settlement_failed', 'refunded')`),
    )
    .addColumn("charge_id", "text")
    .addColumn("fee_cents", "bigint")
    .addColumn("royalty_receiver", "text")
    .addColumn("royalty_cents", "bigint")
    .addColumn("payout_cents", "bigint")
    .addColumn("settle_tx_hash", "text")
    .addColumn("failure_code", "text")
    .addColumn("failure_reason", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("paid_at", "timestamptz")
    .addColumn("completed_at", "timestamptz")
    .addColumn("failed_at", "timestamptz")
    .addCheckConstraint("sales_paid", sql`(status in ('paid', 'completed', 'settlement_failed', 'refunded')) = (charge_id is not null)`)
    .execute();
  // A listing sells once: a second live sale of it cannot commit, whatever raced.
  await sql`create unique index sales_live_listing_key on sales (listing_id) where status in ('pending_payment', 'paid', 'completed')`.execute(db);
  await sql`create index sales_status_idx on sales (status, updated_at) where status in ('pending_payment', 'paid')`.execute(db);

  await db.schema
    .createTable("disputes")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("transaction_id", "text", (c) => c.notNull().references("sales.id"))
    .addColumn("buyer_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("seller_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("reason", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('open', 'resolved')`))
    .addColumn("resolution", "text", (c) => c.check(sql`resolution in ('refund', 'reject')`))
    .addColumn("resolution_note", "text")
    .addColumn("resolved_by", "text", (c) => c.references("users.id"))
    .addColumn("refund_status", "text", (c) => c.check(sql`refund_status in ('pending', 'refunded')`))
    .addColumn("refund_id", "text")
    .addColumn("certificate_return", "text", (c) => c.check(sql`certificate_return in ('pending', 'returned', 'not_possible')`))
    .addColumn("return_tx_hash", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("resolved_at", "timestamptz")
    .addCheckConstraint("disputes_resolved", sql`(status = 'resolved') = (resolution is not null and resolved_at is not null)`)
    .execute();
  await sql`create unique index disputes_open_transaction_key on disputes (transaction_id) where status = 'open'`.execute(db);
  await sql`create index disputes_status_idx on disputes (status, created_at desc, id desc)`.execute(db);
  await sql`create index disputes_buyer_idx on disputes (buyer_id, created_at desc)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("disputes").ifExists().execute();
  await db.schema.dropTable("sales").ifExists().execute();
  await db.schema.dropTable("offers").ifExists().execute();
}
