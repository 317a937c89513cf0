/**
 * A paid ticket order's confirmation and refund times stored once, on its purchase (migration
 * 2026_12_02_0173), on a real Postgres holding orders as the code before it wrote them: paid orders
 * confirmed, being refunded, refunded, declined, and failed by their event's cancellation after the
 * charge (their seats released before the purchase failed); orders without a purchase confirmed
 * (free, or paid by a discount), refunded, failed and expired. Orders whose times no purchase holds
 * are refused until they are settled. After it every TicketOrder answers as it did, and `down`
 * gives back the rows as they were.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { migrateToLatest } from "../../api/src/db/migrate.ts";
import { isoOrNull } from "../../api/src/lib/time.ts";
import type { Ticket, TicketOrder } from "../../api/src/modules/events/events.tables.ts";
import { down, up } from "../../api/src/modules/events/migrations/2026_12_02_0173_ticket_order_confirmation_in_purchases.ts";
import { toOrder } from "../../api/src/modules/events/ticket-views.ts";
import { moduleMigrations } from "../../api/src/modules/index.ts";
import type { Purchase } from "../../api/src/modules/payments/purchases.service.ts";
import { useDatabaseMigratedUpTo } from "../support/migration-database.ts";

const database = useDatabaseMigratedUpTo("ticket_confirmation_mig", "2026_12_02_0171_chain_tx_in_operations");
const T1 = new Date("2026-11-30T10:00:00.123Z");
const T2 = new Date("2026-11-30T11:00:00Z");
const T3 = new Date("2026-11-30T12:00:00Z");

interface Purchased {
  status: "pending" | "completed" | "failed" | "refunded";
  stage: "charging" | "effecting" | "refunding" | "done";
  completedAt?: Date;
  failedAt?: Date;
  refundedAt?: Date;
  failure?: string;
}

/** A purchase as the code before the migration wrote it (its times its own, by its checks). */
function purchase(id: string, p: Purchased) {
  const charged = p.stage !== "charging" && p.failure !== "Your card was declined.";
  return sql`insert into transactions (id, type, status, stage, amount_cents, fee_cents, buyer_id, reference_id, payment_method_id, charge_id, refund_id, failure_code, failure_reason, completed_at, failed_at, refunded_at, created_at)
    values (${`txn_${id}`}, 'ticket_purchase', ${p.status}, ${p.stage}, 2500, 63, 'usr_buyer', ${id}, 'pm_card_visa', ${charged ? `ch_${id}` : null}, ${p.refundedAt || (p.failedAt && charged) ? `re_${id}` : null},
            ${p.failure ? "failed" : null}, ${p.failure ?? null}, ${p.completedAt ?? null}, ${p.failedAt ?? null}, ${p.refundedAt ?? null}, ${T1})`.execute(database.db);
}

/** An order as the code before the migration wrote it: its own times, a paid one's copied from its purchase in the same transaction. */
function order(id: string, status: string, o: { paid?: boolean; total?: number; discount?: number; confirmedAt?: Date; failedAt?: Date; refundedAt?: Date; failure?: string; dueAt?: Date } = {}) {
  const total = o.total ?? 2500;
  return sql`insert into ticket_orders (id, event_id, buyer_id, kind, quantity, unit_price_cents, total_cents, discount_cents, payment_due_at, transaction_id, status, failure_reason, created_at, confirmed_at, failed_at, refunded_at)
    values (${id}, 'evt_1', 'usr_buyer', 'in_person', 1, ${total}, ${total}, ${o.discount ?? 0}, ${o.dueAt ?? null}, ${o.paid === false ? null : `txn_${id}`}, ${status}, ${o.failure ?? null},
            ${T1}, ${o.confirmedAt ?? null}, ${o.failedAt ?? null}, ${o.refundedAt ?? null})`.execute(database.db);
}

