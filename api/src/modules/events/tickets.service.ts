import type { Kysely, Transaction } from "kysely";
import type { Logger } from "pino";
import type { Database, Db } from "../../db/database.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import { enqueue, removeJobs, type Task } from "../../jobs/queue.ts";
import { randomCode } from "../../lib/codes.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { centsToUsd } from "../../lib/money.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { Actor } from "../../lib/actor.ts";
import type { LedgerAppend, LedgerService } from "../ledger/ledger.service.ts";
import type { PaymentsService } from "../payments/payments.service.ts";
import { failureOf, type PaymentFailure, type Purchase, type PurchaseKind, type Purchases } from "../payments/purchases.service.ts";
import type { UsersService } from "../users/users.service.ts";
import * as events from "./events.repository.ts";
import { onSale, remainingOf } from "./events.service.ts";
import type { TicketPurchase } from "./events.schemas.ts";
import type { PlatformEvent, TicketKind, TicketOrder } from "./events.tables.ts";
import { confirmedAt, refundedAt, toOrder, toTicket } from "./ticket-views.ts";
import * as repo from "./tickets.repository.ts";

export const TICKET_HOLD_EXPIRY_TASK = "ticket_order_hold_expiry";

const EVENT_CANCELLED: PaymentFailure = { code: "event_cancelled", reason: "The event was cancelled before the order was paid; any payment taken is refunded" };

export interface TicketsDeps {
  db: Kysely<Database>;
  logger: Logger;
  payments: PaymentsService;
  purchases: Purchases;
  users: UsersService;
  ledger: LedgerService;
  /** How long an order without a payment method holds its seats. */
  holdMs: number;
  /** The share of the seats left one buyer's unpaid holds may take. */
  holdMaxShare: number;
  /** Free tickets of one kind per buyer and event. */
  freeTicketsPerUser: number;
}

/**
 * Tickets (docs/integrators/events.md#tickets). A purchase reserves its seats on the event's row
 * with one conditional UPDATE (the check constraints keep the count within the capacity: no
 * oversell under any concurrency; a refusal charges nothing), records the order and starts its
 * `ticket_purchase` purchase (payments/purchases.service.ts) in the request's transaction, then charges it
 * (key `ticket_order:<id>`: a rerun finds the same charge). A charge confirms the order under a
 * lock of the event's row (so a cancellation either sees it confirmed and refunds it, or makes it
 * fail and the charge go back): tickets with unguessable codes, the purchase completed,
 * `ticket.purchased` to the buyer. A decline fails the order and releases its seats.
 */
export class TicketsService {
  private readonly log: Logger;

  constructor(private readonly deps: TicketsDeps) {
    this.log = deps.logger.child({ component: "tickets" });
  }

  // ---- purchase ----

