import { type Insertable, type SelectQueryBuilder, sql, type Transaction, } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import { type Page, paginate } from "../../lib/pagination.ts";
import type { PlatformEvent, Ticket, TicketKind, TicketOrder, TicketOrdersTable, TicketsTable } from "./events.tables.ts";

// ---- seats (counters on the event's row) ----

/**
 * Reserves seats with one conditional UPDATE (on sale, the kind offered, within the capacity), so
 * that concurrent purchases never oversell; the event as it left it, or undefined.
 */
export function reserveSeats(trx: Transaction<Database>, eventId: string, kind: TicketKind, quantity: number): Promise<PlatformEvent | undefined> {
  const q = trx.updateTable("platform_events").where("id", "=", eventId).where("status", "=", "scheduled").where("ends_at", ">", sql<Date>`now()`);
  return (
    kind === "virtual"
      ? q
          .set({ virtual_sold: sql<number>`virtual_sold + ${quantity}` })
          .where("virtual_price_cents", "is not", null)
          .where(sql<boolean>`(virtual_capacity is null or virtual_sold + ${quantity} <= virtual_capacity)`)
      : q
          .set({ in_person_sold: sql<number>`in_person_sold + ${quantity}` })
          .where("in_person_price_cents", "is not", null)
          .where(sql<boolean>`in_person_sold + ${quantity} <= in_person_capacity`)
  )
    .returningAll()
    .executeTakeFirst();
}

export async function releaseSeats(db: Db, eventId: string, kind: TicketKind, quantity: number): Promise<void> {
  const q = db.updateTable("platform_events").where("id", "=", eventId);
  await (kind === "virtual" ? q.set({ virtual_sold: sql<number>`virtual_sold - ${quantity}` }) : q.set({ in_person_sold: sql<number>`in_person_sold - ${quantity}` })).execute();
}

/** Seats `buyerId` holds unpaid (awaiting payment, not past due) on an event's kind of ticket. */
export function heldSeats(db: Db, eventId: string, buyerId: string, kind: TicketKind): Promise<number> {
  return seatsOf(db, eventId, buyerId, kind, (q) => q.where("status", "=", "awaiting_payment").where("payment_due_at", ">", sql<Date>`now()`));
}

/** Free tickets `buyerId` has (or is being issued) on an event's kind of ticket. */
export function freeTicketsOf(db: Db, eventId: string, buyerId: string, kind: TicketKind): Promise<number> {
  return seatsOf(db, eventId, buyerId, kind, (q) => q.where("total_cents", "=", 0n).where("status", "in", ["pending", "confirmed"]));
}

type OrdersQuery = SelectQueryBuilder<Database, "ticket_orders", object>;

/** Seats in `buyerId`'s orders of an event's kind of ticket that `which` picks. */
async function seatsOf(db: Db, eventId: string, buyerId: string, kind: TicketKind, which: (q: OrdersQuery) => OrdersQuery): Promise<number> {
  const orders = db.selectFrom("ticket_orders").where("event_id", "=", eventId).where("buyer_id", "=", buyerId).where("kind", "=", kind);
  const row = await which(orders).select(sql<string>`coalesce(sum(quantity), 0)`.as("n")).executeTakeFirstOrThrow();
  return Number(row.n);
}

// ---- orders ----

/** Now for an order without a purchase; null for a paid one, whose purchase holds the time (the checks `ticket_orders_*_without_purchase`). */
const ownTime = sql<Date | null>`case when transaction_id is null then now() end`;

export async function insertOrder(db: Db, order: Insertable<TicketOrdersTable>): Promise<void> {
  await db.insertInto("ticket_orders").values(order).execute();
}

export function findOrder(db: Db, id: string): Promise<TicketOrder | undefined> {
  return db.selectFrom("ticket_orders").selectAll().where("id", "=", id).executeTakeFirst();
}

