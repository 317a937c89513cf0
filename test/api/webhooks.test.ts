import type { AddressInfo } from "node:net";
import express from "express";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { OUTBOX_DISPATCH_TASK, recordEvent } from "../../api/src/jobs/outbox.ts";
import { enqueue } from "../../api/src/jobs/queue.ts";
import { WEBHOOK_EVENTS } from "../../api/src/modules/webhooks/events.ts";
import { RETRY_JITTER } from "../../api/src/modules/webhooks/webhooks.delivery.ts";
import { verifyWebhookSignature } from "../../api/src/modules/webhooks/signature.ts";
import { MAX_SUBSCRIPTIONS_PER_USER } from "../../api/src/modules/webhooks/webhooks.service.ts";
import { artworkInput } from "../support/artworks.ts";
import { waitFor } from "../support/wait.ts";
import { createUser, expectProblem, type TestApi, type TestUser } from "../support/api.ts";
import { type ReceivedRequest, type Reply, useIsolatedTestApi, useReceiver } from "../support/webhooks.ts";

// Test scale: retries after about 1 s each (three of them), attempts time out after 2 s.
const RETRY_SCHEDULE_SECONDS = [1, 1, 1];
const api = useIsolatedTestApi({ WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE_SECONDS.join(","), WEBHOOK_TIMEOUT_SECONDS: "2", WEBHOOK_CONCURRENCY: "4" });
const receiver = useReceiver();

async function subscribe(a: TestApi, user: TestUser, body: Record<string, unknown>) {
  const res = await a.request("POST", "/v1/webhooks", { token: user.token, body });
  if (res.status !== 201) throw new Error(`subscription failed: ${res.status} ${res.text}`);
  return res.body as { id: string; secret: string; url: string; events: string[]; status: string; all_users: boolean };
}

async function delivery(subscriptionId: string, deliveryId: string, user: TestUser) {
  const res = await api.request("GET", `/v1/webhooks/${subscriptionId}/deliveries/${deliveryId}`, { token: user.token });
  expect(res.status).toBe(200);
  return res.body;
}

function waitForDelivery(subscriptionId: string, deliveryId: string, user: TestUser, check: (d: any) => boolean, timeoutMs = 15_000) {
  return waitFor(async () => {
    const d = await delivery(subscriptionId, deliveryId, user);
    return check(d) ? d : null;
  }, { timeoutMs, what: `delivery ${deliveryId}` });
}

/** The delivery's row once failed attempt number `attempts` has scheduled the next one. */
function scheduledRetry(deliveryId: string, attempts: number, timeoutMs = 15_000) {
  return waitFor(
    () =>
      api.db
        .selectFrom("webhook_deliveries")
        .selectAll()
        .where("id", "=", deliveryId)
        .where("attempts", "=", attempts)
        .where("next_retry_at", "is not", null)
        .executeTakeFirst(),
    { timeoutMs, what: `the retry after attempt ${attempts} of ${deliveryId}` },
  );
}

/**
 * The stored next_retry_at is `delay` after the moment the sender computed it, a moment between the
 * attempt's start (last_attempt_at) and the recording of its outcome (updated_at): so a delay within
 * [minMs, maxMs] puts next_retry_at within [last_attempt_at + minMs, updated_at + maxMs] (the API
 * and Postgres read the same host clock; 1 ms for the sender's whole milliseconds).
 */
function expectRetryAfter(row: { next_retry_at: Date | null; last_attempt_at: Date | null; updated_at: Date }, minMs: number, maxMs: number) {
  const next = row.next_retry_at!.getTime();
  expect(next - row.last_attempt_at!.getTime()).toBeGreaterThanOrEqual(Math.floor(minMs) - 1);
  expect(next - row.updated_at.getTime()).toBeLessThanOrEqual(Math.ceil(maxMs));
}

/** Records an event that concerns `audience` (user ids), as a producer does. */
async function emit(type: string, payload: Record<string, unknown>, audience: string[]): Promise<string> {
  return api.db.transaction().execute((trx) => recordEvent(trx, type, payload, audience));
}

/** Waits until the event's dispatch (the fan-out) has run after `since`. */
async function dispatched(eventId: string, since = new Date(0)): Promise<void> {
  await waitFor(async () => {
    const row = await api.db.selectFrom("outbox_events").select("dispatched_at").where("id", "=", eventId).executeTakeFirstOrThrow();
    return row.dispatched_at !== null && row.dispatched_at > since;
  }, { what: `dispatch of ${eventId}` });
}

/** No test here emits this event for these subscriptions' owners: they receive only their own pings. */
const QUIET = ["artwork.certification_failed"];

const countSubscriptions = async (userId: string) =>
  Number((await api.db.selectFrom("webhook_subscriptions").select((eb) => eb.fn.countAll<string>().as("n")).where("user_id", "=", userId).executeTakeFirstOrThrow()).n);