  /**
   * Buys tickets: with a payment method, reserved and paid at once; without one (tickets that are
   * not free), reserved and held `awaiting_payment` until `payment_due_at` for `pay` (a reward's
   * discount may be applied meanwhile), then released.
   */
  async purchase(actor: Actor, eventId: string, input: TicketPurchase, transact: Transact) {
    const { db, users, payments } = this.deps;
    if (!isId("event", eventId)) throw ApiError.notFound("Event");
    const event = found(await events.find(db, eventId), "Event");
    const price = priceOf(event, input.kind);
    if (price === null) throw ApiError.validation([{ field: "kind", code: "invalid_value", message: `this ${event.format} event sells no ${input.kind} tickets` }]);
    if (price > 0n) payments.requireChargeable(price * BigInt(input.quantity), "quantity", `${input.quantity} ticket(s) at ${centsToUsd(price)} USD`);
    const buyer = await users.get(actor.userId);
    const method = price > 0n && input.payment_method_id !== undefined ? await payments.resolvePaymentMethod(buyer.id, input.payment_method_id) : null;

    const created = await transact(async (trx) => {
      if (method && price > 0n) {
        // Paid at once: the order, its purchase and the answer written first, the seats reserved
        // last. The reservation locks the event's row until the commit, so it is held for one
        // statement (a burst of buyers of one event queues there, not behind each other's writes).
        const id = newId("order");
        const total = price * BigInt(input.quantity);
        await repo.insertOrder(trx, { id, event_id: eventId, buyer_id: buyer.id, kind: input.kind, quantity: input.quantity, unit_price_cents: price, total_cents: total, transaction_id: null, status: "pending", payment_due_at: null });
        await this.startPayment(trx, { id, event_id: eventId, kind: input.kind, quantity: input.quantity }, buyer.id, method.id, total);
        const answer = await this.orderIn(trx, id);
        const reserved = await repo.reserveSeats(trx, eventId, input.kind, input.quantity);
        if (!reserved) await this.refusal(trx, eventId, input.kind, input.quantity);
        if (priceOf(reserved!, input.kind) !== price) throw ApiError.conflict("invalid_state", "The event's ticket price changed while you were buying; look at the event again and buy at its new price");
        return answer;
      }
      // The reservation locks the event's row until the commit: one buyer's orders are counted one after another.
      const reserved = await repo.reserveSeats(trx, eventId, input.kind, input.quantity);
      if (!reserved) await this.refusal(trx, eventId, input.kind, input.quantity);
      const unit = priceOf(reserved!, input.kind)!;
      const total = unit * BigInt(input.quantity);
      const id = newId("order");
      const held = total > 0n && !method;
      if (held) await this.requireWithinHoldLimit(trx, reserved!, buyer.id, input);
      if (total === 0n) await this.requireWithinFreeLimit(trx, eventId, buyer.id, input);
      await repo.insertOrder(trx, {
        id,
        event_id: eventId,
        buyer_id: buyer.id,
        kind: input.kind,
        quantity: input.quantity,
        unit_price_cents: unit,
        total_cents: total,
        transaction_id: null,
        status: held ? "awaiting_payment" : "pending",
        payment_due_at: held ? new Date(Date.now() + this.deps.holdMs) : null,
      });
      if (total === 0n) {
        // Free tickets: nothing to charge, issued at once.
        await this.confirm(trx, id, null);
      } else if (held) {
        await enqueue(trx, TICKET_HOLD_EXPIRY_TASK, { order_id: id }, { jobKey: `ticket_hold:${id}`, runAt: new Date(Date.now() + this.deps.holdMs), maxAttempts: 25 });
      } else {
        await this.startPayment(trx, { id, event_id: eventId, kind: input.kind, quantity: input.quantity }, buyer.id, method!.id, total);
      }
      return this.orderIn(trx, id);
    });
    return this.afterPayment(created.order_id);
  }

  /**
   * Pays an order held `awaiting_payment` (its buyer), before `payment_due_at`: the amount due is
   * its total less any discount applied to it. Then as a purchase with a payment method.
   */
  async pay(actor: Actor, orderId: string, paymentMethodId: string, transact: Transact) {
    const order = isId("order", orderId) ? await this.findOrder(orderId) : undefined;
    // Hidden from everyone but its buyer and admins, who read it (getOrder): an admin is refused, not told it does not exist.
    if (!order || (actor.role !== "admin" && order.buyer_id !== actor.userId)) throw ApiError.notFound("Ticket order");
    if (order.buyer_id !== actor.userId) throw ApiError.forbidden("Only the buyer may pay a ticket order");
    const method = await this.deps.payments.resolvePaymentMethod(actor.userId, paymentMethodId);
    await transact(async (trx) => {
      const locked = (await repo.lockOrder(trx, orderId))!;
      if (locked.status !== "awaiting_payment") throw ApiError.conflict("invalid_state", `The order is ${locked.status}: only an order awaiting payment can be paid`);
      if (locked.payment_due_at! <= new Date()) throw ApiError.conflict("invalid_state", `The order's seats were held until ${iso(locked.payment_due_at!)}; buy again`);
      await removeJobs(trx, [`ticket_hold:${orderId}`]);
      const due = locked.total_cents - locked.discount_cents;
      if (due === 0n) {
        await repo.markPending(trx, orderId);
        await this.confirm(trx, orderId, null);
      } else {
        await this.startPayment(trx, locked, actor.userId, method.id, due);
      }
      return this.orderIn(trx, orderId);
    });
    return this.afterPayment(orderId);
  }

  /** An order moves to `pending` with its purchase (in the caller's transaction); the request charges it after the commit. */
  private async startPayment(trx: Transaction<Database>, order: Pick<TicketOrder, "id" | "event_id" | "kind" | "quantity">, buyerId: string, paymentMethodId: string, amount: bigint): Promise<void> {
    const purchase = await this.deps.purchases.start(
      trx,
      { type: "ticket_purchase", referenceId: order.id, amountCents: amount, buyerId, paymentMethodId, description: `${order.quantity} ${order.kind} ticket(s) for ${order.event_id}` },
      { chargeInRequest: true },
    );
    await repo.startCharge(trx, order.id, purchase.id);
  }

