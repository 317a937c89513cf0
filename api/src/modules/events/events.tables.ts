import type { ColumnType, Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";

export const EVENT_TYPES = ["exhibition", "talk", "workshop", "auction", "fair"] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export const EVENT_FORMATS = ["virtual", "in_person", "hybrid"] as const;
export type EventFormat = (typeof EVENT_FORMATS)[number];
export const TICKET_KINDS = ["virtual", "in_person"] as const;
export type TicketKind = (typeof TICKET_KINDS)[number];

/** A speaker of an event (`spk_…` ids the schedule refers to); `user_id` when the speaker is a user. */
export interface Speaker {
  id: string;
  name: string;
  bio: string | null;
  user_id: string | null;
}

/** One session of an event's schedule (UTC), within the event's times. */
export interface ScheduleItem {
  starts_at: string;
  ends_at: string;
  title: string;
  speaker_ids: string[];
}

/**
 * A platform event (`evt_…`). Each kind of ticket the format offers has a price (`*_price_cents`,
 * null: that kind is not offered) and a capacity (null: unlimited, virtual only); `*_sold` counts
 * seats of pending and confirmed orders. A purchase reserves with one conditional UPDATE and the
 * table's check constraints keep `*_sold` within the capacity: no oversell under any concurrency.
 * `schedule` and `speakers` are jsonb documents of the event (ScheduleItem[], Speaker[]).
 */
export interface PlatformEventsTable {
  id: string;
  title: string;
  type: EventType;
  format: EventFormat;
  location: string;
  description: string;
  starts_at: Timestamp;
  ends_at: Timestamp;
  featured: ColumnType<boolean, boolean | undefined, boolean>;
  status: ColumnType<"scheduled" | "cancelled", "scheduled" | "cancelled" | undefined, "scheduled" | "cancelled">;
  virtual_price_cents: ColumnType<bigint | null, bigint | null, bigint | null>;
  virtual_capacity: number | null;
  virtual_sold: ColumnType<number, number | undefined, number>;
  in_person_price_cents: ColumnType<bigint | null, bigint | null, bigint | null>;
  in_person_capacity: number | null;
  in_person_sold: ColumnType<number, number | undefined, number>;
  schedule: ColumnType<ScheduleItem[], string, string>;
  speakers: ColumnType<Speaker[], string, string>;
  /** The calendar's SEQUENCE: one more at each edit and at the cancellation. */
  sequence: ColumnType<number, number | undefined, number>;
  created_by: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  cancelled_at: NullableTimestamp;
  cancel_reason: string | null;
}

/** The artists an event features, in the order given. */
export interface EventArtistsTable {
  event_id: string;
  artist_id: string;
  position: number;
}

export type TicketOrderStatus = "awaiting_payment" | "pending" | "confirmed" | "failed" | "expired" | "refunded";

/**
 * An order of `quantity` tickets of one kind (`ord_…`): its seats, price and discount. `status` is
 * the seats': `awaiting_payment` while held for a later payment (until `payment_due_at`, then
 * `expired`), `pending` while paid, then `confirmed` (tickets issued) or `failed` (seats released);
 * a confirmed order becomes `refunded` when its event is cancelled and the refund is through.
 * `transaction_id` is its `ticket_purchase` purchase (payments/purchases.service.ts; null for free tickets
 * and held seats), which holds its payment: the charge, the fee, the stage of a refund, a failure.
 */
export interface TicketOrdersTable {
  id: string;
  event_id: string;
  buyer_id: string;
  kind: TicketKind;
  quantity: number;
  unit_price_cents: ColumnType<bigint, bigint, bigint>;
  total_cents: ColumnType<bigint, bigint, bigint>;
  /** A reward's discount applied while awaiting payment: the amount charged is total - discount. */
  discount_cents: ColumnType<bigint, bigint | undefined, bigint>;
  payment_due_at: NullableTimestamp;
  transaction_id: string | null;
  status: TicketOrderStatus;
  /** Why an order that never had a purchase ended (its hold expired, or its event was cancelled while held); a paid order's failure is its purchase's. */
  failure_reason: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** When an order without a purchase (free, or its discount paid it all) was confirmed; a paid order's is its purchase's `completed_at` (null here, by a check). */
  confirmed_at: NullableTimestamp;
  /** When it failed, its seats released: the order's own, a paid one's too (a cancellation releases them while its purchase's charge is still to come back). */
  failed_at: NullableTimestamp;
  /** When an order without a purchase was refunded; a paid order's is its purchase's `refunded_at` (null here, by a check). */
  refunded_at: NullableTimestamp;
}

export type TicketStatus = "valid" | "checked_in" | "refunded";

/** One admission (`tkt_…`) with its unguessable door code; checked in once. */
export interface TicketsTable {
  id: string;
  order_id: string;
  event_id: string;
  holder_id: string;
  kind: TicketKind;
  code: string;
  status: TicketStatus;
  checked_in_at: NullableTimestamp;
  checked_in_by: string | null;
  created_at: Timestamp;
}

export interface EventsTables {
  platform_events: PlatformEventsTable;
  event_artists: EventArtistsTable;
  ticket_orders: TicketOrdersTable;
  tickets: TicketsTable;
}

export type PlatformEvent = Selectable<PlatformEventsTable>;
export type TicketOrder = Selectable<TicketOrdersTable>;
export type Ticket = Selectable<TicketsTable>;
