import { sql, type Transaction, type Updateable } from "kysely";
import { lockNamed } from "../../db/locks.ts";
import type { Database, Db } from "../../db/database.ts";
import type { WebhookDelivery, WebhookDeliveriesTable, WebhookDeliveryStatus, WebhookSubscription, WebhookSubscriptionsTable } from "./webhooks.tables.ts";
import { newId } from "../../lib/ids.ts";
import { type Page, paginate } from "../../lib/pagination.ts";

/** The start time before which an attempt in flight is abandoned (its process died). */
const leaseExpired = (leaseMs: number) => sql<Date>`now() - make_interval(secs => ${leaseMs / 1000})`;

export type DeliveryRow = WebhookDelivery & { event_type: string };

/** What an attempt needs, read as it is claimed: the delivery, its subscription and its event. */
export interface ClaimedAttempt {
  id: string;
  attempts: number;
  subscription_id: string;
  /** The subscription's owner: its attempts in flight count against the per-user cap. */
  user_id: string;
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
  row: Pick<WebhookSubscription, "id" | "user_id" | "url" | "events" | "description" | "secret" | "all_users">,
): Promise<WebhookSubscription> {
  return db
    .insertInto("webhook_subscriptions")
    .values({ ...row, status: "active" })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Serializes the subscription writes of one user (the per-user cap). */
export async function lockUserSubscriptions(trx: Transaction<Database>, userId: string): Promise<void> {
  await lockNamed(trx, `webhook_subscriptions:${userId}`);
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
  return paginate(query, page, (q) => q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"));
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

/** A delivery to create: an event for a subscription. */
export interface NewDelivery {
  eventId: string;
  subscriptionId: string;
}

/**
 * For each of the events (outbox rows), the active subscriptions that name its type or `*`, existed
 * when it happened, and belong to a user of its audience, or are an all-users subscription of a user
 * who is still an admin: in the events' order, then by subscription (one statement for all).
 */
export async function matchingSubscriptions(db: Db, eventIds: readonly string[]): Promise<NewDelivery[]> {
  if (eventIds.length === 0) return [];
  const rows = await db
    .selectFrom("outbox_events as e")
    .innerJoin("webhook_subscriptions as s", (join) =>
      join
        .on("s.status", "=", "active")
        .on(sql<boolean>`s.events && array[e.event_type, '*']::text[]`)
        .onRef("s.created_at", "<=", "e.created_at"),
    )
    // The users module's view (UsersViews), not a UsersService call: the owner's role stays in this one statement.
    .innerJoin("user_access as u", "u.id", "s.user_id")
    .select(["e.id as eventId", "s.id as subscriptionId"])
    .where("e.id", "=", sql<string>`any(${[...eventIds]}::text[])`)
    .where((eb) => eb.or([sql<boolean>`s.user_id = any(e.audience)`, eb.and([eb("s.all_users", "=", true), eb("u.role", "=", "admin")])]))
    .orderBy("e.created_at")
    .orderBy("e.id")
    .orderBy("s.id")
    .execute();
  return rows;
}

/**
 * One pending delivery per (event, subscription), due now, in the order given (their ids follow it,
 * and so does the order they are claimed in); pairs that exist already are skipped.
 */
export async function insertDeliveries(db: Db, deliveries: readonly NewDelivery[]): Promise<WebhookDelivery[]> {
  if (deliveries.length === 0) return [];
  return db
    .insertInto("webhook_deliveries")
    .values(
      deliveries.map(({ eventId, subscriptionId }) => ({
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
  // Every delivery has its event (a foreign key): the join counts the same rows.
  let query = db.selectFrom("webhook_deliveries as d").innerJoin("outbox_events as e", "e.id", "d.event_id").where("d.subscription_id", "=", subscriptionId);
  if (status) query = query.where("d.status", "=", status);
  return paginate(query, page, (q) => q.selectAll("d").select("e.event_type").orderBy("d.created_at", "desc").orderBy("d.id", "desc"));
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

export interface InFlightCaps {
  perUser: number;
  perSubscription: number;
}

/**
 * Starts the attempts of up to `limit` due deliveries in one statement (webhook_claim_attempts): the
 * oldest first, within each user's and each subscription's caps of attempts in flight (counted under
 * one advisory lock, held until the statement commits, so the caps hold across processes). The same
 * statement makes an attempt abandoned by a dead process (lease expired) wait again, and fails the due
 * deliveries of disabled subscriptions. Each attempt is counted and marked in flight as it starts.
 */
export async function claimAttempts(db: Db, limit: number, leaseMs: number, caps: InFlightCaps): Promise<ClaimedAttempt[]> {
  const { rows } = await sql<ClaimedAttempt>`
    select * from webhook_claim_attempts(${limit}::int, ${leaseMs / 1000}::float8, ${caps.perUser}::int, ${caps.perSubscription}::int)`.execute(db);
  return rows;
}

/** A successful attempt to record. */
export interface SucceededAttempt {
  id: string;
  attempts: number;
  responseCode: number;
  responseBody: string | null;
}

/**
 * Records successful attempts in one statement, each only if it is still its delivery's live attempt
 * (not superseded after its lease expired), and marks their subscriptions healthy (locked in id
 * order, so two processes recording at once never wait on each other in a cycle).
 */
export async function recordSuccesses(db: Db, succeeded: readonly SucceededAttempt[]): Promise<void> {
  if (succeeded.length === 0) return;
  await sql`
    with answers as (
      select * from unnest(${succeeded.map((s) => s.id)}::text[], ${succeeded.map((s) => s.attempts)}::int[],
        ${succeeded.map((s) => s.responseCode)}::int[], ${succeeded.map((s) => s.responseBody)}::text[]) as a(id, attempts, code, body)
    ), done as (
      update webhook_deliveries d
      set status = 'succeeded', in_flight_since = null, next_retry_at = null, last_error = null,
        last_response_code = a.code, last_response_body = a.body, updated_at = now()
      from answers a
      where d.id = a.id and d.attempts = a.attempts and d.status = 'pending'
      returning d.subscription_id
    ), recovered as (
      select s.id from webhook_subscriptions s
      where s.id in (select subscription_id from done) and s.failing_since is not null
      order by s.id for update
    )
    update webhook_subscriptions s set failing_since = null from recovered r where s.id = r.id`.execute(db);
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

export async function disableSubscription(db: Db, id: string, reason: string): Promise<void> {
  await db
    .updateTable("webhook_subscriptions")
    .set({ status: "disabled", disabled_reason: reason, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("status", "=", "active")
    .execute();
}
