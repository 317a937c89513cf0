import { type Kysely, sql } from "kysely";

// Who an event concerns, and the per-owner caps of webhook attempts in flight
// (docs/integrators/webhooks.md#events).
export async function up(db: Kysely<any>): Promise<void> {
  // The users an event concerns, named by its producer; a subscription gets only its owner's events.
  // Events recorded before this column reach nobody but admins' all-users subscriptions (fail closed).
  await db.schema.alterTable("outbox_events").addColumn("audience", sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`)).execute();
  // An admin's subscription to every user's events (honoured only while its owner is an admin).
  await db.schema.alterTable("webhook_subscriptions").addColumn("all_users", "boolean", (c) => c.notNull().defaultTo(false)).execute();
  await sql`create index webhook_subscriptions_all_users_idx on webhook_subscriptions (created_at) where all_users and status = 'active'`.execute(db);

  // The attempts of a subscription in flight (counted against the caps before every claim): few rows.
  await sql`create index webhook_deliveries_in_flight_idx on webhook_deliveries (subscription_id) where status = 'pending' and in_flight_since is not null`.execute(
    db,
  );
  // The due deliveries of a subscription waiting for a slot, oldest first (woken as slots free up).
  await sql`create index webhook_deliveries_waiting_idx on webhook_deliveries (subscription_id, next_retry_at, id) where status = 'pending' and in_flight_since is null`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists webhook_deliveries_waiting_idx`.execute(db);
  await sql`drop index if exists webhook_deliveries_in_flight_idx`.execute(db);
  await sql`drop index if exists webhook_subscriptions_all_users_idx`.execute(db);
  await db.schema.alterTable("webhook_subscriptions").dropColumn("all_users").execute();
  await db.schema.alterTable("outbox_events").dropColumn("audience").execute();
}
