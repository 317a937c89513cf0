import { centsToUsd } from "../../lib/money.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import { failureOf, type Purchase } from "../payments/purchases.service.ts";
import type { Ticket, TicketOrder } from "./events.tables.ts";

/** A ticket as the Ticket resource (its code: for its holder and admins only). */
export function toTicket(t: Ticket) {
  return {
    ticket_id: t.id,
    order_id: t.order_id,
    event_id: t.event_id,
    holder_id: t.holder_id,
    kind: t.kind,
    code: t.code,
    status: t.status,
    checked_in_at: isoOrNull(t.checked_in_at),
    created_at: iso(t.created_at),
  };
}

/** An order as the TicketOrder resource; its failure is its purchase's (without a refund's note) when it had one, else why its held seats were released. */
export function toOrder(o: TicketOrder, tickets: Ticket[], paid: Purchase | undefined) {
  return {
    order_id: o.id,
    event_id: o.event_id,
    buyer_id: o.buyer_id,
    kind: o.kind,
    quantity: o.quantity,
    unit_price_usd: centsToUsd(o.unit_price_cents),
    total_usd: centsToUsd(o.total_cents),
    discount_usd: centsToUsd(o.discount_cents),
    amount_due_usd: centsToUsd(o.total_cents - o.discount_cents),
    status: o.status,
    payment_due_at: isoOrNull(o.payment_due_at),
    transaction_id: o.transaction_id,
    tickets: tickets.map(toTicket),
    failure_reason: paid ? (o.status === "failed" ? (failureOf(paid)?.reason ?? null) : null) : o.failure_reason,
    created_at: iso(o.created_at),
    confirmed_at: isoOrNull(confirmedAt(o, paid)),
    refunded_at: isoOrNull(refundedAt(o, paid)),
  };
}

/** When an order was confirmed: a paid order's purchase completed then (in the same transaction), an order without one keeps it. */
export function confirmedAt(o: TicketOrder, paid: Purchase | undefined): Date | null {
  return paid ? paid.completed_at : o.confirmed_at;
}

/** When an order was refunded: a paid order's purchase was refunded then (in the same transaction), an order without one keeps it. */
export function refundedAt(o: TicketOrder, paid: Purchase | undefined): Date | null {
  return paid ? paid.refunded_at : o.refunded_at;
}