function ticket(orderId: string, status: string) {
  return sql`insert into tickets (id, order_id, event_id, holder_id, kind, code, status, created_at)
    values (${`tkt_${orderId}`}, ${orderId}, 'evt_1', 'usr_buyer', 'in_person', ${randomBytes(13).toString("hex")}, ${status}, ${T1})`.execute(database.db);
}

/** Each order with its tickets and purchase, as getOrder reads them. */
async function stored() {
  const { db } = database;
  const orders = (await sql<TicketOrder>`select * from ticket_orders order by id`.execute(db)).rows;
  const tickets = (await sql<Ticket>`select * from tickets order by id`.execute(db)).rows;
  const purchases = new Map((await sql<Purchase>`select * from transactions`.execute(db)).rows.map((t) => [t.id, t]));
  return orders.map((row) => ({ row, tickets: tickets.filter((t) => t.order_id === row.id), paid: row.transaction_id ? purchases.get(row.transaction_id) : undefined }));
}

describe("ticket confirmation migration", () => {
  it("keeps a paid order's confirmation and refund on its purchase only, refuses orders no purchase answers for, and every answer stays", async () => {
    const { db } = database;
    for (const id of ["usr_buyer", "usr_owner"]) {
      await sql`insert into users (id, username, display_name, email, role, status, wallet_address, wallet_kind)
        values (${id}, ${id}, ${id}, ${`${id}@example.test`}, 'collector', 'active', ${`0x${randomBytes(20).toString("hex")}`}, 'siwe')`.execute(db);
    }
    await sql`insert into platform_events (id, title, type, format, location, starts_at, ends_at, status, in_person_price_cents, in_person_capacity, in_person_sold, created_by)
      values ('evt_1', 'Talk', 'talk', 'in_person', 'Lisbon', ${T1}, ${T3}, 'scheduled', 2500, 50, 6, 'usr_owner')`.execute(db);

    // Paid: confirmed; confirmed with its refund under way; refunded; declined; failed by the
    // cancellation after its charge (seats released at T2, the purchase failed when its charge came back, T3); being charged.
    await purchase("ord_paid", { status: "completed", stage: "done", completedAt: T1 });
    await order("ord_paid", "confirmed", { confirmedAt: T1 });
    await ticket("ord_paid", "valid");
    await purchase("ord_refunding", { status: "completed", stage: "refunding", completedAt: T1 });
    await order("ord_refunding", "confirmed", { confirmedAt: T1 });
    await ticket("ord_refunding", "refunded");
    await purchase("ord_refunded", { status: "refunded", stage: "done", completedAt: T1, refundedAt: T2 });
    await order("ord_refunded", "refunded", { confirmedAt: T1, refundedAt: T2 });
    await ticket("ord_refunded", "refunded");
    await purchase("ord_declined", { status: "failed", stage: "done", failedAt: T2, failure: "Your card was declined." });
    await order("ord_declined", "failed", { failedAt: T2 });
    await purchase("ord_cancelled", { status: "failed", stage: "done", failedAt: T3, failure: "The event was cancelled before the order was paid; any payment taken is refunded; the payment was refunded (re_ord_cancelled)" });
    await order("ord_cancelled", "failed", { failedAt: T2 });
    await purchase("ord_charging", { status: "pending", stage: "charging" });
    await order("ord_charging", "pending");
    // Without a purchase: free; a discount paid it all; free and refunded; a hold expired; a hold failed by the cancellation.
    await order("ord_free", "confirmed", { paid: false, total: 0, confirmedAt: T1 });
    await ticket("ord_free", "checked_in");
    await order("ord_discounted", "confirmed", { paid: false, discount: 2500, confirmedAt: T2, dueAt: T2 });
    await order("ord_free_refunded", "refunded", { paid: false, total: 0, confirmedAt: T1, refundedAt: T2 });
    await order("ord_expired", "expired", { paid: false, failure: "Not paid before payment_due_at: the seats were released", dueAt: T1 });
    await order("ord_held_cancelled", "failed", { paid: false, failure: "The event was cancelled before the order was paid", failedAt: T2, dueAt: T3 });

    // Orders no purchase answers for: confirmed while the purchase never completed, refunded while it is still refunding.
    await purchase("ord_unsettled", { status: "pending", stage: "effecting" });
    await order("ord_unsettled", "confirmed", { confirmedAt: T2 });
    await purchase("ord_unrefunded", { status: "completed", stage: "refunding", completedAt: T1 });
    await order("ord_unrefunded", "refunded", { confirmedAt: T1, refundedAt: T3 });
    const unsettled = await stored();
    const refused = migrateToLatest(db, moduleMigrations);
    await expect(refused).rejects.toThrow(/2 paid ticket order\(s\) were confirmed or refunded at other times than their purchase/);
    await expect(refused).rejects.toThrow(/ord_unrefunded \(refunded, confirmed 2026-11-30T10:00:00\.123Z, refunded 2026-11-30T12:00:00\.000Z; its purchase txn_ord_unrefunded completed/);
    await expect(refused).rejects.toThrow(/ord_unsettled \(confirmed, confirmed 2026-11-30T11:00:00\.000Z, refunded never; its purchase txn_ord_unsettled pending, completed never/);
    expect(await stored()).toEqual(unsettled);
    // Settled (each purchase carried to where its order stands), they migrate with the others.
    await sql`update transactions set status = 'completed', stage = 'done', charge_id = 'ch_ord_unsettled', completed_at = ${T2} where id = 'txn_ord_unsettled'`.execute(db);
    await sql`update transactions set status = 'refunded', stage = 'done', refund_id = 're_ord_unrefunded', refunded_at = ${T3} where id = 'txn_ord_unrefunded'`.execute(db);

    // The code before the migration answered the order's own times.
    const rowsBefore = await stored();
    const before = rowsBefore.map(({ row, tickets, paid }) => ({ ...toOrder(row, tickets, paid), confirmed_at: isoOrNull(row.confirmed_at), refunded_at: isoOrNull(row.refunded_at) }));
    expect(before.filter((o) => o.confirmed_at !== null)).toHaveLength(8);
    expect(before.filter((o) => o.refunded_at !== null)).toHaveLength(3);

    await migrateToLatest(db, moduleMigrations);

    // Only orders without a purchase keep their times, and the checks keep it so.
    const kept = await sql<{ id: string }>`select id from ticket_orders where confirmed_at is not null or refunded_at is not null order by id`.execute(db);
    expect(kept.rows.map((o) => o.id)).toEqual(["ord_discounted", "ord_free", "ord_free_refunded"]);
    await expect(sql`update ticket_orders set confirmed_at = now() where id = 'ord_paid'`.execute(db)).rejects.toThrow(/ticket_orders_confirmed_without_purchase/);
    await expect(sql`update ticket_orders set refunded_at = now() where id = 'ord_refunded'`.execute(db)).rejects.toThrow(/ticket_orders_refunded_without_purchase/);
    // A failure's time is the seats' own: kept, a paid order's too (ord_cancelled's differs from its purchase's).
    const failed = await sql<{ id: string; failed_at: Date }>`select id, failed_at from ticket_orders where failed_at is not null order by id`.execute(db);
    expect(failed.rows).toEqual([{ id: "ord_cancelled", failed_at: T2 }, { id: "ord_declined", failed_at: T2 }, { id: "ord_held_cancelled", failed_at: T2 }]);

    // Every order answers as it did.
    const after = await stored();
    expect(after.map(({ row, tickets, paid }) => toOrder(row, tickets, paid))).toEqual(before);

    // `down` gives the orders their copies back, exactly; `up` again leaves them as the migration did.
    await db.transaction().execute(async (trx) => {
      await down(trx);
      expect(await sql`select * from ticket_orders order by id`.execute(trx).then((r) => r.rows)).toEqual(rowsBefore.map((o) => o.row));
      await up(trx);
    });
    expect(await stored()).toEqual(after);
  });
});
