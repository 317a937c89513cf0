import { sql, type Transaction, type Updateable } from "kysely";
import type { Database, WebhookDelivery, WebhookDeliveriesTable, WebhookDeliveryStatus, WebhookSubscription, WebhookSubscriptionsTable, Db } from "../../db/database.ts";
import { newId } from "../../lib/ids.ts";
import { offsetOf, type Page } from "../../lib/pagination.ts";

/** The start time before which an attempt in flight is abandoned (its process died). */
const leaseExpired = (leaseMs: number) => sql<Date>`now() - make_interval(secs => ${leaseMs / 1000})`;

export type DeliveryRow = WebhookDelivery & { event_type: string };

/** What an attempt needs, read as it is claimed: the delivery, its subscription and its event. */
export interface ClaimedAttempt {
  id: string;
  attempts: number;
  subscription_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  event_id: string;
  event_type: string;
  payload: unknown;
  event_created_at: Date;
}

export function insertSubscription(
  db: Db,
  row: Pick<WebhookSubscription, "id" | "user_id" | "url" | "events" | "description" | "secret">,
): Promise<WebhookSubscription> {
  return db
    .insertInto("webhook_subscriptions")
    .values({ ...row, status: "active" })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Serializes the subscription writes of one user (the per-user cap). */
export async function lockUserSubscriptions(trx: Transaction<Database>, userId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`webhook_subscriptions:${userId}`}, 0))`.execute(trx);
}

export async function countSubscriptions(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom("webhook_subscriptions")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .where("user_id", "=", userId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export function findSubscription(db: Db, userId: string, id: string): Promise<WebhookSubscription | undefined> {
  return db.selectFrom("webhook_subscriptions").selectAll().where("id", "=", id).where("user_id", "=", userId).executeTakeFirst();
}

export async function listSubscriptions(db: Db, userId: string, page: Page): Promise<{ rows: WebhookSubscription[]; total: number }> {
  const query = db.selectFrom("webhook_subscriptions").where("user_id", "=", userId);
  const [rows, total] = await Promise.all([
    query.selectAll().orderBy("created_at", "desc").orderBy("id", "desc").limit(page.limit).offset(offsetOf(page)).execute(),
    query.select((eb) => eb.fn.countAll<string>().as("n")).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

export function updateSubscription(
  db: Db,
  id: string,
  changes: Updateable<WebhookSubscriptionsTable>,
): Promise<WebhookSubscription | undefined> {
  return db
    .updateTable("webhook_subscriptions")
    .set({ ...changes, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteSubscription(db: Db, userId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom("webhook_subscriptions").where("id", "=", id).where("user_id", "=", userId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Active subscriptions that name `eventType` or `*` and existed when the event happened. */
export async function matchingSubscriptionIds(db: Db, eventType: string, eventCreatedAt: Date): Promise<string[]> {
  const rows = await db
    .selectFrom("webhook_subscriptions")
    .select("id")
    .where("status", "=", "active")
    .where("events", "&&", sql<string[]>`array[${eventType}, '*']::text[]`)
    .where("created_at", "<=", eventCreatedAt)
    .execute();
  return rows.map((r) => r.id);
}

/** One pending delivery per subscription; (event, subscription) pairs that exist already are skipped. */
export async function insertDeliveries(db: Db, eventId: string, subscriptionIds: string[]): Promise<WebhookDelivery[]> {
  if (subscriptionIds.length === 0) return [];
  return db
    .insertInto("webhook_deliveries")
    .values(
      subscriptionIds.map((subscriptionId) => ({
        id: newId("webhookDelivery"),
        subscription_id: subscriptionId,
        event_id: eventId,
        status: "pending" as const,
        next_retry_at: sql<Date>`now()`,
      })),
    )
    .onConflict((oc) => oc.columns(["event_id", "subscription_id"]).doNothing())
    .returningAll()
    .execute();
}

function deliveriesWithEvent(db: Db) {
  return db
    .selectFrom("webhook_deliveries as d")
    .innerJoin("outbox_events as e", "e.id", "d.event_id")
    .selectAll("d")
    .select("e.event_type");
}

export async function listDeliveries(
  db: Db,
  subscriptionId: string,
  status: WebhookDeliveryStatus | undefined,
  page: Page,
): Promise<{ rows: DeliveryRow[]; total: number }> {
  let count = db.selectFrom("webhook_deliveries").where("subscription_id", "=", subscriptionId);
  let query = deliveriesWithEvent(db).where("d.subscription_id", "=", subscriptionId);
  if (status) {
    count = count.where("status", "=", status);
    query = query.where("d.status", "=", status);
  }
  const [rows, total] = await Promise.all([
    query.orderBy("d.created_at", "desc").orderBy("d.id", "desc").limit(page.limit).offset(offsetOf(page)).execute(),
    count.select((eb) => eb.fn.countAll<string>().as("n")).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

export function findDelivery(db: Db, subscriptionId: string, id: string): Promise<DeliveryRow | undefined> {
  return deliveriesWithEvent(db).where("d.id", "=", id).where("d.subscription_id", "=", subscriptionId).executeTakeFirst();
}

/** Locks a delivery of `subscriptionId` for a manual retry; `in_flight` while a live attempt holds it. */
export function lockDeliveryForRetry(
  trx: Transaction<Database>,
  subscriptionId: string,
  id: string,
  leaseMs: number,
): Promise<(WebhookDelivery & { in_flight: boolean }) | undefined> {
  return trx
    .selectFrom("webhook_deliveries")
    .selectAll()
    .select(sql<boolean>`coalesce(in_flight_since >= ${leaseExpired(leaseMs)}, false)`.as("in_flight"))
    .where("id", "=", id)
    .where("subscription_id", "=", subscriptionId)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * Starts an attempt: counts it and marks it in flight, if the delivery is pending, its
 * subscription active, and no live attempt holds it (none, or one older than the lease).
 */
export function claimAttempt(db: Db, deliveryId: string, leaseMs: number): Promise<ClaimedAttempt | undefined> {
  return db
    .updateTable("webhook_deliveries as d")
    .from(["webhook_subscriptions as s", "outbox_events as e"])
    .set((eb) => ({
      attempts: eb("d.attempts", "+", 1),
      in_flight_since: sql<Date>`now()`,
      last_attempt_at: sql<Date>`now()`,
      next_retry_at: null,
      updated_at: sql<Date>`now()`,
    }))
    .whereRef("s.id", "=", "d.subscription_id")
    .whereRef("e.id", "=", "d.event_id")
    .where("d.id", "=", deliveryId)
    .where("d.status", "=", "pending")
    .where("s.status", "=", "active")
    .where((eb) => eb.or([eb("d.in_flight_since", "is", null), eb("d.in_flight_since", "<", leaseExpired(leaseMs))]))
    .returning([
      "d.id",
      "d.attempts",
      "d.subscription_id",
      "s.url",
      "s.secret",
      "s.previous_secret",
      "s.previous_secret_expires_at",
      "s.failing_since",
      "d.event_id",
      "e.event_type",
      "e.payload",
      "e.created_at as event_created_at",
    ])
    .executeTakeFirst();
}

/** A pending delivery of a disabled subscription is not sent: it fails (a manual retry can revive it). */
export async function failDeliveryOfDisabledSubscription(db: Db, deliveryId: string, leaseMs: number): Promise<void> {
  await db
    .updateTable("webhook_deliveries as d")
    .from("webhook_subscriptions as s")
    .set({ status: "failed", last_error: "The subscription is disabled", next_retry_at: null, in_flight_since: null, updated_at: sql<Date>`now()` })
    .whereRef("s.id", "=", "d.subscription_id")
    .where("d.id", "=", deliveryId)
    .where("d.status", "=", "pending")
    .where("s.status", "=", "disabled")
    .where((eb) => eb.or([eb("d.in_flight_since", "is", null), eb("d.in_flight_since", "<", leaseExpired(leaseMs))]))
    .execute();
}

export function updateDelivery(
  db: Db,
  id: string,
  changes: Updateable<WebhookDeliveriesTable>,
  guard?: { attempts: number },
): Promise<WebhookDelivery | undefined> {
  let query = db
    .updateTable("webhook_deliveries")
    .set({ ...changes, updated_at: sql<Date>`now()` })
    .where("id", "=", id);
  if (guard) query = query.where("attempts", "=", guard.attempts).where("status", "=", "pending");
  return query.returningAll().executeTakeFirst();
}

/** Marks a failure of the subscription; answers when its failures began (no success since). */
export async function markSubscriptionFailing(db: Db, id: string): Promise<Date | null> {
  const row = await db
    .updateTable("webhook_subscriptions")
    .set({ failing_since: sql<Date>`coalesce(failing_since, now())` })
    .where("id", "=", id)
    .returning("failing_since")
    .executeTakeFirst();
  return row?.failing_since ?? null;
}

export async function markSubscriptionHealthy(db: Db, id: string): Promise<void> {
  await db.updateTable("webhook_subscriptions").set({ failing_since: null }).where("id", "=", id).where("failing_since", "is not", null).execute();
}

export async function disableSubscription(db: Db, id: string, reason: string): Promise<void> {
  await db
    .updateTable("webhook_subscriptions")
    .set({ status: "disabled", disabled_reason: reason, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("status", "=", "active")
    .execute();
}

/**
 * Pending deliveries whose attempt outlived its lease (the sending process died) or whose attempt
 * is long overdue (its job was lost): the recovery sweep queues them again.
 */
export async function strandedDeliveryIds(db: Db, leaseMs: number, overdueMs: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom("webhook_deliveries")
    .select("id")
    .where("status", "=", "pending")
    .where((eb) =>
      eb.or([
        eb("in_flight_since", "<", leaseExpired(leaseMs)),
        eb.and([eb("in_flight_since", "is", null), eb("next_retry_at", "<", sql<Date>`now() - make_interval(secs => ${overdueMs / 1000})`)]),
      ]),
    )
    .orderBy("next_retry_at")
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}
