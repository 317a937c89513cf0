import { type Kysely, sql } from "kysely";

/**
 * Withdrawals: a user's asset moved from their custodial wallet to a wallet they linked, through one
 * chain operation each (`withdraw:<id>`). One pending withdrawal of a certificate at a time: the
 * partial unique index decides a race the artwork's row lock has not (two requests at once).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("withdrawals")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("artwork_id", "text", (c) => c.notNull().references("artworks.id"))
    .addColumn("asset", "text", (c) => c.notNull().check(sql`asset in ('certificate')`))
    .addColumn("token_id", "numeric(78, 0)", (c) => c.notNull())
    .addColumn("quantity", "integer", (c) => c.notNull().check(sql`quantity > 0`))
    .addColumn("from_wallet", "text", (c) => c.notNull().check(sql`from_wallet ~ '^0x[0-9a-f]{40}$'`))
    .addColumn("to_wallet", "text", (c) => c.notNull().check(sql`to_wallet ~ '^0x[0-9a-f]{40}$'`))
    .addColumn("status", "text", (c) => c.notNull().defaultTo("pending").check(sql`status in ('pending', 'completed', 'failed')`))
    .addColumn("tx_hash", "text")
    .addColumn("failure_reason", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("completed_at", "timestamptz")
    .execute();
  await db.schema.createIndex("withdrawals_user_idx").on("withdrawals").columns(["user_id", "created_at"]).execute();
  await sql`create unique index withdrawals_pending_certificate_key on withdrawals (artwork_id) where asset = 'certificate' and status = 'pending'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("withdrawals").execute();
}
