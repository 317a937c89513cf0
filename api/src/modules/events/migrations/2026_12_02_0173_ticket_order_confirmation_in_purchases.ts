import { type Kysely, sql } from "kysely";

// One row per fact (issue 39): a paid ticket order is confirmed when its `ticket_purchase` purchase
// completes, and refunded when it is refunded, each in the same transaction (the same now()), so its
// `confirmed_at` and `refunded_at` were copies of the purchase's `completed_at` and `refunded_at`.
// They now hold only the times of orders without a purchase (free tickets, orders a discount paid in
// full), by checks. The purchase has no time to receive: its own checks (`transactions_completed`,
// `transactions_refunded`) give a completed or refunded purchase its time, so an order whose copy
// differs from its purchase (confirmed while the purchase never completed, above all) was not written
// by this code and is refused rather than guessed. `failed_at` stays: it is when the seats were
// released, the order's own fact (a cancellation between the charge and the confirmation releases
// them at once, while the purchase fails only when its charge has come back, in a later transaction).
export async function up(db: Kysely<any>): Promise<void> {
  const { rows: differing } = await sql<{ id: string; status: string; transaction_id: string; purchase_status: string; confirmed_at: Date | null; completed_at: Date | null; refunded_at: Date | null; purchase_refunded_at: Date | null }>`
    select o.id, o.status, o.transaction_id, t.status as purchase_status, o.confirmed_at, t.completed_at, o.refunded_at, t.refunded_at as purchase_refunded_at
    from ticket_orders o join transactions t on t.id = o.transaction_id
    where o.confirmed_at is distinct from t.completed_at or o.refunded_at is distinct from t.refunded_at
    order by o.id`.execute(db);
  if (differing.length > 0) {
    const at = (d: Date | null) => d?.toISOString() ?? "never";
    const list = differing
      .map((o) => `${o.id} (${o.status}, confirmed ${at(o.confirmed_at)}, refunded ${at(o.refunded_at)}; its purchase ${o.transaction_id} ${o.purchase_status}, completed ${at(o.completed_at)}, refunded ${at(o.purchase_refunded_at)})`)
      .join("; ");
    throw new Error(`${differing.length} paid ticket order(s) were confirmed or refunded at other times than their purchase (or while it never completed): ${list}. Settle each order with its purchase, then migrate again`);
  }
  await sql`update ticket_orders set confirmed_at = null, refunded_at = null where transaction_id is not null and (confirmed_at is not null or refunded_at is not null)`.execute(db);
  await sql`alter table ticket_orders
    add constraint ticket_orders_confirmed_without_purchase check (transaction_id is null or confirmed_at is null),
    add constraint ticket_orders_refunded_without_purchase check (transaction_id is null or refunded_at is null)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table ticket_orders drop constraint ticket_orders_confirmed_without_purchase, drop constraint ticket_orders_refunded_without_purchase`.execute(db);
  await sql`update ticket_orders o set confirmed_at = t.completed_at, refunded_at = t.refunded_at from transactions t where t.id = o.transaction_id`.execute(db);
}
