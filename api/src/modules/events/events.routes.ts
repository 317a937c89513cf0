import { paymentDeclinedProblem } from "../../http/problem.ts";
import { type ApiRouter, Reply } from "../../http/route.ts";
import { z } from "../../openapi/zod.ts";
import { calendarOf } from "./calendar.ts";
import * as s from "./events.schemas.ts";
import type { EventsService } from "./events.service.ts";
import type { TicketsService } from "./tickets.service.ts";

const tags = ["Events"];
const admin = { scope: "admin:write", roles: ["admin"] } as const;
const actorOf = (auth: { userId: string; role: "collector" | "artist" | "admin" }) => ({ userId: auth.userId, role: auth.role });

export function registerEventRoutes(api: ApiRouter, { events, tickets }: { events: EventsService; tickets: TicketsService }, publicBaseUrl: string): void {
  api.route({
    method: "get",
    path: "/v1/events",
    operationId: "listEvents",
    summary: "List platform events",
    description:
      "Exhibitions, talks, workshops, auctions and fairs. Without `from` or `to`: the events that have not ended, soonest first. `from` and `to` are UTC dates, both inclusive: an event is listed when it runs on any day between them (use `to` for past ones). Cancelled events stay listed with `status: cancelled`.",
    tags,
    auth: { public: true },
    query: s.eventsQuery,
    response: s.eventListSchema,
    handler: ({ query }) => events.list(query),
  });

  api.route({
    method: "get",
    path: "/v1/events/:id",
    operationId: "getEvent",
    summary: "A platform event",
    description: "With its description, artists, tickets (`remaining` exact at the time of the read), schedule and speakers.",
    tags,
    auth: { public: true },
    params: s.eventIdParams,
    errors: [404],
    response: s.eventDetailSchema,
    handler: ({ params }) => events.get(params.id),
  });

  api.route({
    method: "post",
    path: "/v1/events",
    operationId: "createEvent",
    summary: "Create a platform event (admin)",
    description: [
      "Times are UTC (`ends_at` after `starts_at`). `tickets` has the kinds the format offers: `virtual` (virtual and hybrid events; `capacity` optional, unlimited when omitted) and `in_person` (in-person and hybrid; `capacity` required); a kind the format does not offer is 400.",
      "`speakers` get `spk_` ids; each schedule session names its speakers by their position in `speakers` (0-based) and lies within the event's times. `artist_ids` are users with the artist role.",
    ].join("\n\n"),
    tags,
    auth: admin,
    body: s.eventCreateSchema,
    status: 201,
    response: s.eventDetailSchema,
    handler: ({ auth, body, transaction }) => events.create(actorOf(auth), body, transaction),
  });

  api.route({
    method: "patch",
    path: "/v1/events/:id",
    operationId: "updateEvent",
    summary: "Edit a platform event (admin)",
    description:
      "Any field of the create body. A kind of ticket with seats sold cannot be dropped, nor its capacity lowered below them (409 `invalid_state`); new prices apply to later orders. Speakers sent with their `id` keep it; the schedule may name them by id or position. A cancelled event cannot be edited (409 `invalid_state`).",
    tags,
    auth: admin,
    params: s.eventIdParams,
    body: s.eventPatchSchema,
    errors: [404, 409],
    response: s.eventDetailSchema,
    handler: ({ params, body, transaction }) => events.update(params.id, body, transaction),
  });

  api.route({
    method: "delete",
    path: "/v1/events/:id",
    operationId: "cancelEvent",
    summary: "Cancel a platform event (admin)",
    description:
      "The event becomes `cancelled` and stays readable. Every ticket is refunded: each confirmed order becomes `refunded` once the processor has returned its payment, its tickets `refunded`, and its buyer is told (`ticket.refunded`). Orders still being paid fail and any charge is returned. Cancelling a cancelled event changes nothing.",
    tags,
    auth: admin,
    params: s.eventIdParams,
    errors: [404],
    response: s.eventDetailSchema,
    handler: ({ params, transaction }) => tickets.cancelEvent(params.id, (trx) => events.detailIn(trx, params.id), transaction),
  });

  api.route({
    method: "post",
    path: "/v1/events/:id/tickets",
    operationId: "buyTickets",
    summary: "Buy tickets",
    description: [
      `Reserves \`quantity\` seats (1..${s.MAX_TICKETS_PER_ORDER}) of \`kind\` atomically (never more than the capacity, whatever the concurrency: 409 \`insufficient_tickets\` with \`remaining\`, and nothing is charged), charges \`payment_method_id\` and issues one ticket per seat, each with its own door code. Send an \`Idempotency-Key\`.`,
      "201 `confirmed` with the tickets; 402 `payment_declined` when the card is declined (the seats are released); 202 `pending` while a processor error is retried (`GET /v1/ticket-orders/:id`; `ticket.purchased` tells you when it is confirmed). A cancelled or ended event is 409 `invalid_state`; a kind the event does not sell is 400. Free tickets need no payment method.",
      "Without `payment_method_id` (tickets that are not free): 201 `awaiting_payment`, the seats held until `payment_due_at` (TICKET_HOLD_SECONDS, default 15 min) for `POST /v1/ticket-orders/:id/pay`, then released (`expired`). A reward's discount can be applied to such an order (`POST /v1/rewards/redeem` with its `order_id`).",
    ].join("\n\n"),
    tags,
    auth: { scope: "events:write" },
    params: s.eventIdParams,
    body: s.ticketPurchaseSchema,
    errors: [402, 404, 409],
    status: 201,
    response: s.ticketOrderSchema,
    alternatives: { 202: { description: "The payment is being taken", schema: s.ticketOrderSchema } },
    // The answer stored with the reservation (what a crash before the charge ends leaves to replay).
    statusOf: (o: { status: string }) => (o.status === "pending" ? 202 : 201),
    handler: async ({ auth, params, body, transaction, res }) => {
      const { order, paymentFailed, failureCode } = await tickets.purchase(actorOf(auth), params.id, body, transaction);
      if (paymentFailed) return new Reply(402, paymentDeclinedProblem(res, order.failure_reason ?? "The payment failed", failureCode, { order_id: order.order_id }));
      return new Reply(order.status === "pending" ? 202 : 201, order);
    },
  });

  api.route({
    method: "post",
    path: "/v1/ticket-orders/:id/pay",
    operationId: "payTicketOrder",
    summary: "Pay a held ticket order",
    description:
      "Pays an order made without a payment method (`awaiting_payment`), before its `payment_due_at`: charges `amount_due_usd` (the total less any reward discount applied to it) and issues the tickets, as a purchase does (201 `confirmed`, 402 `payment_declined` with the seats released, 202 `pending` while a processor error is retried). Send an `Idempotency-Key`. Another user's order: 404 (an admin, who reads it, 403); not awaiting payment or past its hold: 409 `invalid_state`.",
    tags,
    auth: { scope: "events:write" },
    params: s.orderIdParams,
    body: s.orderPaySchema,
    errors: [402, 404, 409],
    status: 201,
    response: s.ticketOrderSchema,
    alternatives: { 202: { description: "The payment is being taken", schema: s.ticketOrderSchema } },
    statusOf: (o: { status: string }) => (o.status === "pending" ? 202 : 201),
    handler: async ({ auth, params, body, transaction, res }) => {
      const { order, paymentFailed, failureCode } = await tickets.pay(actorOf(auth), params.id, body.payment_method_id, transaction);
      if (paymentFailed) return new Reply(402, paymentDeclinedProblem(res, order.failure_reason ?? "The payment failed", failureCode, { order_id: order.order_id }));
      return new Reply(order.status === "pending" ? 202 : 201, order);
    },
  });

  api.route({
    method: "get",
    path: "/v1/events/:id/tickets",
    operationId: "listMyTickets",
    summary: "Your tickets for an event",
    description: "The caller's tickets (with their codes), newest first.",
    tags,
    auth: { scope: "events:read" },
    params: s.eventIdParams,
    query: s.ticketListQuery,
    errors: [404],
    response: s.ticketListSchema,
    handler: ({ auth, params, query }) => tickets.myTickets(actorOf(auth), params.id, query),
  });

  api.route({
    method: "get",
    path: "/v1/tickets/:id",
    operationId: "getTicket",
    summary: "A ticket",
    description: "Its holder and admins; anyone else 404.",
    tags,
    auth: { scope: "events:read" },
    params: s.ticketIdParams,
    errors: [404],
    response: s.ticketSchema,
    handler: ({ auth, params }) => tickets.getTicket(actorOf(auth), params.id),
  });

  api.route({
    method: "get",
    path: "/v1/ticket-orders/:id",
    operationId: "getTicketOrder",
    summary: "A ticket order",
    description: "Its buyer and admins; anyone else 404.",
    tags,
    auth: { scope: "events:read" },
    params: s.orderIdParams,
    errors: [404],
    response: s.ticketOrderSchema,
    handler: ({ auth, params }) => tickets.getOrder(actorOf(auth), params.id),
  });

  api.route({
    method: "post",
    path: "/v1/events/:id/check-in",
    operationId: "checkInTicket",
    summary: "Check a ticket in at the door (admin)",
    description: "Admits the holder of `code` for this event once: the ticket becomes `checked_in`. A second check-in, or a refunded ticket, is 409 `invalid_state`; a code of no ticket of this event is 404.",
    tags,
    auth: admin,
    params: s.eventIdParams,
    body: s.checkInSchema,
    errors: [404, 409],
    response: s.ticketSchema,
    handler: ({ auth, params, body }) => tickets.checkIn(actorOf(auth), params.id, body.code),
  });

  api.route({
    method: "get",
    path: "/v1/events/:id/calendar.ics",
    operationId: "getEventCalendar",
    summary: "The event as a calendar entry (iCalendar)",
    description:
      "An RFC 5545 `VCALENDAR` with one `VEVENT` (times in UTC, the event's page as `URL`, `STATUS:CANCELLED` once cancelled, `SEQUENCE` raised at each edit): open it to add the event to a calendar, or subscribe to the URL to follow changes.",
    tags,
    auth: { public: true },
    params: s.eventIdParams,
    errors: [404],
    produces: "text/calendar",
    response: z.string().openapi({ description: "An iCalendar document" }),
    handler: async ({ params }) => {
      const event = await events.find(params.id);
      return new Reply(200, calendarOf(event, publicBaseUrl), {
        contentType: "text/calendar; charset=utf-8",
        headers: { "Content-Disposition": `attachment; filename="${event.id}.ics"`, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff" },
      });
    },
  });
}