describe("subscriptions", () => {
  it("creates a subscription with a bearer token or the API key itself, showing the whsec_ secret only then", async () => {
    const user = await createUser(api);
    const url = receiver.endpoint();
    const res = await api.request("POST", "/v1/webhooks", { token: user.token, body: { url, events: ["artwork.certified", "offer.accepted"], description: "prod" } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ url, events: ["artwork.certified", "offer.accepted"], description: "prod", status: "active", disabled_reason: null });
    expect(res.body.id).toMatch(/^whs_[0-9A-Z]{26}$/);
    expect(res.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(res.body.secret.slice(6), "base64")).toHaveLength(32);
    const stored = await api.db.selectFrom("webhook_subscriptions").selectAll().where("id", "=", res.body.id).executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ user_id: user.id, url, status: "active", secret: res.body.secret });

    const fetched = await api.request("GET", `/v1/webhooks/${res.body.id}`, { token: user.token });
    expect(fetched.status).toBe(200);
    expect(fetched.body.secret).toBeUndefined();
    const list = await api.request("GET", "/v1/webhooks", { token: user.token });
    expect(list.text).not.toContain(res.body.secret);

    const withKey = await api.request("POST", "/v1/webhooks", { token: user.apiKey, body: { url, events: ["*"] } });
    expect(withKey.status).toBe(201);
    expect(withKey.body.events).toEqual(["*"]);
    expect(withKey.body.description).toBeNull();
    // the key reads with the same rule as it writes (docs/cors-and-keys.md)
    const listedWithKey = await api.request("GET", "/v1/webhooks", { token: user.apiKey });
    expect(listedWithKey.status).toBe(200);
    expect(listedWithKey.body.data.map((w: { id: string }) => w.id)).toEqual(expect.arrayContaining([res.body.id, withKey.body.id]));
  });

  it("needs webhooks:write to change and webhooks:read to look", async () => {
    const reader = await createUser(api, { scope: ["webhooks:read"] });
    expectProblem(await api.request("POST", "/v1/webhooks", { token: reader.token, body: { url: receiver.endpoint(), events: ["*"] } }), 403, "insufficient_scope");
    expect((await api.request("GET", "/v1/webhooks", { token: reader.token })).status).toBe(200);
    const other = await createUser(api, { scope: ["users:read"] });
    expectProblem(await api.request("GET", "/v1/webhooks", { token: other.token }), 403, "insufficient_scope");
    expectProblem(await api.request("GET", "/v1/webhooks"), 401, "unauthenticated");
  });

  it("lists only the caller's subscriptions, newest first and paginated", async () => {
    const user = await createUser(api);
    const stranger = await createUser(api);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await subscribe(api, user, { url: receiver.endpoint(), events: ["offer.created"] })).id);
    await subscribe(api, stranger, { url: receiver.endpoint(), events: ["offer.created"] });
    const page1 = await api.request("GET", "/v1/webhooks?limit=2", { token: user.token });
    expect(page1.status).toBe(200);
    expect(page1.body.pagination).toEqual({ page: 1, limit: 2, total: 3, has_more: true });
    const page2 = await api.request("GET", "/v1/webhooks?limit=2&page=2", { token: user.token });
    expect([...page1.body.data, ...page2.body.data].map((s: { id: string }) => s.id)).toEqual(ids.reverse());
    expect(page2.body.pagination.has_more).toBe(false);
    expectProblem(await api.request("GET", "/v1/webhooks?limit=500", { token: user.token }), 400, "invalid_parameter");
  });

  it("answers 404 on every endpoint for another user's subscription and delivery", async () => {
    const owner = await createUser(api);
    const stranger = await createUser(api);
    const sub = await subscribe(api, owner, { url: receiver.endpoint(), events: QUIET });
    const ping = await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: owner.token });
    expect(ping.status).toBe(202);
    const d = ping.body.id;
    const strangerSub = await subscribe(api, stranger, { url: receiver.endpoint(), events: QUIET });
    const attempts: [string, string, unknown?][] = [
      ["GET", `/v1/webhooks/${sub.id}`],
      ["PATCH", `/v1/webhooks/${sub.id}`, { description: "mine now" }],
      ["DELETE", `/v1/webhooks/${sub.id}`],
      ["POST", `/v1/webhooks/${sub.id}/rotate-secret`],
      ["POST", `/v1/webhooks/${sub.id}/test`],
      ["GET", `/v1/webhooks/${sub.id}/deliveries`],
      ["GET", `/v1/webhooks/${sub.id}/deliveries/${d}`],
      ["POST", `/v1/webhooks/${sub.id}/deliveries/${d}/retry`],
      // the owner's delivery through the stranger's own subscription
      ["GET", `/v1/webhooks/${strangerSub.id}/deliveries/${d}`],
      ["POST", `/v1/webhooks/${strangerSub.id}/deliveries/${d}/retry`],
      ["GET", "/v1/webhooks/whs_nope"],
      ["GET", `/v1/webhooks/${sub.id}/deliveries/whd_nope`],
    ];
    for (const [method, path, body] of attempts) {
      expectProblem(await api.request(method, path, { token: stranger.token, body }), 404, "not_found");
    }
    const stored = await api.db.selectFrom("webhook_subscriptions").selectAll().where("id", "=", sub.id).executeTakeFirstOrThrow();
    expect(stored.description).toBeNull();
    expect(stored.secret).toBe(sub.secret);
    const deliveries = await api.db.selectFrom("webhook_deliveries").select("id").where("subscription_id", "=", sub.id).execute();
    expect(deliveries).toHaveLength(1);
  });

  it("refuses bad input with a field error and stores nothing", async () => {
    const user = await createUser(api);
    const url = receiver.endpoint();
    const cases: [unknown, string][] = [
      [{ url, events: ["artwork.painted"] }, "events.0"],
      [{ url, events: [] }, "events"],
      [{ url, events: ["offer.created", "offer.created"] }, "events.1"],
      [{ url, events: ["*", "offer.created"] }, "events"],
      [{ url, events: [...WEBHOOK_EVENTS, "*"] }, "events"],
      [{ url, events: "offer.created" }, "events"],
      [{ url, events: ["ping"] }, "events.0"],
      [{ url, events: ["*"], secret: "whsec_mine" }, "secret"],
      [{ url, events: ["*"], status: "active" }, "status"],
      [{ url: "not a url", events: ["*"] }, "url"],
      [{ url: "ftp://127.0.0.1/x", events: ["*"] }, "url"],
      [{ url: "https://user:pw@127.0.0.1/x", events: ["*"] }, "url"],
      [{ url: "https://no-such-host.invalid/x", events: ["*"] }, "url"],
      [{ url: `${url}?${"x".repeat(2100)}`, events: ["*"] }, "url"],
      [{ events: ["*"] }, "url"],
      [{ url, events: ["*"], description: "d".repeat(501) }, "description"],
    ];
    for (const [body, field] of cases) {
      const res = await api.request("POST", "/v1/webhooks", { token: user.token, body });
      expectProblem(res, 400, "validation_failed");
      expect(res.body.errors.map((e: { field: string }) => e.field), JSON.stringify(body).slice(0, 100)).toContain(field);
    }
    expect(await countSubscriptions(user.id)).toBe(0);

    const sub = await subscribe(api, user, { url, events: ["offer.created"] });
    for (const [body, field] of [
      [{ status: "paused" }, "status"],
      [{ events: ["nope"] }, "events.0"],
      [{ url: "https://no-such-host.invalid/" }, "url"],
      [{ nickname: "x" }, "nickname"],
      [{}, "body"],
    ] as const) {
      const res = await api.request("PATCH", `/v1/webhooks/${sub.id}`, { token: user.token, body });
      expectProblem(res, 400, "validation_failed");
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    const stored = await api.db.selectFrom("webhook_subscriptions").selectAll().where("id", "=", sub.id).executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ url, events: ["offer.created"], status: "active" });
  });

  it(`caps subscriptions at ${MAX_SUBSCRIPTIONS_PER_USER} per user`, async () => {
    const user = await createUser(api);
    const url = receiver.endpoint();
    const body = { url, events: QUIET };
    await Promise.all(Array.from({ length: MAX_SUBSCRIPTIONS_PER_USER + 3 }, () => api.request("POST", "/v1/webhooks", { token: user.token, body })));
    expect(await countSubscriptions(user.id)).toBe(MAX_SUBSCRIPTIONS_PER_USER);
    expectProblem(await api.request("POST", "/v1/webhooks", { token: user.token, body }), 409, "conflict");
  });

  it("updates url, events, description and status; deleting removes it and its deliveries", async () => {
    const user = await createUser(api);
    const sub = await subscribe(api, user, { url: receiver.endpoint(), events: ["offer.created"], description: "old" });
    const newUrl = receiver.endpoint();
    const res = await api.request("PATCH", `/v1/webhooks/${sub.id}`, { token: user.token, body: { url: newUrl, events: ["offer.accepted", "payment.completed"], description: null } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ url: newUrl, events: ["offer.accepted", "payment.completed"], description: null, status: "active" });
    expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(res.body.created_at));

    const disabled = await api.request("PATCH", `/v1/webhooks/${sub.id}`, { token: user.token, body: { status: "disabled" } });
    expect(disabled.body).toMatchObject({ status: "disabled", disabled_reason: "Disabled by the owner" });
    expectProblem(await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token }), 409, "invalid_state");
    const enabled = await api.request("PATCH", `/v1/webhooks/${sub.id}`, { token: user.token, body: { status: "active" } });
    expect(enabled.body).toMatchObject({ status: "active", disabled_reason: null });

    const ping = await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token });
    await receiver.waitForRequests(newUrl, 1);
    const deleted = await api.request("DELETE", `/v1/webhooks/${sub.id}`, { token: user.token });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: sub.id, deleted: true });
    expectProblem(await api.request("GET", `/v1/webhooks/${sub.id}`, { token: user.token }), 404, "not_found");
    expectProblem(await api.request("DELETE", `/v1/webhooks/${sub.id}`, { token: user.token }), 404, "not_found");
    expect(await api.db.selectFrom("webhook_deliveries").select("id").where("id", "=", ping.body.id).execute()).toHaveLength(0);
  });
});

