/**
 * Webhook subscriptions (create, scopes, lists, another user's, bad input, the cap, changes) and
 * their audience (a user's events to that user's subscriptions, admins' all-users ones), on an API
 * and a receiver of the file's own. Delivery, retries and signatures: webhooks-delivery.test.ts.
 */
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { WEBHOOK_EVENTS } from "../../api/src/modules/webhooks/events.ts";
import { MAX_SUBSCRIPTIONS_PER_USER } from "../../api/src/modules/webhooks/webhooks.service.ts";
import { artworkInput } from "../support/artworks.ts";
import { createUser, expectProblem } from "../support/api.ts";
import { expectSignedBy, QUIET, subscribe, useWebhooksApi } from "../support/webhooks.ts";

const { api, receiver, emit, dispatched, countSubscriptions } = useWebhooksApi();

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
