import { type Kysely, sql } from "kysely";

// Platform events and their tickets (docs/integrators/events.md). No oversell is the database's
// rule: a purchase reserves with one conditional UPDATE of `*_sold`, checked against the capacity.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("platform_events")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("title", "text", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull().check(sql`type in ('exhibition', 'talk', 'workshop', 'auction', 'fair')`))
    .addColumn("format", "text", (c) => c.notNull().check(sql`format in ('virtual', 'in_person', 'hybrid')`))
    .addColumn("location", "text", (c) => c.notNull())
    .addColumn("description", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("starts_at", "timestamptz", (c) => c.notNull())
    .addColumn("ends_at", "timestamptz", (c) => c.notNull())
    .addColumn("featured", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("status", "text", (c) => c.notNull().defaultTo("scheduled").check(sql`status in ('scheduled', 'cancelled')`))
    .addColumn("virtual_price_cents", "bigint", (c) => c.check(sql`virtual_price_cents >= 0`))
    .addColumn("virtual_capacity", "integer", (c) => c.check(sql`virtual_capacity > 0`))
    .addColumn("virtual_sold", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("in_person_price_cents", "bigint", (c) => c.check(sql`in_person_price_cents >= 0`))
    .addColumn("in_person_capacity", "integer", (c) => c.check(sql`in_person_capacity > 0`))
    .addColumn("in_person_sold", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("schedule", "jsonb", (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn("speakers", "jsonb", (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    // The calendar's SEQUENCE (RFC 5545): one more at each edit and at the cancellation.
    .addColumn("sequence", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("created_by", "text", (c) => c.notNull().references("users.id"))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("cancelled_at", "timestamptz")
    .addColumn("cancel_reason", "text")
    .addCheckConstraint("platform_events_times", sql`ends_at > starts_at`)
    .addCheckConstraint("platform_events_virtual_no_oversell", sql`virtual_sold >= 0 and (virtual_capacity is null or virtual_sold <= virtual_capacity)`)
    .addCheckConstraint("platform_events_in_person_no_oversell", sql`in_person_sold >= 0 and (in_person_capacity is null or in_person_sold <= in_person_capacity)`)
    // An offered in-person kind always has a capacity (the venue's); virtual may be unlimited.
    .addCheckConstraint("platform_events_in_person_capacity", sql`(in_person_price_cents is null) = (in_person_capacity is null)`)
    .execute();
  await sql`create index platform_events_upcoming_idx on platform_events (starts_at, id)`.execute(db);
  await sql`create index platform_events_type_idx on platform_events (type, starts_at)`.execute(db);

  await db.schema
    .createTable("event_artists")
    .addColumn("event_id", "text", (c) => c.notNull().references("platform_events.id").onDelete("cascade"))
    .addColumn("artist_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("position", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("event_artists_pk", ["event_id", "artist_id"])
    .execute();

  await db.schema
    .createTable("ticket_orders")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("event_id", "text", (c) => c.notNull().references("platform_events.id"))
    .addColumn("buyer_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("kind", "text", (c) => c.notNull().check(sql`kind in ('virtual', 'in_person')`))
    .addColumn("quantity", "integer", (c) => c.notNull().check(sql`quantity between 1 and 20`))
    .addColumn("unit_price_cents", "bigint", (c) => c.notNull().check(sql`unit_price_cents >= 0`))
    .addColumn("total_cents", "bigint", (c) => c.notNull().check(sql`total_cents >= 0`))
    .addColumn("discount_cents", "bigint", (c) => c.notNull().defaultTo(0).check(sql`discount_cents >= 0 and discount_cents <= total_cents`))
    // Seats held for a later payment until then (awaiting_payment).
    .addColumn("payment_due_at", "timestamptz")
    .addColumn("payment_method_id", "text")
    .addColumn("transaction_id", "text", (c) => c.references("transactions.id"))
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('awaiting_payment', 'pending', 'confirmed', 'failed', 'expired', 'refunded')`))
    .addColumn("refund_stage", "text", (c) => c.check(sql`refund_stage in ('refunding', 'refunded')`))
    // Set before the processor is first asked: from then on a charge may exist under the order's key.
    .addColumn("charge_started_at", "timestamptz")
    .addColumn("charge_id", "text")
    .addColumn("fee_cents", "bigint")
    .addColumn("failure_code", "text")
    .addColumn("failure_reason", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("confirmed_at", "timestamptz")
    .addColumn("failed_at", "timestamptz")
    .addColumn("refunded_at", "timestamptz")
    .execute();
  await sql`create index ticket_orders_buyer_idx on ticket_orders (buyer_id, event_id, created_at desc)`.execute(db);
  await sql`create index ticket_orders_event_idx on ticket_orders (event_id, status)`.execute(db);
  await sql`create index ticket_orders_pending_idx on ticket_orders (updated_at) where status = 'pending'`.execute(db);

  await db.schema
    .createTable("tickets")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("order_id", "text", (c) => c.notNull().references("ticket_orders.id"))
    .addColumn("event_id", "text", (c) => c.notNull().references("platform_events.id"))
    .addColumn("holder_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("kind", "text", (c) => c.notNull().check(sql`kind in ('virtual', 'in_person')`))
    // 128 random bits: a code is found only by whoever was given it.
    .addColumn("code", "text", (c) => c.notNull().unique())
    .addColumn("status", "text", (c) => c.notNull().defaultTo("valid").check(sql`status in ('valid', 'checked_in', 'refunded')`))
    .addColumn("checked_in_at", "timestamptz")
    .addColumn("checked_in_by", "text", (c) => c.references("users.id"))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`create index tickets_holder_idx on tickets (holder_id, event_id, created_at desc)`.execute(db);
  await sql`create index tickets_order_idx on tickets (order_id)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("tickets").ifExists().execute();
  await db.schema.dropTable("ticket_orders").ifExists().execute();
  await db.schema.dropTable("event_artists").ifExists().execute();
  await db.schema.dropTable("platform_events").ifExists().execute();
}