function expectSignedBy(req: ReceivedRequest, secret: string) {
  expect(verifyWebhookSignature(req.body, { "x-service-signature": req.headers["x-service-signature"] }, secret)).toBe(true);
  expect(verifyWebhookSignature(req.body, req.headers, secret)).toBe(true);
  expect(() => new Webhook(secret).verify(req.body, req.headers as Record<string, string>)).not.toThrow();
}

describe("delivery", () => {
  it("POSTs a signed ping with the documented headers and body, and logs the delivery", async () => {
    const user = await createUser(api);
    const url = receiver.endpoint();
    const sub = await subscribe(api, user, { url, events: ["artwork.certified"] });
    const before = Math.floor(Date.now() / 1000);
    const ping = await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token });
    expect(ping.status).toBe(202);
    expect(ping.body).toMatchObject({ subscription_id: sub.id, event: "ping", status: "pending", attempts: 0 });
    expect(ping.body.id).toMatch(/^whd_/);
    expect(ping.body.event_id).toMatch(/^whe_/);

    const [req] = await receiver.waitForRequests(url, 1);
    expect(req!.method).toBe("POST");
    expect(req!.headers["content-type"]).toBe("application/json");
    expect(req!.headers["user-agent"]).toMatch(/^ArtPlatform-Webhooks\//);
    expect(req!.headers["x-service-event"]).toBe("ping");
    expect(req!.headers["x-service-delivery"]).toBe(ping.body.id);
    expect(req!.headers["webhook-id"]).toBe(ping.body.id);
    const t = Number(req!.headers["webhook-timestamp"]);
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(req!.headers["x-service-signature"]).toMatch(new RegExp(`^t=${t},v1=[0-9a-f]{64}$`));
    expect(req!.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expectSignedBy(req!, sub.secret);
    const body = JSON.parse(req!.body);
    expect(Object.keys(body)).toEqual(["id", "event", "created_at", "subscription_id"]);
    expect(body).toMatchObject({ id: ping.body.event_id, event: "ping", subscription_id: sub.id });
    expect(body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const done = await waitForDelivery(sub.id, ping.body.id, user, (d) => d.status === "succeeded");
    expect(done).toMatchObject({ attempts: 1, last_response_code: 200, last_response_body: "ok", last_error: null, next_retry_at: null });
  });

  it("fans an outbox event out to every matching active subscription, once, whatever the dispatch retries", async () => {
    const user = await createUser(api);
    const [matching, all, other, disabled] = [receiver.endpoint(), receiver.endpoint(), receiver.endpoint(), receiver.endpoint()];
    const subMatching = await subscribe(api, user, { url: matching, events: ["offer.accepted", "offer.created"] });
    const subAll = await subscribe(api, user, { url: all, events: ["*"] });
    await subscribe(api, user, { url: other, events: ["offer.created"] });
    const subDisabled = await subscribe(api, user, { url: disabled, events: ["*"] });
    await api.request("PATCH", `/v1/webhooks/${subDisabled.id}`, { token: user.token, body: { status: "disabled" } });

    const payload = { offer_id: "off_1", listing_id: "lst_1", amount_usd: 1250.5, accepted_at: "2026-11-22T10:00:00.000Z", id: "spoofed" };
    const eventId = await emit("offer.accepted", payload, [user.id]);
    const [m] = await receiver.waitForRequests(matching, 1);
    const [a] = await receiver.waitForRequests(all, 1);
    for (const [req, sub] of [[m!, subMatching], [a!, subAll]] as const) {
      expect(JSON.parse(req.body)).toEqual({ id: eventId, event: "offer.accepted", created_at: expect.any(String), offer_id: "off_1", listing_id: "lst_1", amount_usd: 1250.5, accepted_at: "2026-11-22T10:00:00.000Z" });
      expect(req.headers["x-service-event"]).toBe("offer.accepted");
      expectSignedBy(req, sub.secret);
    }
    expect(m!.headers["webhook-id"]).not.toBe(a!.headers["webhook-id"]);

    // the dispatch runs again (a retried job): no new delivery, no second request
    const first = (await api.db.selectFrom("outbox_events").select("dispatched_at").where("id", "=", eventId).executeTakeFirstOrThrow()).dispatched_at!;
    await enqueue(api.db, OUTBOX_DISPATCH_TASK, { event_id: eventId });
    await dispatched(eventId, first);
    await emit("offer.created", { offer_id: "off_2" }, [user.id]);
    await receiver.waitForRequests(other, 1);
    await receiver.waitForRequests(matching, 2);
    const rows = await api.db
      .selectFrom("webhook_deliveries as d")
      .innerJoin("webhook_subscriptions as s", "s.id", "d.subscription_id")
      .select("d.subscription_id")
      .where("d.event_id", "=", eventId)
      .where("s.user_id", "=", user.id)
      .execute();
    expect(rows.map((r) => r.subscription_id).sort()).toEqual([subAll.id, subMatching.id].sort());
    expect(receiver.requests(matching).filter((r) => JSON.parse(r.body).id === eventId)).toHaveLength(1);
    expect(receiver.requests(all).filter((r) => JSON.parse(r.body).id === eventId)).toHaveLength(1);
    expect(receiver.requests(disabled)).toHaveLength(0);
    expect(receiver.requests(other).map((r) => JSON.parse(r.body).event)).toEqual(["offer.created"]);
  });

  it("does not deliver internal events or events from before the subscription", async () => {
    const user = await createUser(api);
    const early = await emit("payment.completed", { tx_id: "txn_early" }, [user.id]);
    const url = receiver.endpoint();
    const sub = await subscribe(api, user, { url, events: ["*"] });
    await emit("internal.cache_flushed", { n: 1 }, [user.id]);
    await emit("payment.completed", { tx_id: "txn_late" }, [user.id]);
    const [req] = await receiver.waitForRequests(url, 1);
    expect(JSON.parse(req!.body).tx_id).toBe("txn_late");
    await dispatched(early);
    const list = await api.request("GET", `/v1/webhooks/${sub.id}/deliveries`, { token: user.token });
    expect(list.body.data.map((d: { event: string }) => d.event)).toEqual(["payment.completed"]);
  });

  it("retries failed attempts on the schedule with the same delivery id, then succeeds", async () => {
    const user = await createUser(api);
    const url = receiver.endpoint((n) => (n <= 2 ? { status: 500, body: "boom" } : { status: 204 }));
    const sub = await subscribe(api, user, { url, events: QUIET });
    const ping = await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token });

    await receiver.waitForRequests(url, 1);
    const waiting = await waitForDelivery(sub.id, ping.body.id, user, (d) => d.attempts === 1 && d.next_retry_at !== null);
    expect(waiting).toMatchObject({ status: "pending", last_response_code: 500, last_response_body: "boom", last_error: "HTTP 500: not a 2xx response" });
    const row = await scheduledRetry(ping.body.id, 1);
    const delayMs = RETRY_SCHEDULE_SECONDS[0]! * 1000;
    expectRetryAfter(row, delayMs * (1 - RETRY_JITTER), delayMs * (1 + RETRY_JITTER));

    const requests = await receiver.waitForRequests(url, 3);
    const done = await waitForDelivery(sub.id, ping.body.id, user, (d) => d.status === "succeeded");
    expect(done).toMatchObject({ attempts: 3, last_response_code: 204, last_error: null, next_retry_at: null });
    expect(new Set(requests.map((r) => r.headers["webhook-id"]))).toEqual(new Set([ping.body.id]));
    expect(new Set(requests.map((r) => r.body)).size).toBe(1);
    for (const r of requests) expectSignedBy(r, sub.secret);
    expect(requests[1]!.at).toBeGreaterThanOrEqual(row.next_retry_at!.getTime()); // not before its time
    const stored = await api.db.selectFrom("webhook_subscriptions").select("failing_since").where("id", "=", sub.id).executeTakeFirstOrThrow();
    expect(stored.failing_since).toBeNull();
  });

  it("fails a delivery after the last retry; a manual retry then makes one more attempt", async () => {
    const user = await createUser(api);
    const url = receiver.endpoint(() => ({ status: 500 }));
    const sub = await subscribe(api, user, { url, events: QUIET });
    const ping = await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token });
    const failed = await waitForDelivery(sub.id, ping.body.id, user, (d) => d.status === "failed", 20_000);
    expect(failed).toMatchObject({ attempts: 4, last_response_code: 500, next_retry_at: null });
    expect(receiver.requests(url)).toHaveLength(4);
    const subscription = await api.db.selectFrom("webhook_subscriptions").selectAll().where("id", "=", sub.id).executeTakeFirstOrThrow();
    expect(subscription.status).toBe("active");
    expect(subscription.failing_since).toBeInstanceOf(Date);

    const listed = await api.request("GET", `/v1/webhooks/${sub.id}/deliveries?status=failed`, { token: user.token });
    expect(listed.body.data.map((d: { id: string }) => d.id)).toEqual([ping.body.id]);
    expect((await api.request("GET", `/v1/webhooks/${sub.id}/deliveries?status=succeeded`, { token: user.token })).body.data).toEqual([]);
    expectProblem(await api.request("GET", `/v1/webhooks/${sub.id}/deliveries?status=lost`, { token: user.token }), 400, "invalid_parameter");

    const retry = await api.request("POST", `/v1/webhooks/${sub.id}/deliveries/${ping.body.id}/retry`, { token: user.token });
    expect(retry.status).toBe(202);
    expect(retry.body).toMatchObject({ id: ping.body.id, status: "pending" });
    await receiver.waitForRequests(url, 5);
    const again = await waitForDelivery(sub.id, ping.body.id, user, (d) => d.status === "failed" && d.attempts === 5);
    expect(again.next_retry_at).toBeNull();
    expect(receiver.requests(url).map((r) => r.headers["webhook-id"])).toEqual(Array(5).fill(ping.body.id));
  });

  it("disables the subscription at once on 410 Gone; re-enabling it resumes deliveries", async () => {
    const user = await createUser(api);
    const url = receiver.endpoint((n) => (n === 1 ? { status: 410 } : { status: 200 }));
    const sub = await subscribe(api, user, { url, events: ["ticket.purchased"] });
    const ping = await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token });
    const failed = await waitForDelivery(sub.id, ping.body.id, user, (d) => d.status === "failed");
    expect(failed).toMatchObject({ attempts: 1, last_response_code: 410, next_retry_at: null });
    const gone = await api.request("GET", `/v1/webhooks/${sub.id}`, { token: user.token });
    expect(gone.body).toMatchObject({ status: "disabled", disabled_reason: "The endpoint answered 410 Gone" });

    await dispatched(await emit("ticket.purchased", { ticket_id: "tkt_1" }, [user.id])); // nobody listens now
    expectProblem(await api.request("POST", `/v1/webhooks/${sub.id}/deliveries/${ping.body.id}/retry`, { token: user.token }), 409, "invalid_state");

    const enabled = await api.request("PATCH", `/v1/webhooks/${sub.id}`, { token: user.token, body: { status: "active" } });
    expect(enabled.body).toMatchObject({ status: "active", disabled_reason: null });
    await emit("ticket.purchased", { ticket_id: "tkt_2" }, [user.id]);
    const requests = await receiver.waitForRequests(url, 2);
    expect(JSON.parse(requests[1]!.body)).toMatchObject({ event: "ticket.purchased", ticket_id: "tkt_2" });
    expect(requests).toHaveLength(2);
  });

  it("honours Retry-After in seconds or as a date on 429 and 503", async () => {
    const user = await createUser(api);
    let retryAt = 0;
    const url = receiver.endpoint((n) => {
      if (n === 1) return { status: 503, headers: { "Retry-After": "3" } };
      if (n > 2) return { status: 200 };
      const date = new Date(Date.now() + 3_000).toUTCString(); // whole seconds
      retryAt = Date.parse(date);
      return { status: 429, headers: { "Retry-After": date } };
    });
    const sub = await subscribe(api, user, { url, events: QUIET });
    const ping = await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token });
    // Retry-After wins over the schedule, without jitter: 3 s after the answer, then at the date given.
    const afterSeconds = await scheduledRetry(ping.body.id, 1);
    expectRetryAfter(afterSeconds, 3_000, 3_000);
    const afterDate = await scheduledRetry(ping.body.id, 2, 10_000);
    expect(afterDate.next_retry_at!.getTime()).toBeGreaterThanOrEqual(retryAt);
    expect(afterDate.next_retry_at!.getTime()).toBeLessThanOrEqual(retryAt + (afterDate.updated_at.getTime() - afterDate.last_attempt_at!.getTime()));
    const requests = await receiver.waitForRequests(url, 3, 20_000);
    expect(requests[1]!.at).toBeGreaterThanOrEqual(afterSeconds.next_retry_at!.getTime());
    expect(requests[2]!.at).toBeGreaterThanOrEqual(afterDate.next_retry_at!.getTime());
    await waitForDelivery(sub.id, ping.body.id, user, (d) => d.status === "succeeded" && d.attempts === 3);
  });

  it("does not follow redirects and keeps 4 KiB of a response body", async () => {
    const user = await createUser(api);
    const target = receiver.endpoint();
    const url = receiver.endpoint((n) => (n === 1 ? { status: 302, headers: { Location: target } } : { status: 500, body: "e".repeat(10_000) }));
    const sub = await subscribe(api, user, { url, events: QUIET });
    const ping = await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token });
    const redirected = await waitForDelivery(sub.id, ping.body.id, user, (d) => d.attempts === 1 && d.next_retry_at !== null);
    expect(redirected).toMatchObject({ status: "pending", last_response_code: 302 });
    expect(redirected.last_error).toContain("redirects are not followed");
    const big = await waitForDelivery(sub.id, ping.body.id, user, (d) => d.attempts === 2 && d.next_retry_at !== null);
    expect(big.last_response_body).toBe("e".repeat(4096));
    expect(receiver.requests(target)).toHaveLength(0);
  });

  it("disables a subscription whose deliveries have failed for 3 days; a success clears the failure streak", async () => {
    const user = await createUser(api);
    const url = receiver.endpoint(() => ({ status: 500 }));
    const failing = await subscribe(api, user, { url, events: QUIET });
    await api.db.updateTable("webhook_subscriptions").set({ failing_since: new Date(Date.now() - 3 * 24 * 3600_000 - 60_000) }).where("id", "=", failing.id).execute();
    await api.request("POST", `/v1/webhooks/${failing.id}/test`, { token: user.token });
    const disabled = await waitFor(async () => {
      const s = await api.request("GET", `/v1/webhooks/${failing.id}`, { token: user.token });
      return s.body.status === "disabled" ? s.body : null;
    });
    expect(disabled.disabled_reason).toMatch(/failed since .* \(3 days or more\)/);

    const healthy = await subscribe(api, user, { url: receiver.endpoint(), events: QUIET });
    await api.db.updateTable("webhook_subscriptions").set({ failing_since: new Date(Date.now() - 2 * 24 * 3600_000) }).where("id", "=", healthy.id).execute();
    const ping = await api.request("POST", `/v1/webhooks/${healthy.id}/test`, { token: user.token });
    await waitForDelivery(healthy.id, ping.body.id, user, (d) => d.status === "succeeded");
    const row = await api.db.selectFrom("webhook_subscriptions").selectAll().where("id", "=", healthy.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: "active", failing_since: null });
  });

  it("signs with both secrets for 24 h after a rotation, then with the new one only", async () => {
    const user = await createUser(api);
    const url = receiver.endpoint();
    const sub = await subscribe(api, user, { url, events: QUIET });
    const rotated = await api.request("POST", `/v1/webhooks/${sub.id}/rotate-secret`, { token: user.token });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(sub.secret);
    const overlap = Date.parse(rotated.body.previous_secret_expires_at) - Date.now();
    expect(overlap).toBeGreaterThan(24 * 3600_000 - 60_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3600_000);

    await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token });
    const [during] = await receiver.waitForRequests(url, 1);
    expect((during!.headers["x-service-signature"] as string).match(/v1=/g)).toHaveLength(2);
    expect((during!.headers["webhook-signature"] as string).split(" ")).toHaveLength(2);
    expectSignedBy(during!, rotated.body.secret);
    expectSignedBy(during!, sub.secret);

    await api.db.updateTable("webhook_subscriptions").set({ previous_secret_expires_at: new Date(Date.now() - 1000) }).where("id", "=", sub.id).execute();
    await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token });
    const [, after] = await receiver.waitForRequests(url, 2);
    expectSignedBy(after!, rotated.body.secret);
    expect(verifyWebhookSignature(after!.body, after!.headers, sub.secret)).toBe(false);
    expect(verifyWebhookSignature(after!.body, { "x-service-signature": after!.headers["x-service-signature"] }, sub.secret)).toBe(false);
    expect(() => new Webhook(sub.secret).verify(after!.body, after!.headers as Record<string, string>)).toThrow();
  });

  it("refuses a manual retry while an attempt is in flight; a settled delivery can be sent again", async () => {
    const user = await createUser(api);
    let release!: () => void;
    const held = new Promise<Reply>((resolve) => (release = () => resolve({ status: 200 })));
    const url = receiver.endpoint((n) => (n === 1 ? "hang" : n === 2 ? held : { status: 200 }));
    const sub = await subscribe(api, user, { url, events: QUIET });
    const ping = await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token });
    const retry = () => api.request("POST", `/v1/webhooks/${sub.id}/deliveries/${ping.body.id}/retry`, { token: user.token });
    await receiver.waitForRequests(url, 1);
    expectProblem(await retry(), 409, "invalid_state");

    // The first attempt timed out (2 s); the second one is held by the receiver.
    await receiver.waitForRequests(url, 2);
    const second = await delivery(sub.id, ping.body.id, user);
    expect(second).toMatchObject({ status: "pending", attempts: 2, last_response_code: null, next_retry_at: null });
    expect(second.last_error).toMatch(/^timeout: no complete response within 2 s/);
    expectProblem(await retry(), 409, "invalid_state");
    release();
    await waitForDelivery(sub.id, ping.body.id, user, (d) => d.status === "succeeded" && d.attempts === 2);

    const again = await retry();
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ status: "pending", attempts: 2 });
    await waitForDelivery(sub.id, ping.body.id, user, (d) => d.status === "succeeded" && d.attempts === 3);
    expect(receiver.requests(url).map((r) => r.headers["webhook-id"])).toEqual(Array(3).fill(ping.body.id));
  });

  it("reaches the example receiver of docs/integrators/webhooks.md (Express, express.raw, verifyWebhookSignature)", async () => {
    const user = await createUser(api);
    let secret = "";
    const seen: { verified: boolean; event: string; delivery: string }[] = [];
    const app = express();
    app.post("/hooks/art", express.raw({ type: "application/json" }), (req, res) => {
      const verified = verifyWebhookSignature(req.body, req.headers, secret);
      if (verified) seen.push({ verified, event: JSON.parse(req.body.toString("utf8")).event, delivery: req.get("webhook-id")! });
      res.sendStatus(verified ? 200 : 400);
    });
    const server = app.listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    try {
      const sub = await subscribe(api, user, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/art`, events: QUIET });
      secret = sub.secret;
      const ping = await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token });
      await waitForDelivery(sub.id, ping.body.id, user, (d) => d.status === "succeeded");
      expect(seen).toEqual([{ verified: true, event: "ping", delivery: ping.body.id }]);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe("audience", () => {
  const deliveredTo = async (eventId: string) =>
    (await api.db.selectFrom("webhook_deliveries").select("subscription_id").where("event_id", "=", eventId).execute()).map((d) => d.subscription_id).sort();

  it("sends a user's artwork events only to that user's subscriptions, and to an admin's all-users subscription", async () => {
    const alice = await createUser(api, { role: "artist" });
    const bob = await createUser(api, { role: "artist" });
    const admin = await createUser(api, { role: "admin", scope: ["admin"] });
    const [aliceUrl, bobUrl, adminUrl] = [receiver.endpoint(), receiver.endpoint(), receiver.endpoint()];
    const aliceSub = await subscribe(api, alice, { url: aliceUrl, events: ["*"] });
    const bobSub = await subscribe(api, bob, { url: bobUrl, events: ["*"] });
    const adminSub = await subscribe(api, admin, { url: adminUrl, events: ["*"], all_users: true });
    expect([aliceSub.all_users, bobSub.all_users, adminSub.all_users]).toEqual([false, false, true]);
    try {
      // Alice's artwork fails certification (its image URL answers a web page): the pipeline records the event.
      const image = receiver.endpoint(() => ({ status: 200, headers: { "content-type": "image/png" }, body: "<html>a login page</html>" }));
      const created = await api.request("POST", "/v1/artworks", { token: alice.token, body: artworkInput({ image_url: image }) });
      expect(created.status).toBe(201);
      const [toAlice] = await receiver.waitForRequests(aliceUrl, 1, 30_000);
      const failed = JSON.parse(toAlice!.body);
      expect(failed).toMatchObject({ event: "artwork.certification_failed", artwork_id: created.body.id, reason: expect.any(String) });
      const [toAdmin] = await receiver.waitForRequests(adminUrl, 1);
      expect(JSON.parse(toAdmin!.body)).toEqual(failed);
      expectSignedBy(toAdmin!, adminSub.secret);

      // The event names Alice; its fan-out (finished: deliveries are written in one transaction) reached no one else.
      const stored = await api.db.selectFrom("outbox_events").select(["audience", "dispatched_at"]).where("id", "=", failed.id).executeTakeFirstOrThrow();
      expect(stored.audience).toEqual([alice.id]);
      await dispatched(failed.id);
      expect(await deliveredTo(failed.id)).toEqual([aliceSub.id, adminSub.id].sort());

      // An event that concerns Bob (and a user with no subscription) reaches Bob and the admin, not Alice.
      const collector = await createUser(api);
      const bobs = await emit("payment.completed", { tx_id: "txn_bob", amount_usd: 10 }, [bob.id, collector.id]);
      await dispatched(bobs);
      expect(await deliveredTo(bobs)).toEqual([bobSub.id, adminSub.id].sort());
      const [toBob] = await receiver.waitForRequests(bobUrl, 1);
      expect(JSON.parse(toBob!.body)).toMatchObject({ id: bobs, event: "payment.completed" });
      await receiver.waitForRequests(adminUrl, 2);
      expect(receiver.requests(aliceUrl).map((r) => JSON.parse(r.body).id)).toEqual([failed.id]);
      expect(receiver.requests(bobUrl).map((r) => JSON.parse(r.body).id)).toEqual([bobs]);
    } finally {
      await api.request("DELETE", `/v1/webhooks/${adminSub.id}`, { token: admin.token });
    }
  });

  it("lets only admins (with the admin:read scope) subscribe to every user's events", async () => {
    const artist = await createUser(api, { role: "artist" });
    const url = receiver.endpoint();
    expectProblem(await api.request("POST", "/v1/webhooks", { token: artist.token, body: { url, events: ["*"], all_users: true } }), 403, "forbidden");
    expect(await countSubscriptions(artist.id)).toBe(0);
    const own = await subscribe(api, artist, { url, events: QUIET });
    expectProblem(await api.request("PATCH", `/v1/webhooks/${own.id}`, { token: artist.token, body: { all_users: true } }), 403, "forbidden");
    const unchanged = await api.db.selectFrom("webhook_subscriptions").select("all_users").where("id", "=", own.id).executeTakeFirstOrThrow();
    expect(unchanged.all_users).toBe(false);
    expectProblem(await api.request("POST", "/v1/webhooks", { token: artist.token, body: { url, events: QUIET, all_users: "yes" } }), 400, "validation_failed");

    // An admin's token without admin:read may not widen a subscription either.
    const admin = await createUser(api, { role: "admin", scope: ["webhooks:write"] });
    expectProblem(await api.request("POST", "/v1/webhooks", { token: admin.token, body: { url, events: QUIET, all_users: true } }), 403, "insufficient_scope");
    const adminSub = await subscribe(api, admin, { url, events: QUIET });
    const wide = await createUser(api, { role: "admin", scope: ["admin"] });
    const widened = await subscribe(api, wide, { url, events: QUIET, all_users: true });
    expect(widened.all_users).toBe(true);
    const narrowed = await api.request("PATCH", `/v1/webhooks/${widened.id}`, { token: wide.token, body: { all_users: false } });
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.all_users).toBe(false);
    const stored = await api.db.selectFrom("webhook_subscriptions").select(["id", "all_users"]).where("id", "in", [adminSub.id, widened.id]).execute();
    expect(stored.every((s) => s.all_users === false)).toBe(true);

    // The flag is documented in the OpenAPI document, from the same zod schemas.
    const doc = await api.request("GET", "/v1/openapi.json");
    for (const name of ["WebhookSubscriptionCreate", "WebhookSubscriptionUpdate", "WebhookSubscription"]) {
      expect(doc.body.components.schemas[name].properties.all_users).toMatchObject({ type: "boolean", description: expect.any(String) });
    }
  });

  it("stops sending every user's events to a subscription whose owner is no longer an admin", async () => {
    const admin = await createUser(api, { role: "admin", scope: ["admin"] });
    const user = await createUser(api);
    const url = receiver.endpoint();
    const sub = await subscribe(api, admin, { url, events: ["ticket.purchased"], all_users: true });
    const first = await emit("ticket.purchased", { ticket_id: "tkt_a" }, [user.id]);
    await dispatched(first);
    expect(await deliveredTo(first)).toContain(sub.id);
    await api.db.updateTable("users").set({ role: "collector" }).where("id", "=", admin.id).execute();
    const second = await emit("ticket.purchased", { ticket_id: "tkt_b" }, [user.id]);
    await dispatched(second);
    expect(await deliveredTo(second)).not.toContain(sub.id);
    expect((await receiver.waitForRequests(url, 1)).map((r) => JSON.parse(r.body).id)).toEqual([first]);
  });
});
