import { centsToUsd, USD_CHARGE_LIMITS, usdAmount, usdToCents, usdValue } from "../../lib/money.ts";
import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { exampleId, idOf, idParam, instant, plainString, queryBoolean, timestamp } from "../../lib/schema.ts";
import { z } from "../../openapi/zod.ts";
import { EVENT_FORMATS, EVENT_TYPES, TICKET_KINDS } from "./events.tables.ts";

/** Tickets one order may hold. */
export const MAX_TICKETS_PER_ORDER = 20;
export const MAX_SPEAKERS = 50;
export const MAX_SCHEDULE_ITEMS = 100;
export const MAX_ARTISTS = 50;

const date = z.iso.date().openapi({ format: "date", example: "2026-12-01" });

export const eventIdParams = z.object({ id: idParam("event") });
export const ticketIdParams = z.object({ id: idParam("ticket") });
export const orderIdParams = z.object({ id: idParam("order") });

export const eventsQuery = z.object({
  type: z.enum(EVENT_TYPES).optional(),
  location: plainString({ min: 1, max: 200 }).optional().openapi({ description: "Part of the location, any case" }),
  from: date.optional().openapi({ description: "Events still running on or after this date (UTC, inclusive)" }),
  to: date.optional().openapi({ description: "Events starting on or before this date (UTC, inclusive)" }),
  featured: queryBoolean.optional(),
  ...paginationQuery(),
});
export type EventsQuery = z.infer<typeof eventsQuery>;

const ticketPrice = usdAmount
  .refine((v) => v === 0 || (usdToCents(v) >= USD_CHARGE_LIMITS.minCents && usdToCents(v) <= USD_CHARGE_LIMITS.maxCents), {
    message: `must be 0 (free) or a card charge, ${centsToUsd(USD_CHARGE_LIMITS.minCents)}..${centsToUsd(USD_CHARGE_LIMITS.maxCents)}`,
  })
  .openapi({ description: `US dollars per ticket: 0 for free tickets (no payment method needed), else ${centsToUsd(USD_CHARGE_LIMITS.minCents)}..${centsToUsd(USD_CHARGE_LIMITS.maxCents)} (what the card processor charges)` });
const ticketsInput = z
  .strictObject({
    virtual: z
      .strictObject({
        price_usd: ticketPrice,
        capacity: z.number().int().min(1).max(1_000_000).nullable().optional().openapi({ description: "Omitted or null: unlimited" }),
      })
      .optional(),
    in_person: z
      .strictObject({
        price_usd: ticketPrice,
        capacity: z.number().int().min(1).max(1_000_000).openapi({ description: "Seats at the venue" }),
      })
      .optional(),
  })
  .openapi({ description: "The kinds of ticket sold: `virtual` for virtual and hybrid events, `in_person` for in-person and hybrid ones (a kind the format does not offer is refused)" });

/** A speaker reference in the schedule: a position in `speakers` (0-based) or, when editing, a `spk_` id. */
const speakerRef = z.union([z.number().int().min(0).max(MAX_SPEAKERS - 1), plainString({ min: 1, max: 64 })]);

const scheduleItemInput = z.strictObject({
  starts_at: instant,
  ends_at: instant,
  title: plainString({ min: 1, max: 200 }),
  speaker_ids: z.array(speakerRef).max(MAX_SPEAKERS).default([]).openapi({ description: "Positions in `speakers` (0-based integers) or, when editing, the `spk_` ids of the event's speakers" }),
});

const speakerInput = z.strictObject({
  id: plainString({ min: 1, max: 64 }).optional().openapi({ description: "When editing: keep this speaker (`spk_`) under the same id" }),
  name: plainString({ min: 1, max: 120 }),
  bio: plainString({ max: 2_000, multiline: true }).nullable().optional(),
  user_id: plainString({ min: 1, max: 64 }).nullable().optional().openapi({ description: "The speaker's user, when they have one" }),
});

