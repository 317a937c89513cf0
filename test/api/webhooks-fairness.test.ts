/**
 * One user's slow receivers cannot starve the others: a user's attempts in flight are capped (per
 * user and per subscription), deliveries over the cap wait without an attempt being counted, and
 * every one of them is sent once the receiver answers again.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { recordEvent } from "../../api/src/jobs/outbox.ts";
import { attemptLeaseMs } from "../../api/src/modules/webhooks/webhooks.delivery.ts";
import { claimAttempt, startWaitingAttempts, strandedDeliveryIds } from "../../api/src/modules/webhooks/webhooks.repository.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { newId } from "../../api/src/lib/ids.ts";
import { waitFor } from "../support/wait.ts";
import { createUser, type TestUser } from "./helpers.ts";
import { type Reply, useIsolatedTestApi, useReceiver } from "./webhooks.support.ts";

const PER_USER = 2;
const PER_SUBSCRIPTION = 1;
// Four slots; attempts that hang stay in flight for the whole test (60 s timeout), so only the caps free slots.
const api = useIsolatedTestApi({
  WEBHOOK_CONCURRENCY: "4",
  WEBHOOK_MAX_IN_FLIGHT_PER_USER: String(PER_USER),
  WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: String(PER_SUBSCRIPTION),
  WEBHOOK_TIMEOUT_SECONDS: "60",
  WEBHOOK_RETRY_SCHEDULE: "1",
});
const receiver = useReceiver();

async function subscribe(user: TestUser, url: string): Promise<string> {
  const res = await api.request("POST", "/v1/webhooks", { token: user.token, body: { url, events: ["offer.created"] } });
  expect(res.status).toBe(201);
  return res.body.id;
}

function emit(offerId: string, audience: string[]): Promise<string> {
  return api.db.transaction().execute((trx) => recordEvent(trx, "offer.created", { offer_id: offerId }, audience));
}

function deliveriesOf(subscriptionIds: string[]) {
  return api.db.selectFrom("webhook_deliveries").selectAll().where("subscription_id", "in", subscriptionIds).orderBy("created_at").execute();
}

/** Requests held open at a receiver until `release()`: counts how many are open at once, overall and per path. */
function holdingReceiver() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const open = new Map<string, number>();
  const stats = { open: 0, maxOpen: 0, maxOpenPerPath: 0 };
  const script = async (_n: number, req: { path: string }): Promise<Reply> => {
    stats.open++;
    open.set(req.path, (open.get(req.path) ?? 0) + 1);
    stats.maxOpen = Math.max(stats.maxOpen, stats.open);
    stats.maxOpenPerPath = Math.max(stats.maxOpenPerPath, open.get(req.path)!);
    await gate;
    stats.open--;
    open.set(req.path, open.get(req.path)! - 1);
    return { status: 200, body: "late but fine" };
  };
  return { script, stats, release };
}

