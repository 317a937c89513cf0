import { type Kysely, sql } from "kysely";

// The money records every paying feature writes (docs/integrators/payments.md): a `sale` for buyer
// and seller, the artist's `royalty_payout`, later `share_purchase` and `ticket_purchase`. Amounts
// are cents.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("transactions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("type", "text", (c) => c.notNull().check(sql`type in ('sale', 'royalty_payout', 'share_purchase', 'ticket_purchase')`))
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('pending', 'completed', 'failed', 'refunded')`))
    .addColumn("artwork_id", "text", (c) => c.references("artworks.id"))
    .addColumn("amount_cents", "bigint", (c) => c.notNull().check(sql`amount_cents >= 0`))
    .addColumn("currency", "text", (c) => c.notNull().defaultTo("USD").check(sql`currency = 'USD'`))
    .addColumn("buyer_id", "text", (c) => c.references("users.id"))
    .addColumn("seller_id", "text", (c) => c.references("users.id"))
    // Who receives this money: the seller of a sale, the artist of a royalty payout.
    .addColumn("recipient_id", "text", (c) => c.references("users.id"))
    .addColumn("recipient_wallet", "text")
    // A royalty payout's sale.
    .addColumn("parent_id", "text", (c) => c.references("transactions.id"))
    .addColumn("fee_cents", "bigint", (c) => c.notNull().defaultTo(0).check(sql`fee_cents >= 0`))
    .addColumn("royalty_cents", "bigint", (c) => c.notNull().defaultTo(0).check(sql`royalty_cents >= 0`))
    // What the recipient gets: amount - fee - royalty for a sale (the disbursement), known once it completes.
    .addColumn("payout_cents", "bigint", (c) => c.check(sql`payout_cents >= 0`))
    .addColumn("charge_id", "text")
    .addColumn("chain_tx", "text")
    .addColumn("failure_reason", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("completed_at", "timestamptz")
    .addColumn("failed_at", "timestamptz")
    .addColumn("refunded_at", "timestamptz")
    .addCheckConstraint("transactions_completed", sql`(status in ('completed', 'refunded')) = (completed_at is not null)`)
    .addCheckConstraint("transactions_failed", sql`(status = 'failed') = (failed_at is not null)`)
    .addCheckConstraint("transactions_refunded", sql`(status = 'refunded') = (refunded_at is not null)`)
    .execute();
  await sql`create index transactions_buyer_idx on transactions (buyer_id, created_at desc, id desc)`.execute(db);
  await sql`create index transactions_seller_idx on transactions (seller_id, created_at desc, id desc)`.execute(db);
  await sql`create index transactions_recipient_idx on transactions (recipient_id, created_at desc, id desc)`.execute(db);
  await sql`create index transactions_parent_idx on transactions (parent_id) where parent_id is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("transactions").ifExists().execute();
}
