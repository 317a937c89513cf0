import { type Kysely, sql } from "kysely";

// One row per fact (issue 39): a withdrawal is settled in the transaction that confirms or fails its
// chain operation (`withdraw:<id>`), so when it completed is the operation's `confirmed_at` and why
// it failed the operation's `last_error`; `withdrawals.completed_at` and `failure_reason` were copies.
// The withdrawal keeps its state (`status`: pending until its operation settles it), which its lists
// and the pending withdrawals' checks read. An operation gets what only its withdrawal kept (its
// time and reason win where the two differ, so that every answer stays), a settled withdrawal
// recorded without an operation gets one; then the copies go.

const KEY = sql`'withdraw:' || w.id`;

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    insert into chain_operations (key, kind, payload, status, last_error, confirmed_from, confirmed_at, indexed_at, created_at)
    select ${KEY}, case w.asset when 'certificate' then 'withdrawal' when 'shares' then 'withdrawal_shares' else 'withdrawal_payment_token' end,
           jsonb_build_object('withdrawal_id', w.id, 'token_id', w.token_id::text, 'from', w.from_wallet, 'to', w.to_wallet),
           case w.status when 'completed' then 'confirmed' else 'failed' end, w.failure_reason,
           case when w.status = 'completed' then (case w.asset when 'payment_token' then 'chain' else 'indexer' end) end,
           w.completed_at, w.completed_at, w.created_at
    from withdrawals w
    where w.status in ('completed', 'failed') and not exists (select 1 from chain_operations o where o.key = ${KEY})`.execute(db);
  await sql`
    update chain_operations o set confirmed_at = w.completed_at
    from withdrawals w
    where o.key = ${KEY} and w.status = 'completed' and w.completed_at is not null and o.confirmed_at is distinct from w.completed_at`.execute(db);
  await sql`
    update chain_operations o set last_error = w.failure_reason
    from withdrawals w
    where o.key = ${KEY} and w.status = 'failed' and w.failure_reason is not null and o.last_error is distinct from w.failure_reason`.execute(db);
  await sql`alter table withdrawals drop column completed_at, drop column failure_reason`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table withdrawals add column completed_at timestamptz, add column failure_reason text`.execute(db);
  await sql`
    update withdrawals w set
      completed_at = case when w.status = 'completed' then o.confirmed_at end,
      failure_reason = case when w.status = 'failed' then o.last_error end
    from chain_operations o where o.key = ${KEY}`.execute(db);
}