describe("fair sharing of the webhook runner", () => {
  it("delivers another user's event while one user's receiver hangs, and never has more than the caps in flight", async () => {
    const slowUser = await createUser(api);
    const otherUser = await createUser(api);
    const slow = holdingReceiver();
    const slowUrls = [receiver.endpoint(slow.script), receiver.endpoint(slow.script), receiver.endpoint(slow.script)];
    const slowSubscriptions: string[] = [];
    for (const url of slowUrls) slowSubscriptions.push(await subscribe(slowUser, url));
    const otherUrl = receiver.endpoint();
    const otherSubscription = await subscribe(otherUser, otherUrl);

    try {
      // 3 events x 3 subscriptions: 9 deliveries to a receiver that holds every request.
      for (let n = 1; n <= 3; n++) await emit(`off_slow_${n}`, [slowUser.id]);
      await waitFor(async () => ((await deliveriesOf(slowSubscriptions)).length === 9 ? true : null), { what: "the slow user's 9 deliveries" });
      await waitFor(() => (slow.stats.open === PER_USER ? true : null), { what: `${PER_USER} requests held at the slow receiver` });

      // The other user's event goes out while the slow user's attempts are all still hanging.
      const otherEvent = await emit("off_other", [otherUser.id]);
      const [otherRequest] = await receiver.waitForRequests(otherUrl, 1);
      expect(JSON.parse(otherRequest!.body)).toMatchObject({ id: otherEvent, offer_id: "off_other" });
      const [otherDelivery] = await waitFor(async () => {
        const rows = await deliveriesOf([otherSubscription]);
        return rows[0]?.status === "succeeded" ? rows : null;
      }, { what: "the other user's delivery to succeed" });
      expect(otherDelivery).toMatchObject({ attempts: 1, last_response_code: 200 });

      // Meanwhile the slow user has exactly its cap in flight, one per subscription at most; the
      // rest wait with no attempt counted and their due time unchanged.
      expect(slow.stats.open).toBe(PER_USER);
      expect(slowUrls.flatMap((url) => receiver.requests(url))).toHaveLength(PER_USER);
      const held = await deliveriesOf(slowSubscriptions);
      const inFlight = held.filter((d) => d.in_flight_since !== null);
      expect(inFlight).toHaveLength(PER_USER);
      expect(new Set(inFlight.map((d) => d.subscription_id)).size).toBe(PER_USER);
      for (const d of inFlight) expect(d).toMatchObject({ status: "pending", attempts: 1, next_retry_at: null });
      const waiting = held.filter((d) => d.in_flight_since === null);
      expect(waiting).toHaveLength(9 - PER_USER);
      for (const d of waiting) {
        expect(d).toMatchObject({ status: "pending", attempts: 0, last_attempt_at: null, last_error: null });
        expect(d.next_retry_at!.getTime()).toBe(d.created_at.getTime());
      }

      // Even long overdue, they are not the recovery sweep's: the hanging attempts' ends start them.
      const waitingIds = waiting.map((d) => d.id);
      await api.db.updateTable("webhook_deliveries").set({ next_retry_at: sql<Date>`now() - interval '10 minutes'` }).where("id", "in", waitingIds).execute();
      const stranded = await strandedDeliveryIds(api.db, attemptLeaseMs(api.config.webhooks.timeoutMs), 5 * 60_000, 500);
      expect(stranded.filter((id) => waitingIds.includes(id))).toEqual([]);
    } finally {
      slow.release();
    }

    // Once the receiver answers, every waiting delivery is sent, once, within the caps.
    const done = await waitFor(async () => {
      const rows = await deliveriesOf(slowSubscriptions);
      return rows.every((d) => d.status === "succeeded") ? rows : null;
    }, { timeoutMs: 30_000, what: "all of the slow user's deliveries to succeed" });
    for (const d of done) expect(d).toMatchObject({ attempts: 1, last_response_code: 200, in_flight_since: null });
    const sent = slowUrls.flatMap((url) => receiver.requests(url)).map((r) => r.headers["webhook-id"]);
    expect(sent.sort()).toEqual(done.map((d) => d.id).sort());
    expect(slow.stats.maxOpen).toBe(PER_USER);
    expect(slow.stats.maxOpenPerPath).toBe(PER_SUBSCRIPTION);
  });

  it("records a success while a claim of the same delivery, older than its start, holds the owner's lock (no deadlock)", async () => {
    // The claim's snapshot sees the delivery unclaimed; it waits for the owner's lock (held here),
    // the delivery's attempt starts and is answered meanwhile, and its success is recorded while the
    // claim still waits. The lock goes to the claim first, which then meets the started attempt's row.
    const owner = await createUser(api, { role: "artist" });
    const subscriptionId = await subscribe(owner, receiver.endpoint());
    const [eventId, otherEventId] = [await emit(newId("offer"), []), await emit(newId("offer"), [])];
    // The delivery, and another of the owner's waiting for a slot (so the success hands its slot on under the owner's lock).
    const [deliveryId, waitingId] = [newId("webhookDelivery"), newId("webhookDelivery")];
    await api.db
      .insertInto("webhook_deliveries")
      .values([
        { id: deliveryId, subscription_id: subscriptionId, event_id: eventId, status: "pending", next_retry_at: sql<Date>`now() + interval '1 hour'`, created_at: sql<Date>`now()`, updated_at: sql<Date>`now()` },
        { id: waitingId, subscription_id: subscriptionId, event_id: otherEventId, status: "pending", next_retry_at: sql<Date>`now()`, created_at: sql<Date>`now()`, updated_at: sql<Date>`now()` },
      ])
      .execute();
    // Connections of the test's own: four sessions wait on each other here, beside the API's own use of its pool.
    const db = createDb(api.config.database.url, 6);
    const leaseMs = attemptLeaseMs(api.config.webhooks.timeoutMs);
    const caps = { perUser: 4, perSubscription: 4 };
    const ownerLockWaiters = async () =>
      Number((await sql<{ n: string }>`select count(*) as n from pg_locks where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`.execute(db)).rows[0]!.n);

    let releaseOwnerLock!: () => void;
    const ownerLockReleased = new Promise<void>((resolve) => (releaseOwnerLock = resolve));
    let ownerLockTaken!: () => void;
    const ownerLockHeld = new Promise<void>((resolve) => (ownerLockTaken = resolve));
    const holder = db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`webhook_attempts:${owner.id}`}, 0))`.execute(trx);
      ownerLockTaken();
      await ownerLockReleased;
    });
    await ownerLockHeld;
    try {
      const claim = claimAttempt(db, deliveryId, leaseMs, caps);
      await waitFor(async () => ((await ownerLockWaiters()) === 1 ? true : null), { timeoutMs: 10_000, what: "the claim to wait for the owner's lock" });
      // The attempt starts elsewhere (as a slot handed on would start it), and its receiver answers 200.
      await db.updateTable("webhook_deliveries").set({ attempts: 1, in_flight_since: sql<Date>`now()`, next_retry_at: null }).where("id", "=", deliveryId).execute();
      const success = startWaitingAttempts(db, owner.id, leaseMs, caps, false, { id: deliveryId, attempts: 1, responseCode: 200, responseBody: "ok" });
      await waitFor(async () => ((await ownerLockWaiters()) === 2 ? true : null), { timeoutMs: 10_000, what: "the success to wait for the owner's lock" });
      releaseOwnerLock();
      const [claimed, started] = await Promise.all([claim, success]);
      expect(claimed).toBeUndefined();
      expect(started.map((d) => [d.id, d.attempts])).toEqual([[waitingId, 1]]);
    } finally {
      releaseOwnerLock();
      await holder;
      await db.destroy();
    }
    const delivery = await api.db.selectFrom("webhook_deliveries").selectAll().where("id", "=", deliveryId).executeTakeFirstOrThrow();
    expect(delivery).toMatchObject({ status: "succeeded", attempts: 1, in_flight_since: null, last_response_code: 200 });
  });
});
