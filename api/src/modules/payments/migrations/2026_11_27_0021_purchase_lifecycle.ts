import { type Kysely, sql } from "kysely";

// Every purchase (a sale, shares, tickets) goes through one lifecycle (api/src/modules/payments/
// purchases.ts), kept on its transaction row: `stage` charging -> effecting -> done, or refunding ->
// done; the card it is charged on, when the charge was first asked for, its runs, the failure's code
// and the refund. Rows written before (royalty payouts, older purchases) have no stage.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table transactions
    add column stage text check (stage in ('charging', 'effecting', 'refunding', 'done')),
    add column payment_method_id text,
    add column description text,
    add column charge_started_at timestamptz,
    add column charge_runs integer not null default 0,
    add column failure_code text,
    add column refund_id text,
    add column refund_cause jsonb`.execute(db);
  // The sweep finds purchases whose step lost its process (a charge, a refund).
  await sql`create index transactions_stuck_idx on transactions (updated_at) where stage in ('charging', 'refunding')`.execute(db);
  // Sales are their own transactions: their reference is themselves, as every purchase's is its record.
  await sql`update transactions set reference_id = id where type = 'sale' and reference_id is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists transactions_stuck_idx`.execute(db);
  await sql`alter table transactions drop column stage, drop column payment_method_id, drop column description, drop column charge_started_at, drop column charge_runs,
    drop column failure_code, drop column refund_id, drop column refund_cause`.execute(db);
}
