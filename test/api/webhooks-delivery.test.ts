/**
 * Webhook delivery on an API and a receiver of the file's own: signed pings, the fan-out of outbox
 * events, retries on the schedule, failures, 410, Retry-After, redirects, the 3-day rule, secret
 * rotation, manual retries and the documented example receiver. Subscriptions: webhooks.test.ts.
 */
import type { AddressInfo } from "node:net";
import express from "express";
import { sql } from "kysely";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { OUTBOX_CHANNEL } from "../../api/src/jobs/outbox.ts";
import { RETRY_JITTER } from "../../api/src/modules/webhooks/webhooks.delivery.ts";
import { verifyWebhookSignature } from "../../api/src/modules/webhooks/signature.ts";
import { waitFor } from "../support/wait.ts";
import { createUser, expectProblem } from "../support/api.ts";
import { expectRetryAfter, expectSignedBy, QUIET, type Reply, RETRY_SCHEDULE_SECONDS, subscribe, useWebhooksApi } from "../support/webhooks.ts";

const { api, receiver, delivery, waitForDelivery, scheduledRetry, emit, dispatched } = useWebhooksApi();

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

    // the event is handed out again (as after a dispatcher that died before its commit): no new delivery, no second request
    const first = (await api.db.selectFrom("outbox_events").select("dispatched_at").where("id", "=", eventId).executeTakeFirstOrThrow()).dispatched_at!;
    await api.db.transaction().execute(async (trx) => {
      await trx.updateTable("outbox_events").set({ dispatched_at: null }).where("id", "=", eventId).execute();
      await sql`select pg_notify(${OUTBOX_CHANNEL}, '')`.execute(trx);
    });
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
