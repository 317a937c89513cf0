import { type RawBuilder, sql, type Transaction, type Updateable } from "kysely";
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

/**
 * Active subscriptions that name `eventType` or `*`, existed when the event happened, and belong to
 * a user of the event's audience, or are an all-users subscription of a user who is still an admin.
 */
export async function matchingSubscriptionIds(db: Db, eventType: string, eventCreatedAt: Date, audience: readonly string[]): Promise<string[]> {
  const rows = await db
    .selectFrom("webhook_subscriptions as s")
    .innerJoin("users as u", "u.id", "s.user_id")
    .select("s.id")
    .where("s.status", "=", "active")
    .where("s.events", "&&", sql<string[]>`array[${eventType}, '*']::text[]`)
    .where("s.created_at", "<=", eventCreatedAt)
    .where((eb) =>
      eb.or([
        eb("s.user_id", "=", sql<string>`any(${[...audience]}::text[])`),
        eb.and([eb("s.all_users", "=", true), eb("u.role", "=", "admin")]),
      ]),
    )
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

/** Live attempts (lease not expired) of the user in `userId` (a column or a value), all its subscriptions. */
const userInFlight = (userId: RawBuilder<unknown>, leaseMs: number) => sql<string>`webhook_user_in_flight(${userId}, ${leaseExpired(leaseMs)})`;

/**
 * Starts an attempt in one statement: counts it and marks it in flight, if the delivery is pending,
 * its subscription active, no live attempt holds it (none, or one older than the lease), and its
 * owner and subscription are under their caps of attempts in flight (webhook_take_slot: counted
 * under the owner's advisory lock, held until this statement commits, so the caps hold across
 * processes). A delivery of a disabled subscription fails in the same statement (a manual retry can
 * revive it). None: settled, in flight elsewhere, disabled, or its owner at a cap (it waits).
 */
export async function claimAttempt(db: Db, deliveryId: string, leaseMs: number, caps: InFlightCaps): Promise<ClaimedAttempt | undefined> {
  const unheld = sql<boolean>`(d.in_flight_since is null or d.in_flight_since < ${leaseExpired(leaseMs)})`;
  return db
    .with("failed_disabled", (qc) =>
      qc
        .updateTable("webhook_deliveries as d")
        .from("webhook_subscriptions as s")
        .set({ status: "failed", last_error: "The subscription is disabled", next_retry_at: null, in_flight_since: null, updated_at: sql<Date>`now()` })
        .whereRef("s.id", "=", "d.subscription_id")
        .where("d.id", "=", deliveryId)
        .where("d.status", "=", "pending")
        .where("s.status", "=", "disabled")
        .where(unheld)
        .returning("d.id"),
    )
    .updateTable("webhook_deliveries as d")
    .from(["webhook_subscriptions as s", "outbox_events as e"])
    .set(startAttempt)
    .whereRef("s.id", "=", "d.subscription_id")
    .whereRef("e.id", "=", "d.event_id")
    .where("d.id", "=", deliveryId)
    .where("d.status", "=", "pending")
    .where("s.status", "=", "active")
    .where(unheld)
    .where(sql<boolean>`webhook_take_slot(s.user_id, d.subscription_id, ${leaseMs / 1000}::float8, ${caps.perUser}::int, ${caps.perSubscription}::int)`)
    .returning(CLAIMED_COLUMNS)
    .executeTakeFirst();
}

/** What starting an attempt writes: counted, in flight from now, no longer waiting for a time. */
const startAttempt = {
  attempts: sql<number>`d.attempts + 1`,
  in_flight_since: sql<Date>`now()`,
  last_attempt_at: sql<Date>`now()`,
  next_retry_at: null,
  updated_at: sql<Date>`now()`,
};

const CLAIMED_COLUMNS = [
  "d.id",
  "d.attempts",
  "d.subscription_id",
  "s.user_id",
  "s.url",
  "s.secret",
  "s.previous_secret",
  "s.previous_secret_expires_at",
  "s.failing_since",
  "d.event_id",
  "e.event_type",
  "e.payload",
  "e.created_at as event_created_at",
] as const;

/**
 * An attempt started for a delivery by startWaitingAttempts, if it is still that delivery's live
 * attempt (not settled, not superseded by a newer attempt after its lease expired).
 */
export function reservedAttempt(db: Db, deliveryId: string, attempts: number, leaseMs: number): Promise<ClaimedAttempt | undefined> {
  return db
    .selectFrom("webhook_deliveries as d")
    .innerJoin("webhook_subscriptions as s", "s.id", "d.subscription_id")
    .innerJoin("outbox_events as e", "e.id", "d.event_id")
    .select(CLAIMED_COLUMNS)
    .where("d.id", "=", deliveryId)
    .where("d.attempts", "=", attempts)
    .where("d.status", "=", "pending")
    .where("d.in_flight_since", ">=", leaseExpired(leaseMs))
    .executeTakeFirst();
}

/** A successful attempt to record as its owner's slot is handed on (webhook_succeed_attempt). */
export interface SucceededAttempt {
  id: string;
  attempts: number;
  responseCode: number;
  responseBody: string | null;
}

/**
 * Starts attempts of a user's deliveries waiting for a slot, oldest first, as many as the user's
 * free slots and each subscription's free slots allow, in one statement (webhook_start_waiting:
 * nothing and no lock when none waits, which is most calls); with `succeeded`, the same statement
 * first records that attempt's success (if it is still the delivery's live attempt) and marks its
 * subscription healthy. With `keepFirst` the caller sends the first itself: its queued job, which
 * would only find it in flight, is removed in the same statement (so it does not wait ahead of
 * other users' jobs). The caller queues the others' jobs; one lost to a crash is the sweep's once
 * its lease expires.
 */
export async function startWaitingAttempts(
  db: Db,
  userId: string,
  leaseMs: number,
  caps: InFlightCaps,
  keepFirst: boolean,
  succeeded?: SucceededAttempt,
): Promise<ClaimedAttempt[]> {
  const slots = sql`${userId}, ${leaseMs / 1000}::float8, ${caps.perUser}::int, ${caps.perSubscription}::int`;
  const started = succeeded
    ? sql`webhook_succeed_attempt(${succeeded.id}, ${succeeded.attempts}::int, ${succeeded.responseCode}::int, ${succeeded.responseBody}::text, ${slots})`
    : sql`webhook_start_waiting(${slots})`;
  const { rows } = await sql<ClaimedAttempt>`
    select w.id, w.attempts, w.subscription_id, w.user_id, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at,
      w.failing_since, w.event_id, w.event_type, w.payload, w.event_created_at,
      case when ${keepFirst} and w.ordinality = 1 then (graphile_worker.remove_job(w.id)).id end as removed_job_id
    from ${started} with ordinality w
    order by w.ordinality`.execute(db);
  return rows;
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

/**
 * Pending deliveries whose attempt outlived its lease (the sending process died) or whose attempt
 * is long overdue (its job was lost): the recovery sweep queues them again. An overdue delivery of
 * an active subscription whose owner has an attempt in flight is left out: it waits for a slot, and
 * that attempt's end starts it (reserveWaitingAttempts), so the sweep does not churn a slow user's backlog.
 */
export async function strandedDeliveryIds(db: Db, leaseMs: number, overdueMs: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom("webhook_deliveries as d")
    .innerJoin("webhook_subscriptions as s", "s.id", "d.subscription_id")
    .select("d.id")
    .where("d.status", "=", "pending")
    .where((eb) =>
      eb.or([
        eb("d.in_flight_since", "<", leaseExpired(leaseMs)),
        eb.and([
          eb("d.in_flight_since", "is", null),
          eb("d.next_retry_at", "<", sql<Date>`now() - make_interval(secs => ${overdueMs / 1000})`),
          eb.or([
            eb("s.status", "<>", "active"),
            sql<boolean>`${userInFlight(sql.ref("s.user_id"), leaseMs)} = 0`,
          ]),
        ]),
      ]),
    )
    .orderBy("d.next_retry_at")
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}