/** Row lock for a change decided on the order's current state; only inside a transaction the service opened. */
export function lockOrder(trx: Transaction<Database>, id: string): Promise<TicketOrder | undefined> {
  return trx.selectFrom("ticket_orders").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

/** The status of the event an order is for. */
export function eventStatusOf(db: Db, orderId: string): Promise<Pick<PlatformEvent, "status"> | undefined> {
  return db.selectFrom("ticket_orders").innerJoin("platform_events", "platform_events.id", "ticket_orders.event_id").select("platform_events.status").where("ticket_orders.id", "=", orderId).executeTakeFirst();
}

export function eventIdOf(db: Db, orderId: string): Promise<Pick<TicketOrder, "event_id">> {
  return db.selectFrom("ticket_orders").select("event_id").where("id", "=", orderId).executeTakeFirstOrThrow();
}

/** An order moves to `pending` with its purchase (which holds its payment): charged next. */
export async function startCharge(db: Db, id: string, transactionId: string): Promise<void> {
  await db
    .updateTable("ticket_orders")
    .set({ status: "pending", transaction_id: transactionId, payment_due_at: null, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .execute();
}

/** An order its discount paid in full moves to `pending`: confirmed next, without a charge. */
export async function markPending(db: Db, id: string): Promise<void> {
  await db.updateTable("ticket_orders").set({ status: "pending", updated_at: sql<Date>`now()` }).where("id", "=", id).execute();
}

export async function setDiscount(db: Db, id: string, discountCents: bigint): Promise<void> {
  await db.updateTable("ticket_orders").set({ discount_cents: discountCents, updated_at: sql<Date>`now()` }).where("id", "=", id).execute();
}

/** An order awaiting payment whose `payment_due_at` has passed, expired; undefined when it was paid or expired meanwhile. */
export function expireHold(db: Db, id: string): Promise<TicketOrder | undefined> {
  return db
    .updateTable("ticket_orders")
    .set({ status: "expired", failure_reason: "Not paid before payment_due_at: the seats were released", updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("status", "=", "awaiting_payment")
    .where("payment_due_at", "<=", sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}

/**
 * A pending order confirmed (its charge, if any, is its purchase's); undefined when it was no longer
 * pending. Only an order without a purchase keeps when (a paid one's is its purchase's completion).
 */
export function confirmOrder(db: Db, id: string): Promise<TicketOrder | undefined> {
  return db
    .updateTable("ticket_orders")
    .set({ status: "confirmed", confirmed_at: ownTime, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("status", "=", "pending")
    .returningAll()
    .executeTakeFirst();
}

/** A pending order failed (why is its purchase's); undefined when it was no longer pending. */
export function failOrder(db: Db, id: string): Promise<TicketOrder | undefined> {
  return db
    .updateTable("ticket_orders")
    .set({ status: "failed", failed_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("status", "=", "pending")
    .returningAll()
    .executeTakeFirst();
}

/** The confirmed orders of an event, locked for their refunds (a paid one's refund is its purchase's, under way until it is `refunded`). */
export function lockConfirmedOf(trx: Transaction<Database>, eventId: string): Promise<TicketOrder[]> {
  return trx.selectFrom("ticket_orders").selectAll().where("event_id", "=", eventId).where("status", "=", "confirmed").orderBy("id").forUpdate().execute();
}

/** The event's orders awaiting payment (they have no purchase), failed saying why; those orders. */
export function failUnpaidOf(db: Db, eventId: string, reason: string): Promise<TicketOrder[]> {
  return db
    .updateTable("ticket_orders")
    .set({ status: "failed", failure_reason: reason, failed_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where("event_id", "=", eventId)
    .where("status", "=", "awaiting_payment")
    .returningAll()
    .execute();
}

/** A confirmed order refunded; only an order without a purchase keeps when (a paid one's is its purchase's refund). */
export function markRefunded(db: Db, id: string): Promise<TicketOrder> {
  return db
    .updateTable("ticket_orders")
    .set({ status: "refunded", refunded_at: ownTime, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

// ---- tickets ----

export function insertTickets(db: Db, tickets: Insertable<TicketsTable>[]): Promise<Pick<Ticket, "id">[]> {
  return db.insertInto("tickets").values(tickets).returning(["id"]).execute();
}

export function ticketsOf(db: Db, orderId: string): Promise<Ticket[]> {
  return db.selectFrom("tickets").selectAll().where("order_id", "=", orderId).orderBy("id").execute();
}

export function ticketIdsOf(db: Db, orderId: string): Promise<Pick<Ticket, "id">[]> {
  return db.selectFrom("tickets").select("id").where("order_id", "=", orderId).orderBy("id").execute();
}

export function findTicket(db: Db, id: string): Promise<Ticket | undefined> {
  return db.selectFrom("tickets").selectAll().where("id", "=", id).executeTakeFirst();
}

export function findByCode(db: Db, eventId: string, code: string): Promise<Ticket | undefined> {
  return db.selectFrom("tickets").selectAll().where("event_id", "=", eventId).where("code", "=", code).executeTakeFirst();
}

/** Checks a valid ticket in; undefined when there is no such valid ticket (the conditional UPDATE decides a double check-in). */
export function checkIn(db: Db, eventId: string, code: string, by: string): Promise<Ticket | undefined> {
  return db
    .updateTable("tickets")
    .set({ status: "checked_in", checked_in_at: sql<Date>`now()`, checked_in_by: by })
    .where("event_id", "=", eventId)
    .where("code", "=", code)
    .where("status", "=", "valid")
    .returningAll()
    .executeTakeFirst();
}

export async function refundTicketsOf(db: Db, eventId: string): Promise<void> {
  await db.updateTable("tickets").set({ status: "refunded" }).where("event_id", "=", eventId).where("status", "=", "valid").execute();
}

/** A holder's tickets for an event, newest first. */
export function ticketsOfHolder(db: Db, eventId: string, holderId: string, page: Page): Promise<{ rows: Ticket[]; total: number }> {
  const query = db.selectFrom("tickets").where("event_id", "=", eventId).where("holder_id", "=", holderId);
  return paginate(query, page, (q) => q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"));
}
