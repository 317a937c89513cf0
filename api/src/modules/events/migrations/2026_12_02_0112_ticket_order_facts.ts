import { type Kysely, sql } from "kysely";

// One row per fact (issue 39): a paid ticket order's payment is its `ticket_purchase` purchase's
// (payments/purchases.service.ts): the card, the charge, the fee, a refund's stage (the purchase's `stage`
// refunding until the order is `refunded`), the failure. What the purchase rows lack is first copied
// from the orders, then the copies go (`charge_started_at` was never written: the purchase has its
// own; the transaction's times are its own, by its checks). An order keeps its seats, price,
// discount, status and times (the seats': held, issued, released, refunded) and, for an order that
// never had a purchase, why its held seats were released.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    update transactions t set
      charge_id = coalesce(t.charge_id, o.charge_id),
      fee_cents = case when t.fee_cents = 0 and o.fee_cents is not null then o.fee_cents else t.fee_cents end,
      payment_method_id = coalesce(t.payment_method_id, o.payment_method_id),
      charge_started_at = coalesce(t.charge_started_at, o.charge_started_at),
      failure_code = case when o.status = 'failed' then coalesce(t.failure_code, o.failure_code) else t.failure_code end,
      failure_reason = case when o.status = 'failed' then coalesce(t.failure_reason, o.failure_reason) else t.failure_reason end
    from ticket_orders o
    where o.transaction_id = t.id`.execute(db);
  await sql`update ticket_orders set failure_reason = null where transaction_id is not null and failure_reason is not null`.execute(db);
  await sql`alter table ticket_orders
    drop column refund_stage, drop column charge_started_at, drop column charge_id, drop column fee_cents, drop column failure_code, drop column payment_method_id`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table ticket_orders
    add column refund_stage text check (refund_stage in ('refunding', 'refunded')), add column charge_started_at timestamptz, add column charge_id text,
    add column fee_cents bigint, add column failure_code text, add column payment_method_id text`.execute(db);
  await sql`
    update ticket_orders o set
      payment_method_id = t.payment_method_id,
      charge_id = case when o.status in ('confirmed', 'refunded') or (o.status = 'failed' and t.stage = 'refunding') or t.refund_id is not null then t.charge_id end,
      fee_cents = case when o.status in ('confirmed', 'refunded') then t.fee_cents end,
      refund_stage = case when o.status = 'refunded' then 'refunded' when o.status = 'confirmed' and t.stage = 'refunding' then 'refunding' end,
      failure_code = case when o.status = 'failed' then t.failure_code end,
      failure_reason = case when o.status = 'failed' then t.failure_reason else o.failure_reason end
    from transactions t where t.id = o.transaction_id`.execute(db);
  await sql`update ticket_orders set failure_code = 'event_cancelled' where transaction_id is null and status = 'failed'`.execute(db);
}