  /** After the order's transaction committed: charges a pending order here (its purchase's fallback job otherwise), and reads the outcome. */
  private async afterPayment(orderId: string) {
    const pending = await this.findOrder(orderId);
    if (pending?.status === "pending" && pending.transaction_id) {
      await this.deps.purchases.charge(pending.transaction_id).catch((err: unknown) => this.log.error({ err, order_id: orderId }, "charging in the request failed; the job will"));
    }
    const { row, paid, view: order } = await this.read(this.deps.db, orderId);
    // An order without a purchase fails only by its event's cancellation while its seats were held.
    const failureCode = row.status !== "failed" ? null : paid ? (failureOf(paid)?.code ?? null) : EVENT_CANCELLED.code;
    // A cancellation meanwhile is the event's (409); any other failure with no charge kept is the payment's (402).
    if (failureCode === EVENT_CANCELLED.code) {
      throw new ApiError(409, "invalid_state", `The event was cancelled while your order was being paid; any payment taken is refunded (order ${row.id})`, { order_id: row.id });
    }
    return { order, paymentFailed: row.status === "failed" && (paid?.charge_id ?? null) === null, failureCode };
  }

  readonly holdExpiryTask: Task = async (payload) => {
    const { order_id: id } = payload as { order_id?: unknown };
    if (typeof id !== "string") throw new Error(`${TICKET_HOLD_EXPIRY_TASK}: payload without order_id`);
    await this.expireHold(id);
  };

  /** An order still awaiting payment at `payment_due_at` expires: its seats are released. */
  async expireHold(id: string): Promise<boolean> {
    return this.deps.db.transaction().execute(async (trx) => {
      const order = await repo.expireHold(trx, id);
      if (!order) return false;
      await repo.releaseSeats(trx, order.event_id, order.kind, order.quantity);
      await closed(trx, order);
      return true;
    });
  }

  /**
   * A discount on an order of `userId` awaiting payment (rewards redeem it, in their transaction):
   * a percentage of the total or an amount, at most the total; one per order. Null when the order
   * cannot take it (not the user's, not awaiting payment, discounted already).
   */
  async applyDiscount(trx: Transaction<Database>, userId: string, orderId: string, discount: { pct?: number; usdCents?: bigint }): Promise<{ applied_cents: bigint; description: string } | null> {
    if (!isId("order", orderId)) return null;
    const order = await repo.lockOrder(trx, orderId);
    if (!order || order.buyer_id !== userId || order.status !== "awaiting_payment" || order.discount_cents > 0n || order.payment_due_at! <= new Date()) return null;
    const wanted = discount.pct !== undefined ? (order.total_cents * BigInt(Math.round(discount.pct * 100))) / 10_000n : (discount.usdCents ?? 0n);
    const applied = wanted > order.total_cents ? order.total_cents : wanted;
    const due = order.total_cents - applied;
    // Nothing left to pay confirms the order without a charge; a little left could not be charged at all.
    const { minCents } = this.deps.payments.limits;
    if (due > 0n && due < minCents) {
      throw ApiError.refused("below_minimum_charge", `The discount would leave ${centsToUsd(due)} USD to pay on order ${orderId}, below the smallest card charge (${centsToUsd(minCents)} USD); nothing was spent`);
    }
    await repo.setDiscount(trx, orderId, applied);
    return { applied_cents: applied, description: `${centsToUsd(applied)} USD off ticket order ${orderId} (now ${centsToUsd(order.total_cents - applied)} USD due)` };
  }

  /**
   * One user's unpaid holds take at most `holdMaxShare` of the seats left (their own held seats
   * counted as left; at least one): a hold is a promise to pay, not a way to empty an event. Called
   * after the reservation (`event` as it left it), under its lock.
   */
  private async requireWithinHoldLimit(trx: Transaction<Database>, event: PlatformEvent, buyerId: string, input: TicketPurchase): Promise<void> {
    const remaining = remainingOf(event, input.kind);
    if (remaining === null) return;
    const held = await repo.heldSeats(trx, event.id, buyerId, input.kind);
    const allowed = Math.max(1, Math.floor(this.deps.holdMaxShare * (remaining + input.quantity + held)));
    if (held + input.quantity > allowed) {
      throw ApiError.refused("hold_limit", `Unpaid holds are limited to ${allowed} ${input.kind} seat(s) per buyer now (you hold ${held}); pay with a payment_method_id, or pay your held orders first`, { held, allowed });
    }
  }

