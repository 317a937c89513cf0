import { type Kysely, sql } from "kysely";

// A sale's money and its lifecycle's facts live in its `sale` transaction only (payments'
// purchases.ts writes them): the charge, the fee, the royalty, the payout, the settling transaction,
// the failure and the times. `sales` keeps what is the marketplace's own: the listing and offer,
// the token and the wallets it moves between, the order an on-chain sale filled, and where the sale
// stands as a move on the listing (`status`: the partial unique index allows one live sale per
// listing). A card sale a wallet's fill beat on-chain ends `lost_to_fill` (it was `payment_failed`
// or `settlement_failed` with the code `sold_onchain`).
//
// Nothing is lost: whatever the transaction lacks is taken from the sale before the columns go (the
// purchase lifecycle wrote both; rows older than it may hold a fact only on the sale). The times are
// the transaction's already (its check constraints tie them to its status).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`update transactions t set
      charge_id = coalesce(t.charge_id, s.charge_id),
      fee_cents = case when t.fee_cents = 0 and s.fee_cents is not null then s.fee_cents else t.fee_cents end,
      royalty_cents = case when t.royalty_cents = 0 and s.royalty_cents is not null then s.royalty_cents else t.royalty_cents end,
      payout_cents = coalesce(t.payout_cents, s.payout_cents),
      chain_tx = coalesce(t.chain_tx, s.settle_tx_hash),
      -- why it failed, once it has (a sale a fill beat before its charge keeps that as lost_to_fill below)
      failure_code = case when t.status = 'failed' then coalesce(t.failure_code, s.failure_code) else t.failure_code end,
      failure_reason = case when t.status = 'failed' then coalesce(t.failure_reason, s.failure_reason) else t.failure_reason end
    from sales s where s.id = t.id`.execute(db);
  await sql`alter table sales drop constraint sales_paid`.execute(db);
  await sql`alter table sales drop constraint sales_status_check`.execute(db);
  await sql`update sales set status = 'lost_to_fill' where failure_code = 'sold_onchain'`.execute(db);
  await sql`alter table sales add constraint sales_status_check
    check (status in ('pending_payment', 'paid', 'completed', 'payment_failed', 'settlement_failed', 'lost_to_fill', 'refunded'))`.execute(db);
  // What a card sale and an on-chain one each name (the charge itself is the transaction's).
  await sql`alter table sales add constraint sales_paid check (case payment_method
    when 'card' then payment_method_id is not null and buyer_id is not null
    else payment_method_id is null and order_hash is not null end)`.execute(db);
  await sql`alter table sales
    drop column charge_id, drop column fee_cents, drop column royalty_receiver, drop column royalty_cents,
    drop column payout_cents, drop column settle_tx_hash, drop column failure_code, drop column failure_reason,
    drop column paid_at, drop column completed_at, drop column failed_at`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table sales
    add column charge_id text, add column fee_cents bigint, add column royalty_receiver text, add column royalty_cents bigint,
    add column payout_cents bigint, add column settle_tx_hash text, add column failure_code text, add column failure_reason text,
    add column paid_at timestamptz, add column completed_at timestamptz, add column failed_at timestamptz`.execute(db);
  await sql`update sales s set
      charge_id = t.charge_id, fee_cents = case when t.charge_id is not null or s.payment_method = 'onchain' then t.fee_cents end,
      royalty_receiver = (select p.recipient_wallet from transactions p where p.parent_id = t.id and p.type = 'royalty_payout' limit 1),
      royalty_cents = case when s.status in ('completed', 'refunded') then t.royalty_cents end,
      payout_cents = t.payout_cents, settle_tx_hash = t.chain_tx,
      failure_code = case when s.status = 'lost_to_fill' then 'sold_onchain' else t.failure_code end, failure_reason = t.failure_reason,
      paid_at = case when t.charge_id is not null or s.payment_method = 'onchain' then t.updated_at end,
      completed_at = t.completed_at, failed_at = t.failed_at
    from transactions t where t.id = s.id`.execute(db);
  await sql`alter table sales drop constraint sales_paid`.execute(db);
  await sql`alter table sales drop constraint sales_status_check`.execute(db);
  await sql`update sales set status = case when charge_id is null then 'payment_failed' else 'settlement_failed' end where status = 'lost_to_fill'`.execute(db);
  await sql`alter table sales add constraint sales_status_check
    check (status in ('pending_payment', 'paid', 'completed', 'payment_failed', 'settlement_failed', 'refunded'))`.execute(db);
  await sql`alter table sales add constraint sales_paid check (case payment_method
    when 'card' then payment_method_id is not null and buyer_id is not null and (status in ('paid', 'completed', 'settlement_failed', 'refunded')) = (charge_id is not null)
    else payment_method_id is null and charge_id is null and order_hash is not null end)`.execute(db);
}