const eventFields = {
  title: plainString({ min: 1, max: 200 }),
  type: z.enum(EVENT_TYPES),
  format: z.enum(EVENT_FORMATS),
  location: plainString({ min: 1, max: 200 }).openapi({ example: "Berlin" }),
  starts_at: instant,
  ends_at: instant,
  featured: z.boolean(),
  description: plainString({ max: 10_000, multiline: true }),
  artist_ids: z.array(plainString({ min: 1, max: 64 })).max(MAX_ARTISTS).openapi({ description: "Artists (users with the artist role) the event features, in order" }),
  tickets: ticketsInput,
  schedule: z.array(scheduleItemInput).max(MAX_SCHEDULE_ITEMS),
  speakers: z.array(speakerInput).max(MAX_SPEAKERS),
};

export const eventCreateSchema = z
  .strictObject({
    ...eventFields,
    featured: eventFields.featured.default(false),
    description: eventFields.description.default(""),
    artist_ids: eventFields.artist_ids.default([]),
    tickets: eventFields.tickets.default({}),
    schedule: eventFields.schedule.default([]),
    speakers: eventFields.speakers.default([]),
  })
  .refine((v) => v.ends_at > v.starts_at, { message: "must be after starts_at", path: ["ends_at"] })
  .openapi("PlatformEventCreate", {
    example: {
      title: "Northern Light: opening night",
      type: "exhibition",
      format: "hybrid",
      location: "Berlin",
      starts_at: "2026-12-01T18:00:00Z",
      ends_at: "2026-12-01T21:00:00Z",
      description: "Twelve harbour paintings, with the artist in conversation.",
      artist_ids: [exampleId("user")],
      tickets: { virtual: { price_usd: 0 }, in_person: { price_usd: 25, capacity: 80 } },
      schedule: [{ starts_at: "2026-12-01T19:00:00Z", ends_at: "2026-12-01T19:45:00Z", title: "In conversation", speaker_ids: [0] }],
      speakers: [{ name: "Ada Brush", bio: "Painter of northern harbours.", user_id: exampleId("user") }],
    },
  });
export type EventCreate = z.infer<typeof eventCreateSchema>;