  /** Free tickets per user and event kind are capped: one account never takes every free seat. */
  private async requireWithinFreeLimit(trx: Transaction<Database>, eventId: string, buyerId: string, input: TicketPurchase): Promise<void> {
    const taken = await repo.freeTicketsOf(trx, eventId, buyerId, input.kind);
    const cap = this.deps.freeTicketsPerUser;
    if (taken + input.quantity > cap) {
      throw ApiError.refused("free_ticket_limit", `Free ${input.kind} tickets are limited to ${cap} per person for this event; you have ${taken}`, { taken, allowed: cap });
    }
  }

  /** Why no seats were reserved: 404, 409 invalid_state (cancelled, ended) or 409 insufficient_tickets. */
  private async refusal(trx: Transaction<Database>, eventId: string, kind: TicketKind, quantity: number): Promise<never> {
    const event = found(await events.find(trx, eventId), "Event");
    if (event.status === "cancelled") throw ApiError.conflict("invalid_state", "The event is cancelled");
    if (!onSale(event, Date.now())) throw ApiError.conflict("invalid_state", `The event ended at ${iso(event.ends_at)}: its tickets are no longer sold`);
    const remaining = remainingOf(event, kind) ?? 0;
    throw new ApiError(409, "insufficient_tickets", `Only ${remaining} ${kind} ticket(s) are left; you asked for ${quantity}`, { remaining });
  }

  /** Tickets as a kind of purchase: what happens at each step of an order's payment (payments/purchases.service.ts). */
  readonly purchaseKind: PurchaseKind = {
    type: "ticket_purchase",
    keyPrefix: "ticket_order",
    // A cancelled event's order is never charged anew.
    beforeCharge: async (db, purchase) => {
      const event = await repo.eventStatusOf(db, purchase.reference_id!);
      return event?.status === "cancelled" ? EVENT_CANCELLED : null;
    },
    onCharged: async (trx, purchase, charge) => {
      const orderId = purchase.reference_id!;
      const order = await repo.eventIdOf(trx, orderId);
      // The event's row locked against a cancellation (which locks it too): the cancellation is
      // either wholly before (the order fails and the charge goes back) or wholly after (it refunds
      // the confirmed order).
      const locked = await events.lockStatus(trx, order.event_id);
      if (locked.status === "cancelled") {
        await this.failOrder(trx, orderId);
        return { refund: EVENT_CANCELLED };
      }
      return (await this.confirm(trx, orderId, { chargeId: charge.chargeId, feeCents: charge.feeCents })) ? "completed" : undefined;
    },
    onPaymentFailed: async (trx, purchase) => {
      await this.failOrder(trx, purchase.reference_id!);
    },
    // A refund of a confirmed order (its event was cancelled); an order whose charge came back after it failed stays failed.
    onRefunded: async (trx, purchase, _refund, cause) => {
      if (!cause) return;
      const order = (await repo.lockOrder(trx, purchase.reference_id!))!;
      return order.status === "confirmed" ? [await this.markRefunded(trx, order, purchase)] : [];
    },
  };

