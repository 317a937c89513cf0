import { type Kysely, sql } from "kysely";

// Webhook subscriptions and their deliveries (one per event and subscription). Secrets are stored
// as issued: HMAC signing needs the secret itself, so a hash cannot serve
// (docs/operators/production.md#secrets).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("webhook_subscriptions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("url", "text", (c) => c.notNull())
    .addColumn("events", sql`text[]`, (c) => c.notNull())
    .addColumn("description", "text")
    .addColumn("status", "text", (c) => c.notNull().defaultTo("active").check(sql`status in ('active', 'disabled')`))
    .addColumn("disabled_reason", "text")
    .addColumn("secret", "text", (c) => c.notNull())
    // The secret before the last rotation keeps signing beside the new one until it expires.
    .addColumn("previous_secret", "text")
    .addColumn("previous_secret_expires_at", "timestamptz")
    // First failed attempt since the last success: 3 days of failures disable the subscription.
    .addColumn("failing_since", "timestamptz")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint("webhook_subscriptions_previous_secret", sql`(previous_secret is null) = (previous_secret_expires_at is null)`)
    .execute();
  await db.schema.createIndex("webhook_subscriptions_user_idx").on("webhook_subscriptions").columns(["user_id", "created_at"]).execute();
  // Fan-out: the active subscriptions whose events overlap {event, '*'}.
  await sql`create index webhook_subscriptions_fanout_idx on webhook_subscriptions using gin (events) where status = 'active'`.execute(db);

  await db.schema
    .createTable("webhook_deliveries")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("subscription_id", "text", (c) => c.notNull().references("webhook_subscriptions.id").onDelete("cascade"))
    .addColumn("event_id", "text", (c) => c.notNull().references("outbox_events.id").onDelete("cascade"))
    .addColumn("status", "text", (c) => c.notNull().defaultTo("pending").check(sql`status in ('pending', 'succeeded', 'failed')`))
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    // Set while an attempt is being sent; an old value means the sending process died.
    .addColumn("in_flight_since", "timestamptz")
    .addColumn("next_retry_at", "timestamptz")
    .addColumn("last_attempt_at", "timestamptz")
    .addColumn("last_response_code", "integer")
    .addColumn("last_response_body", "text")
    .addColumn("last_error", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    // A retried fan-out never doubles a delivery.
    .addUniqueConstraint("webhook_deliveries_event_subscription_key", ["event_id", "subscription_id"])
    .execute();
  await db.schema
    .createIndex("webhook_deliveries_subscription_idx")
    .on("webhook_deliveries")
    .columns(["subscription_id", "created_at", "id"])
    .execute();
  await sql`create index webhook_deliveries_pending_idx on webhook_deliveries (in_flight_since, next_retry_at) where status = 'pending'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("webhook_deliveries").ifExists().execute();
  await db.schema.dropTable("webhook_subscriptions").ifExists().execute();
}