export const eventPatchSchema = z
  .strictObject({
    title: eventFields.title.optional(),
    type: eventFields.type.optional(),
    format: eventFields.format.optional(),
    location: eventFields.location.optional(),
    starts_at: eventFields.starts_at.optional(),
    ends_at: eventFields.ends_at.optional(),
    featured: eventFields.featured.optional(),
    description: eventFields.description.optional(),
    artist_ids: eventFields.artist_ids.optional(),
    tickets: eventFields.tickets.optional(),
    schedule: eventFields.schedule.optional(),
    speakers: eventFields.speakers.optional(),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { message: "send at least one field" })
  .openapi("PlatformEventPatch", { minProperties: 1, example: { featured: true, tickets: { virtual: { price_usd: 5, capacity: null }, in_person: { price_usd: 25, capacity: 100 } } } });
export type EventPatch = z.infer<typeof eventPatchSchema>;

const ticketsView = z
  .object({
    virtual: z
      .object({
        price_usd: usdValue,
        available: z.boolean().openapi({ description: "On sale now: the event is scheduled, has not ended, and has seats left" }),
        capacity: z.number().int().nullable().openapi({ description: "null: unlimited" }),
        remaining: z.number().int().nullable().openapi({ description: "null: unlimited" }),
      })
      .optional(),
    in_person: z
      .object({
        price_usd: usdValue,
        available: z.boolean(),
        capacity: z.number().int(),
        remaining: z.number().int().openapi({ description: "Seats neither sold nor held by an order being paid" }),
      })
      .optional(),
  })
  .openapi({ description: "Only the kinds the event's format offers" });

const eventSummary = {
  event_id: idOf("event"),
  title: z.string(),
  type: z.enum(EVENT_TYPES),
  format: z.enum(EVENT_FORMATS),
  location: z.string(),
  starts_at: timestamp,
  ends_at: timestamp,
  artists_count: z.number().int(),
  featured: z.boolean(),
  status: z.enum(["scheduled", "cancelled"]),
};

export const eventSummarySchema = z.object(eventSummary).openapi("PlatformEvent");
export const eventListSchema = z.object({ data: z.array(eventSummarySchema), pagination: paginationSchema }).openapi("PlatformEventList");

export const eventDetailSchema = z
  .object({
    ...eventSummary,
    description: z.string(),
    artists: z.array(z.object({ id: idOf("user"), name: z.string() })),
    tickets: ticketsView,
    schedule: z.array(z.object({ starts_at: timestamp, ends_at: timestamp, title: z.string(), speaker_ids: z.array(idOf("speaker")) })),
    speakers: z.array(z.object({ id: idOf("speaker"), name: z.string(), bio: z.string().nullable(), user_id: idOf("user").nullable() })),
    cancelled_at: timestamp.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi("PlatformEventDetail");

export const ticketPurchaseSchema = z
  .strictObject({
    kind: z.enum(TICKET_KINDS),
    quantity: z.number().int().min(1).max(MAX_TICKETS_PER_ORDER).openapi({ description: `1..${MAX_TICKETS_PER_ORDER} tickets in one order` }),
    payment_method_id: plainString({ min: 1, max: 64 })
      .optional()
      .openapi({ example: "pm_card_visa", description: "One of your saved methods (`pm_…`) or a test card id. Omitted: the seats are held `awaiting_payment` until `payment_due_at` (pay with `POST /v1/ticket-orders/:id/pay`; a reward's discount may be applied first). Free tickets need none." }),
  })
  .openapi("TicketPurchase", { example: { kind: "in_person", quantity: 2, payment_method_id: exampleId("paymentMethod") } });
export type TicketPurchase = z.infer<typeof ticketPurchaseSchema>;

export const ticketSchema = z
  .object({
    ticket_id: idOf("ticket"),
    order_id: idOf("order"),
    event_id: idOf("event"),
    holder_id: idOf("user"),
    kind: z.enum(TICKET_KINDS),
    code: z.string().openapi({ description: "The door code: 26 characters, unguessable; shown to its holder and admins only" }),
    status: z.enum(["valid", "checked_in", "refunded"]),
    checked_in_at: timestamp.nullable(),
    created_at: timestamp,
  })
  .openapi("Ticket");

export const ticketListSchema = z.object({ data: z.array(ticketSchema), pagination: paginationSchema }).openapi("TicketList");
export const ticketListQuery = z.object({ ...paginationQuery() });

export const ticketOrderSchema = z
  .object({
    order_id: idOf("order"),
    event_id: idOf("event"),
    buyer_id: idOf("user"),
    kind: z.enum(TICKET_KINDS),
    quantity: z.number().int(),
    unit_price_usd: usdValue,
    total_usd: usdValue,
    discount_usd: usdValue.openapi({ description: "A reward's discount applied while the order awaited payment" }),
    amount_due_usd: usdValue.openapi({ description: "total_usd - discount_usd: what is charged" }),
    status: z.enum(["awaiting_payment", "pending", "confirmed", "failed", "expired", "refunded"]).openapi({
      description:
        "awaiting_payment: seats held for a later payment until payment_due_at (then expired, seats released); pending while the payment is taken, then confirmed (tickets issued) or failed (seats released); refunded when the event is cancelled",
    }),
    payment_due_at: timestamp.nullable().openapi({ description: "Until when an order awaiting payment holds its seats" }),
    transaction_id: idOf("transaction").nullable().openapi({ description: "The `ticket_purchase` transaction; null for free tickets" }),
    tickets: z.array(ticketSchema).openapi({ description: "Issued when the order is confirmed" }),
    failure_reason: z.string().nullable(),
    created_at: timestamp,
    confirmed_at: timestamp.nullable(),
    refunded_at: timestamp.nullable(),
  })
  .openapi("TicketOrder");

export const orderPaySchema = z
  .strictObject({ payment_method_id: plainString({ min: 1, max: 64 }).openapi({ example: "pm_card_visa", description: "One of your saved methods (`pm_…`) or a test card id" }) })
  .openapi("TicketOrderPay", { example: { payment_method_id: exampleId("paymentMethod") } });

export const checkInSchema = z
  .strictObject({ code: plainString({ min: 1, max: 64 }).openapi({ description: "The ticket's code (any case; spaces and dashes ignored)" }) })
  .openapi("TicketCheckIn", { example: { code: "4K7Q-9XM2-HB3T-WN8C-R5JD-6Y" } });
