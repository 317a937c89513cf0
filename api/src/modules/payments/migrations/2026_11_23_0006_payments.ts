import { type Kysely, sql } from "kysely";

// Saved payment methods, and the sandbox processor's own records (what Stripe would keep on its
// side: charges by idempotency key, refunds, the test cards' transient failures); see
// docs/integrators/payments.md.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("payment_methods")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("processor", "text", (c) => c.notNull())
    // The processor's reference (a test card id, a Stripe pm_…): never a card number.
    .addColumn("processor_ref", "text", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull().defaultTo("card").check(sql`type = 'card'`))
    .addColumn("card_brand", "text", (c) => c.notNull())
    .addColumn("card_last4", "text", (c) => c.notNull().check(sql`card_last4 ~ '^[0-9]{4}$'`))
    .addColumn("card_exp_month", "integer", (c) => c.notNull().check(sql`card_exp_month between 1 and 12`))
    .addColumn("card_exp_year", "integer", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    // Detached methods stay for the record of what was charged with them; nobody sees or uses them.
    .addColumn("detached_at", "timestamptz")
    .execute();
  await sql`create index payment_methods_user_idx on payment_methods (user_id, created_at desc, id desc) where detached_at is null`.execute(db);

  await db.schema
    .createTable("sandbox_charges")
    .addColumn("id", "text", (c) => c.primaryKey())
    // Stripe's Idempotency-Key: the same key is the same charge.
    .addColumn("idempotency_key", "text", (c) => c.notNull().unique())
    .addColumn("amount_cents", "bigint", (c) => c.notNull().check(sql`amount_cents > 0`))
    .addColumn("currency", "text", (c) => c.notNull())
    .addColumn("payment_method", "text", (c) => c.notNull())
    .addColumn("application_fee_cents", "bigint", (c) => c.notNull().defaultTo(0).check(sql`application_fee_cents >= 0`))
    .addColumn("description", "text")
    .addColumn("metadata", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('succeeded', 'failed')`))
    .addColumn("failure_code", "text")
    .addColumn("failure_message", "text")
    .addColumn("amount_refunded_cents", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint("sandbox_charges_refunded", sql`amount_refunded_cents between 0 and amount_cents`)
    .addCheckConstraint("sandbox_charges_failure", sql`(status = 'failed') = (failure_code is not null)`)
    .execute();

  await db.schema
    .createTable("sandbox_refunds")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("idempotency_key", "text", (c) => c.notNull().unique())
    .addColumn("charge_id", "text", (c) => c.notNull().references("sandbox_charges.id"))
    .addColumn("amount_cents", "bigint", (c) => c.notNull().check(sql`amount_cents > 0`))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex("sandbox_refunds_charge_idx").on("sandbox_refunds").column("charge_id").execute();

  // Transient failures already served per charge key (the cards that fail N times, then succeed).
  await db.schema
    .createTable("sandbox_processing_errors")
    .addColumn("idempotency_key", "text", (c) => c.primaryKey())
    .addColumn("failures", "integer", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("sandbox_processing_errors").ifExists().execute();
  await db.schema.dropTable("sandbox_refunds").ifExists().execute();
  await db.schema.dropTable("sandbox_charges").ifExists().execute();
  await db.schema.dropTable("payment_methods").ifExists().execute();
}
