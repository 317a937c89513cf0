/**
 * One user's slow receivers cannot starve the others: a user's attempts in flight are capped (per
 * user and per subscription), deliveries over the cap wait without an attempt being counted, and
 * every one of them is sent once the receiver answers again.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { recordEvent } from "../../api/src/jobs/outbox.ts";
import { attemptLeaseMs } from "../../api/src/modules/webhooks/webhooks.delivery.ts";
import { claimAttempts } from "../../api/src/modules/webhooks/webhooks.repository.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { newId } from "../../api/src/lib/ids.ts";
import { waitFor } from "../support/wait.ts";
import { createUser, type TestUser, useIsolatedTestApi } from "../support/api.ts";
import { type Reply, useReceiver } from "../support/webhooks.ts";

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

describe("fair sharing of the webhook senders", () => {
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

      // Even long overdue, a claim starts none of them while the user is at its cap.
      const waitingIds = waiting.map((d) => d.id);
      await api.db.updateTable("webhook_deliveries").set({ next_retry_at: sql<Date>`now() - interval '10 minutes'` }).where("id", "in", waitingIds).execute();
      expect(await claimAttempts(api.db, 10, attemptLeaseMs(api.config.webhooks.timeoutMs), { perUser: PER_USER, perSubscription: PER_SUBSCRIPTION })).toEqual([]);
      expect((await deliveriesOf(slowSubscriptions)).filter((d) => d.in_flight_since !== null)).toHaveLength(PER_USER);
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

  it("never starts more than the caps when claims race (each claim counts under the one lock)", async () => {
    // A user's deliveries to receivers that hold every request: whatever starts stays in flight.
    const owner = await createUser(api, { role: "artist" });
    const held = holdingReceiver();
    const urls = [receiver.endpoint(held.script), receiver.endpoint(held.script), receiver.endpoint(held.script)];
    const subscriptions: string[] = [];
    for (const url of urls) subscriptions.push(await subscribe(owner, url));
    const events = [];
    for (let n = 0; n < 8; n++) events.push(await emit(newId("offer"), []));
    // Inserted due, not fanned out: the API's own sender races the claims below for them.
    await api.db
      .insertInto("webhook_deliveries")
      .values(
        events.flatMap((eventId) =>
          subscriptions.map((subscriptionId) => ({ id: newId("webhookDelivery"), subscription_id: subscriptionId, event_id: eventId, status: "pending" as const, next_retry_at: sql<Date>`now()` })),
        ),
      )
      .execute();
    // Claims from connections of the test's own, all at once, with the API's caps.
    const db = createDb(api.config.database.url, 7);
    const caps = { perUser: PER_USER, perSubscription: PER_SUBSCRIPTION };
    const claimedIds: string[] = [];
    // Released in `finally` too: a failure before the release would otherwise hang db.destroy() on the holder.
    let releaseRows: () => void = () => {};
    try {
      // The deliveries' rows are held while the claims start, so every claim has read them as waiting
      // before any of them can start one: without the lock each would start the same oldest ones.
      const rowsReleased = new Promise<void>((resolve) => (releaseRows = resolve));
      let rowsHeld!: () => void;
      const rowsLocked = new Promise<void>((resolve) => (rowsHeld = resolve));
      const holder = db.transaction().execute(async (trx) => {
        await trx.selectFrom("webhook_deliveries").select("id").where("subscription_id", "in", subscriptions).forUpdate().execute();
        rowsHeld();
        await rowsReleased;
      });
      await rowsLocked;
      const claims = Promise.all(Array.from({ length: 6 }, () => claimAttempts(db, 10, attemptLeaseMs(api.config.webhooks.timeoutMs), caps)));
      const waiting = async () =>
        Number((await sql<{ n: string }>`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(api.db)).rows[0]!.n);
      await waitFor(async () => ((await waiting()) >= 6 ? true : null), { timeoutMs: 10_000, what: "the claims to wait" });
      releaseRows();
      await holder;
      const claimed = (await claims).flat();
      const rows = await waitFor(async () => {
        const all = await deliveriesOf(subscriptions);
        return all.filter((d) => d.in_flight_since !== null).length === PER_USER ? all : null;
      }, { what: `${PER_USER} attempts in flight` });
      const inFlight = rows.filter((d) => d.in_flight_since !== null);
      expect(new Set(inFlight.map((d) => d.subscription_id)).size).toBe(PER_USER);
      // Every attempt started once: no delivery counted twice, none started beside those in flight.
      expect(rows.map((d) => d.attempts).sort()).toEqual([...Array(24 - PER_USER).fill(0), ...Array(PER_USER).fill(1)]);
      claimedIds.push(...claimed.map((attempt) => attempt.id));
      for (const id of claimedIds) expect(inFlight.map((d) => d.id)).toContain(id);
      // Nothing more starts while they hang, however often claims come.
      expect(await claimAttempts(db, 10, attemptLeaseMs(api.config.webhooks.timeoutMs), caps)).toEqual([]);
      expect(held.stats.maxOpen).toBeLessThanOrEqual(PER_USER);
    } finally {
      // The test's own claims sent nothing: their attempts are made to look abandoned (lease long
      // expired, as a dead process leaves them), and the sender takes them up again.
      await api.db.updateTable("webhook_deliveries").set({ in_flight_since: sql<Date>`now() - interval '1 hour'` }).where("id", "in", [...claimedIds, "none"]).execute();
      held.release();
      releaseRows();
      await db.destroy();
    }
    const done = await waitFor(async () => {
      const rows = await deliveriesOf(subscriptions);
      return rows.every((d) => d.status === "succeeded") ? rows : null;
    }, { timeoutMs: 30_000, what: "every delivery to succeed once released" });
    // Sent once each: an attempt the test's claims started (and never sent) was sent after its lease,
    // as a dead process's is, so it counts two attempts and one request.
    const sent = urls.flatMap((url) => receiver.requests(url)).map((r) => r.headers["webhook-id"]);
    expect(sent).toHaveLength(24);
    for (const d of done) expect(d.attempts).toBe(claimedIds.includes(d.id) ? 2 : 1);
    expect(held.stats.maxOpen).toBeLessThanOrEqual(PER_USER);
    expect(held.stats.maxOpenPerPath).toBe(PER_SUBSCRIPTION);
    expect(done.map((d) => d.id).sort()).toEqual([...new Set(sent)].sort());
  });
});