  /**
   * Confirms a pending order in `trx`: its tickets, its purchase completed (paid orders), `ticket.purchased`
   * to the buyer, a ledger entry; false when it was no longer pending.
   */
  private async confirm(trx: Transaction<Database>, id: string, charge: { chargeId: string; feeCents: bigint } | null): Promise<boolean> {
    const order = await repo.confirmOrder(trx, id);
    if (!order) return false;
    const tickets = await repo.insertTickets(
      trx,
      Array.from({ length: order.quantity }, () => ({ id: newId("ticket"), order_id: order.id, event_id: order.event_id, holder_id: order.buyer_id, kind: order.kind, code: ticketCode(), status: "valid" as const })),
    );
    const fee = charge?.feeCents ?? 0n;
    const paid = order.transaction_id ? await this.deps.purchases.complete(trx, order.transaction_id, { payoutCents: order.total_cents - order.discount_cents - fee }) : undefined;
    // A paid order is confirmed when its purchase completes: one that was not being effected would leave the order without its time.
    if (order.transaction_id && !paid) throw new Error(`ticket order ${order.id}: its purchase ${order.transaction_id} was not awaiting its effect`);
    await recordEvent(
      trx,
      "ticket.purchased",
      {
        order_id: order.id,
        event_id: order.event_id,
        buyer_id: order.buyer_id,
        kind: order.kind,
        quantity: order.quantity,
        ticket_ids: tickets.map((t) => t.id),
        total_usd: centsToUsd(order.total_cents),
        paid_usd: centsToUsd(order.total_cents - order.discount_cents),
        transaction_id: order.transaction_id,
        purchased_at: iso(confirmedAt(order, paid)!),
      },
      [order.buyer_id],
    );
    if (order.transaction_id) {
      await this.deps.ledger.append(trx, {
        kind: "ticket_order.confirmed",
        subjectId: order.id,
        actorId: null,
        parties: [order.buyer_id],
        data: { order_id: order.id, event_id: order.event_id, transaction_id: order.transaction_id, charge_id: charge?.chargeId ?? null, kind: order.kind, quantity: order.quantity, amount_cents: (order.total_cents - order.discount_cents).toString(), discount_cents: order.discount_cents.toString(), fee_cents: fee.toString() },
      });
    }
    return true;
  }

  /** Fails a pending order in `trx` and releases its seats (why, and its money, are its purchase's: refunded when charged). */
  private async failOrder(trx: Transaction<Database>, id: string): Promise<boolean> {
    const order = await repo.failOrder(trx, id);
    if (!order) return false;
    await repo.releaseSeats(trx, order.event_id, order.kind, order.quantity);
    await closed(trx, order);
    return true;
  }

  // ---- cancellation and refunds ----

  /**
   * Cancels an event (admins): every confirmed order is refunded (a job per paid order, key
   * `refund:ticket_order:<id>`; free ones at once) and its holders told (`ticket.refunded`); orders
   * still being paid fail and get any charge back. Cancelling a cancelled event changes nothing.
   */
  async cancelEvent<T>(eventId: string, answer: (trx: Transaction<Database>) => Promise<T>, transact: Transact = transactOn(this.deps.db)): Promise<T> {
    return transact(async (trx) => {
      const event = found(isId("event", eventId) ? await events.lock(trx, eventId) : undefined, "Event");
      if (event.status === "cancelled") return answer(trx);
      await events.cancel(trx, event.id);
      const confirmed = await repo.lockConfirmedOf(trx, event.id);
      await repo.refundTicketsOf(trx, event.id);
      // Orders holding seats without payment: nothing was paid, they just fail.
      for (const unpaid of await repo.failUnpaidOf(trx, event.id, "The event was cancelled before the order was paid")) await closed(trx, unpaid);
      const appends: LedgerAppend[] = [];
      for (const order of confirmed) {
        if (order.transaction_id) {
          await this.deps.purchases.refund(trx, order.transaction_id, { reason: "event_cancelled", actorId: null, referenceId: event.id });
        } else {
          appends.push(await this.markRefunded(trx, order, undefined));
        }
      }
      for (const entry of appends) await this.deps.ledger.append(trx, entry);
      return answer(trx);
    });
  }

  /** A confirmed order of a cancelled event, refunded (a paid one's purchase just refunded: its charge, refund and time): its state, its tickets' and `ticket.refunded`; the ledger entry to append last. */
  private async markRefunded(trx: Transaction<Database>, order: TicketOrder, paid: Purchase | undefined): Promise<LedgerAppend> {
    const chargeId = paid?.charge_id ?? null;
    const refundId = paid?.refund_id ?? null;
    const refunded = await repo.markRefunded(trx, order.id);
    await closed(trx, refunded);
    const tickets = await repo.ticketIdsOf(trx, order.id);
    await recordEvent(
      trx,
      "ticket.refunded",
      {
        order_id: order.id,
        event_id: order.event_id,
        buyer_id: order.buyer_id,
        ticket_ids: tickets.map((t) => t.id),
        refunded_usd: centsToUsd(order.total_cents - order.discount_cents),
        reason: "event_cancelled",
        transaction_id: order.transaction_id,
        refunded_at: iso(refundedAt(refunded, paid)!),
      },
      [order.buyer_id],
    );
    return {
      kind: "ticket_order.refunded",
      subjectId: order.id,
      actorId: null,
      parties: [order.buyer_id],
      data: { order_id: order.id, event_id: order.event_id, transaction_id: order.transaction_id, charge_id: chargeId, refund_id: refundId, amount_cents: (order.total_cents - order.discount_cents).toString() },
    };
  }

