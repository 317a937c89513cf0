import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import pino from "pino";
import { ProcessPresence } from "../../api/src/db/presence.ts";
import { IdempotencyClaimLost, IdempotencyStore, requestFingerprint } from "../../api/src/http/idempotency.ts";
import { newId } from "../../api/src/lib/ids.ts";
import { artworkInput, formFields, postMultipart } from "../support/artworks.ts";
import { createUser, expectProblem, useTestApi } from "../support/api.ts";
import { waitFor } from "../support/wait.ts";

const api = useTestApi();

const countKeys = async (userId: string) =>
  Number((await api.db.selectFrom("api_keys").select((eb) => eb.fn.countAll<string>().as("n")).where("user_id", "=", userId).executeTakeFirstOrThrow()).n);

describe("Idempotency-Key", () => {
  it("replays the stored response for the same key and body, and refuses a different body with 422", async () => {
    const user = await createUser(api);
    const before = await countKeys(user.id);
    const first = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "a" }, headers: { "idempotency-key": "k-1" } });
    const second = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "a" }, headers: { "idempotency-key": "k-1" } });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect(await countKeys(user.id)).toBe(before + 1);

    expectProblem(
      await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "b" }, headers: { "idempotency-key": "k-1" } }),
      422,
      "idempotency_key_reused",
    );
    expect(await countKeys(user.id)).toBe(before + 1);

    // keys are per caller: another user's identical key is independent
    const other = await createUser(api);
    const theirs = await api.request("POST", "/v1/api-keys", { token: other.token, body: { name: "a" }, headers: { "idempotency-key": "k-1" } });
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(first.body.id);
  });

  it("scopes keys to the user, not the token: another token of the same user replays (issue 8)", async () => {
    const user = await createUser(api);
    const second = await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["write"] } });
    expect(second.status).toBe(201);
    const before = await countKeys(user.id);
    const headers = { "idempotency-key": "per-user-1" };
    const first = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "once" }, headers });
    const again = await api.request("POST", "/v1/api-keys", { token: second.body.token, body: { name: "once" }, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.id).toBe(first.body.id);
    expectProblem(await api.request("POST", "/v1/api-keys", { token: second.body.token, body: { name: "other" }, headers }), 422, "idempotency_key_reused");
    expect(await countKeys(user.id)).toBe(before + 1);
    const stored = await api.db.selectFrom("idempotency_keys").select("principal").where("key", "=", "per-user-1").where("principal", "=", `user:${user.id}`).execute();
    expect(stored).toHaveLength(1);
  });

  it("never replays to a token of the same user with other scopes what the first token was given", async () => {
    const admin = await createUser(api, { role: "admin", scope: ["admin"] });
    const writer = await api.request("POST", "/v1/auth/token", { body: { api_key: admin.apiKey, scope: ["write"] } });
    const headers = { "idempotency-key": "scoped-1" };
    const first = await api.request("POST", "/v1/api-keys", { token: admin.token, body: { name: "ops" }, headers });
    expect(first.status).toBe(201);
    expect(first.body.scopes).toEqual(["admin"]);
    const replay = await api.request("POST", "/v1/api-keys", { token: writer.body.token, body: { name: "ops" }, headers });
    expectProblem(replay, 422, "idempotency_key_reused");
    expect(replay.text).not.toContain(first.body.secret);
  });

  it("fingerprints the fields of a multipart request without a file (issue 9)", async () => {
    const artist = await createUser(api, { role: "artist" });
    const headers = { "Idempotency-Key": `form-${artist.id}` };
    // No image and no image_url: the request runs and is refused (400), and that answer is stored.
    const first = await postMultipart(api.url, artist.token, formFields(artworkInput({ title: "First form" })), undefined, headers);
    expectProblem(first, 400, "validation_failed");
    const same = await postMultipart(api.url, artist.token, formFields(artworkInput({ title: "First form" })), undefined, headers);
    expectProblem(same, 400, "validation_failed");
    expect(same.headers.get("idempotent-replayed")).toBe("true");
    const other = await postMultipart(api.url, artist.token, formFields(artworkInput({ title: "Another form" })), undefined, headers);
    expectProblem(other, 422, "idempotency_key_reused");
    const stored = await api.db.selectFrom("idempotency_keys").select(["request_hash", "response_status"]).where("principal", "=", `user:${artist.id}`).where("key", "=", headers["Idempotency-Key"]).executeTakeFirstOrThrow();
    expect(stored.response_status).toBe(400);
    expect(await api.db.selectFrom("artworks").select("id").where("artist_id", "=", artist.id).execute()).toHaveLength(0);
  });

  it("runs a request exactly once when the same key races", async () => {
    const user = await createUser(api);
    const before = await countKeys(user.id);
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "race" }, headers: { "idempotency-key": "race-1" } }),
      ),
    );
    const ok = results.filter((r) => r.status === 201);
    const busy = results.filter((r) => r.status === 409);
    expect(ok.length + busy.length).toBe(10);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const r of busy) expectProblem(r, 409, "request_in_progress");
    expect(new Set(ok.map((r) => r.body.id)).size).toBe(1);
    expect(await countKeys(user.id)).toBe(before + 1);
  });

  it("stores refusals of a request that ran, never validation failures, and rejects malformed keys", async () => {
    const user = await createUser(api);
    const invalid = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "" }, headers: { "idempotency-key": "bad-1" } });
    expectProblem(invalid, 400, "validation_failed");
    // as with Stripe, a request that failed validation saved nothing: the key is still free
    const fixed = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "ok" }, headers: { "idempotency-key": "bad-1" } });
    expect(fixed.status).toBe(201);
    expect(fixed.headers.get("idempotent-replayed")).toBeNull();

    const refused = await api.request("POST", "/v1/auth/token", { body: { api_key: "sk_wrong_key_0000000000000000", scope: ["read"] }, headers: { "idempotency-key": `r-${user.id}` } });
    expectProblem(refused, 401, "invalid_credentials");
    const replay = await api.request("POST", "/v1/auth/token", { body: { api_key: "sk_wrong_key_0000000000000000", scope: ["read"] }, headers: { "idempotency-key": `r-${user.id}` } });
    expectProblem(replay, 401, "invalid_credentials");
    expect(replay.headers.get("idempotent-replayed")).toBe("true");

    expectProblem(
      await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "x" }, headers: { "idempotency-key": "x".repeat(256) } }),
      400,
      "invalid_parameter",
    );
  });
});

describe("Idempotency-Key inside the business transaction (issue 8)", () => {
  const store = () => new IdempotencyStore(api.db);
  const nonceExists = async (nonce: string) => (await api.db.selectFrom("siwe_nonces").select("nonce").where("nonce", "=", nonce).execute()).length === 1;
  const keyRow = (principal: string, key: string) => api.db.selectFrom("idempotency_keys").selectAll().where("principal", "=", principal).where("key", "=", key).executeTakeFirst();
  const claimFor = async (principal: string, key: string) => {
    const claimed = await store().claim(principal, key, "POST", "/v1/test", requestFingerprint("POST", "/v1/test", { n: 1 }));
    if (claimed.kind !== "claimed") throw new Error("expected a fresh claim");
    return claimed.claim;
  };
  const insertNonce = (trx: Parameters<Parameters<IdempotencyStore["transaction"]>[1]>[0], nonce: string) =>
    trx.insertInto("siwe_nonces").values({ nonce, expires_at: new Date(Date.now() + 60_000) }).execute();
  const answer = (body: unknown) => ({ status: 201, body });

  it("commits the change and the stored answer together", async () => {
    const principal = `test:${crypto.randomUUID()}`;
    const claim = await claimFor(principal, "commit-1");
    const nonce = `n${crypto.randomUUID().replaceAll("-", "")}`;
    const result = await store().transaction(claim, async (trx) => (await insertNonce(trx, nonce), { nonce }), answer);
    expect(result).toEqual({ nonce });
    expect(await nonceExists(nonce)).toBe(true);
    expect(await keyRow(principal, "commit-1")).toMatchObject({ state: "completed", response_status: 201, response_body: { nonce } });
    const replay = await store().claim(principal, "commit-1", "POST", "/v1/test", requestFingerprint("POST", "/v1/test", { n: 1 }));
    expect(replay).toEqual({ kind: "replay", status: 201, body: { nonce } });
  });

  it("rolls back the change and stores nothing when the work fails after writing; the key is then freed", async () => {
    const principal = `test:${crypto.randomUUID()}`;
    const claim = await claimFor(principal, "rollback-1");
    const nonce = `n${crypto.randomUUID().replaceAll("-", "")}`;
    await expect(
      store().transaction(claim, async (trx) => {
        await insertNonce(trx, nonce);
        throw new Error("failure after the business insert, before the commit");
      }, answer),
    ).rejects.toThrow("before the commit");
    expect(await nonceExists(nonce)).toBe(false);
    expect(await keyRow(principal, "rollback-1")).toMatchObject({ state: "in_progress", response_status: null, response_body: null });
    await store().release(claim); // what the route does with a 5xx
    expect(await keyRow(principal, "rollback-1")).toBeUndefined();
    expect((await claimFor(principal, "rollback-1")).key).toBe("rollback-1");
  });

  it("rolls back a change whose key was taken over by a retry meanwhile, leaving the key to the retry", async () => {
    const principal = `test:${crypto.randomUUID()}`;
    const claim = await claimFor(principal, "takeover-1");
    // The first request looks abandoned (past 120 s): a retry takes the key over.
    await api.db.updateTable("idempotency_keys").set({ locked_at: new Date(Date.now() - 600_000) }).where("principal", "=", principal).execute();
    const retry = await claimFor(principal, "takeover-1");
    const nonce = `n${crypto.randomUUID().replaceAll("-", "")}`;
    await expect(store().transaction(claim, async (trx) => (await insertNonce(trx, nonce), { nonce }), answer)).rejects.toBeInstanceOf(IdempotencyClaimLost);
    expect(await nonceExists(nonce)).toBe(false);
    await store().release(claim); // the late request cannot free the retry's key either
    expect(await keyRow(principal, "takeover-1")).toMatchObject({ state: "in_progress" });
    expect(retry.token).not.toBe(claim.token);
  });

  it("a key whose process is gone is taken over at once; while that process lives, a retry is 409", async () => {
    const principal = `test:${crypto.randomUUID()}`;
    const fingerprint = requestFingerprint("POST", "/v1/test", { n: 1 });
    const presence = new ProcessPresence({ databaseUrl: api.config.database.url, name: "test", logger: pino({ level: "silent" }) });
    await presence.start();
    const first = await new IdempotencyStore(api.db, { presence }).claim(principal, "gone-1", "POST", "/v1/test", fingerprint);
    if (first.kind !== "claimed") throw new Error("expected a fresh claim");
    expect(await keyRow(principal, "gone-1")).toMatchObject({ state: "in_progress", holder: presence.id });
    await expect(store().claim(principal, "gone-1", "POST", "/v1/test", fingerprint)).rejects.toMatchObject({ status: 409, code: "request_in_progress" });

    // The process dies: its session ends, and with it its presence lock, long before 120 s pass.
    await presence.stop();
    await waitFor(
      async () => (await sql<{ n: number }>`select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = ${presence.id}::oid`.execute(api.db)).rows[0]!.n === 0,
      { timeoutMs: 10_000, what: "the presence lock to be dropped with its session" },
    );
    const retry = await store().claim(principal, "gone-1", "POST", "/v1/test", fingerprint);
    expect(retry.kind).toBe("claimed");
    // The dead request can neither complete nor free the key now.
    const nonce = `n${crypto.randomUUID().replaceAll("-", "")}`;
    await expect(store().transaction(first.claim, async (trx) => (await insertNonce(trx, nonce), { nonce }), answer)).rejects.toBeInstanceOf(IdempotencyClaimLost);
    expect(await nonceExists(nonce)).toBe(false);
    // The key is the retry's now: another request with it is 422, as ever.
    await expect(store().claim(principal, "gone-1", "POST", "/v1/test", requestFingerprint("POST", "/v1/test", { n: 2 }))).rejects.toMatchObject({ status: 422 });
  });

  it("stores a refusal raised inside the unit of work, and replays it (HTTP)", async () => {
    const user = await createUser(api);
    const id = newId("webhookSubscription");
    const sub = await api.db
      .insertInto("webhook_subscriptions")
      .values({ id, user_id: user.id, url: "http://127.0.0.1:9/hook", events: ["*"], description: null, secret: "whsec_test", all_users: false, status: "disabled" })
      .returning("id")
      .executeTakeFirstOrThrow();
    const headers = { "idempotency-key": `refused-${user.id}` };
    const refused = await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token, headers });
    expectProblem(refused, 409, "invalid_state");
    expect(await keyRow(`user:${user.id}`, headers["idempotency-key"])).toMatchObject({ state: "completed", response_status: 409 });
    const replay = await api.request("POST", `/v1/webhooks/${sub.id}/test`, { token: user.token, headers });
    expectProblem(replay, 409, "invalid_state");
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await api.db.selectFrom("webhook_deliveries").select("id").where("subscription_id", "=", sub.id).execute()).toHaveLength(0);
  });
});