  // ---- check-in ----

  /** Admits a ticket's holder once (admins, at the door): a second check-in is 409 invalid_state. */
  async checkIn(actor: Actor, eventId: string, rawCode: string) {
    const { db } = this.deps;
    if (!isId("event", eventId)) throw ApiError.notFound("Event");
    const code = normalizeCode(rawCode);
    const admitted = await repo.checkIn(db, eventId, code, actor.userId);
    if (admitted) return toTicket(admitted);
    const ticket = await repo.findByCode(db, eventId, code);
    if (!ticket) {
      if (!(await events.exists(db, eventId))) throw ApiError.notFound("Event");
      throw ApiError.notFound("Ticket");
    }
    if (ticket.status === "checked_in") throw ApiError.conflict("invalid_state", `The ticket was checked in already, at ${iso(ticket.checked_in_at!)}`);
    throw ApiError.conflict("invalid_state", "The ticket was refunded (its event was cancelled)");
  }

  // ---- reads ----

  /** The caller's tickets for an event, newest first. */
  async myTickets(actor: Actor, eventId: string, page: Page) {
    if (!isId("event", eventId)) throw ApiError.notFound("Event");
    if (!(await events.exists(this.deps.db, eventId))) throw ApiError.notFound("Event");
    const { rows, total } = await repo.ticketsOfHolder(this.deps.db, eventId, actor.userId, page);
    return paginated(rows.map(toTicket), page, total);
  }

  /** A ticket for its holder and admins; anyone else 404. */
  async getTicket(actor: Actor, id: string) {
    const ticket = isId("ticket", id) ? await repo.findTicket(this.deps.db, id) : undefined;
    if (!ticket || (actor.role !== "admin" && ticket.holder_id !== actor.userId)) throw ApiError.notFound("Ticket");
    return toTicket(ticket);
  }

  /** An order for its buyer and admins; anyone else 404. */
  async getOrder(actor: Actor, id: string) {
    const order = isId("order", id) ? await this.findOrder(id) : undefined;
    if (!order || (actor.role !== "admin" && order.buyer_id !== actor.userId)) throw ApiError.notFound("Ticket order");
    return this.orderIn(this.deps.db, id);
  }

  private findOrder(id: string): Promise<TicketOrder | undefined> {
    return repo.findOrder(this.deps.db, id);
  }

  private async orderIn(db: Db, id: string) {
    return (await this.read(db, id)).view;
  }

  /** An order, its purchase (paid orders) and its tickets, and the TicketOrder they answer as. */
  private async read(db: Db, id: string) {
    const row = (await repo.findOrder(db, id))!;
    const paid = row.transaction_id ? await this.deps.purchases.find(db, row.transaction_id) : undefined;
    const tickets = await repo.ticketsOf(db, id);
    return { row, paid, view: toOrder(row, tickets, paid) };
  }
}

function priceOf(e: PlatformEvent, kind: TicketKind): bigint | null {
  return kind === "virtual" ? e.virtual_price_cents : e.in_person_price_cents;
}

/**
 * An order that had a reward's discount and did not go through (failed, expired, refunded) says so
 * to its buyer (`ticket_order.closed`, internal): the points spent on the discount come back.
 */
async function closed(trx: Transaction<Database>, order: TicketOrder): Promise<void> {
  if (order.discount_cents === 0n) return;
  await recordEvent(trx, "ticket_order.closed", { order_id: order.id, event_id: order.event_id, buyer_id: order.buyer_id, status: order.status, discount_usd: centsToUsd(order.discount_cents) }, [order.buyer_id]);
}

/** A ticket's door code: 26 characters of Crockford base 32, 130 random bits. */
export function ticketCode(): string {
  return randomCode(26);
}

/** A code as typed at the door: any case, spaces and dashes ignored, Crockford's look-alikes read as digits. */
export function normalizeCode(code: string): string {
  return code.toUpperCase().replace(/[\s-]/g, "").replace(/[IL]/g, "1").replace(/O/g, "0");
}
