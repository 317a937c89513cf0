import { describe, expect, it } from "vitest";
import { ADMIN_API_KEY, createUser, expectProblem, useTestApi } from "./helpers.ts";

const api = useTestApi();

describe("POST /v1/auth/token", () => {
  it("exchanges an API key for a 24 h scoped bearer token stored only as a hash", async () => {
    const user = await createUser(api);
    const before = Date.now();
    const res = await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["artworks:read", "marketplace:write"] } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ token_type: "Bearer", scope: ["artworks:read", "marketplace:write"] });
    expect(res.body.token).toMatch(/^at_/);
    const ttl = Date.parse(res.body.expires_at) - before;
    expect(ttl).toBeGreaterThan(24 * 3600_000 - 60_000);
    expect(ttl).toBeLessThanOrEqual(24 * 3600_000 + 1000);
    const rows = await api.db.selectFrom("access_tokens").selectAll().where("user_id", "=", user.id).execute();
    expect(rows.some((r) => r.token_hash === res.body.token)).toBe(false);
    expect(rows.map((r) => r.scopes)).toContainEqual(["artworks:read", "marketplace:write"]);
  });

  it("refuses an unknown API key with 401 and issues nothing", async () => {
    const before = await api.db.selectFrom("access_tokens").select((eb) => eb.fn.countAll<string>().as("n")).executeTakeFirstOrThrow();
    const res = await api.request("POST", "/v1/auth/token", { body: { api_key: "sk_not_a_real_key_at_all_000000", scope: ["read"] } });
    expectProblem(res, 401, "unauthenticated");
    const after = await api.db.selectFrom("access_tokens").select((eb) => eb.fn.countAll<string>().as("n")).executeTakeFirstOrThrow();
    expect(after.n).toBe(before.n);
  });

  it("validates scopes: unknown strings are 400, admin scopes for non-admins are 403", async () => {
    const user = await createUser(api);
    expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["artworks:delete"] } }), 400, "validation_failed");
    expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: [] } }), 400, "validation_failed");
    expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: "read" } }), 400, "validation_failed");
    expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["admin"] } }), 403, "insufficient_scope");
    expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["admin:read"] } }), 403, "insufficient_scope");
    const admin = await api.request("POST", "/v1/auth/token", { body: { api_key: ADMIN_API_KEY, scope: ["admin:read"] } });
    expect(admin.status).toBe(201);
  });

  it("rejects malformed JSON, wrong content types, unknown fields and oversize bodies", async () => {
    const user = await createUser(api);
    expectProblem(await api.request("POST", "/v1/auth/token", { rawBody: '{"api_key": ', headers: { "content-type": "application/json" } }), 400, "invalid_json");
    expectProblem(await api.request("POST", "/v1/auth/token", { rawBody: "api_key=x", headers: { "content-type": "application/x-www-form-urlencoded" } }), 415, "unsupported_media_type");
    const unknown = await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["read"], scopes: ["write"] } });
    expectProblem(unknown, 400, "validation_failed");
    expect(unknown.body.errors).toContainEqual(expect.objectContaining({ field: "scopes", code: "unknown_field" }));
    const huge = JSON.stringify({ api_key: user.apiKey, scope: ["read"], pad: "x".repeat(1024 * 1024 + 10) });
    expectProblem(await api.request("POST", "/v1/auth/token", { rawBody: huge, headers: { "content-type": "application/json" } }), 413, "payload_too_large");
    expectProblem(await api.request("POST", "/v1/auth/token", { body: {} }), 400, "validation_failed");
  });
});

describe("bearer tokens", () => {
  it("authenticates, enforces scopes and answers 401 for bad, expired and revoked tokens", async () => {
    const user = await createUser(api, { scope: ["users:read"] });
    const me = await api.request("GET", "/v1/users/me", { token: user.token });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(user.id);

    // users:read cannot write
    expectProblem(await api.request("PATCH", `/v1/users/${user.id}/profile`, { token: user.token, body: { bio: "x" } }), 403, "insufficient_scope");

    expectProblem(await api.request("GET", "/v1/users/me"), 401, "unauthenticated");
    expectProblem(await api.request("GET", "/v1/users/me", { token: "at_garbage" }), 401, "token_invalid");
    expectProblem(await api.request("GET", "/v1/users/me", { headers: { authorization: "Basic abc" } }), 401, "token_invalid");
    // a bad token on a public endpoint is refused too, never silently ignored
    expectProblem(await api.request("GET", `/v1/users/${user.id}`, { token: "at_garbage" }), 401, "token_invalid");
    // the API key is not a bearer token except where an endpoint says so
    expectProblem(await api.request("GET", "/v1/users/me", { token: user.apiKey }), 401, "token_invalid");

    const row = await api.db.selectFrom("access_tokens").select("id").where("user_id", "=", user.id).orderBy("created_at", "desc").executeTakeFirstOrThrow();
    await api.db.updateTable("access_tokens").set({ expires_at: new Date(Date.now() - 1000) }).where("id", "=", row.id).execute();
    expectProblem(await api.request("GET", "/v1/users/me", { token: user.token }), 401, "token_expired");
  });

  it("DELETE /v1/auth/token revokes the presented token at once and only it", async () => {
    const user = await createUser(api, { scope: ["read"] });
    const other = await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["read"] } });
    const res = await api.request("DELETE", "/v1/auth/token", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body.revoked).toBe(true);
    expect(Date.parse(res.body.revoked_at)).toBeGreaterThan(Date.now() - 60_000);
    expectProblem(await api.request("GET", "/v1/users/me", { token: user.token }), 401, "token_revoked");
    expectProblem(await api.request("DELETE", "/v1/auth/token", { token: user.token }), 401, "token_revoked");
    expect((await api.request("GET", "/v1/users/me", { token: other.body.token })).status).toBe(200);
  });
});

describe("/v1/api-keys", () => {
  it("creates keys shown once, lists them without secrets, and revokes keys with their tokens", async () => {
    const user = await createUser(api);
    const created = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "ci" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: "ci" });
    expect(created.body.id).toMatch(/^key_/);
    const secret: string = created.body.secret;

    const list = await api.request("GET", "/v1/api-keys", { token: user.token });
    expect(list.status).toBe(200);
    expect(list.body.data.map((k: { id: string }) => k.id)).toContain(created.body.id);
    expect(list.text).not.toContain(secret);
    const stored = await api.db.selectFrom("api_keys").selectAll().where("id", "=", created.body.id).executeTakeFirstOrThrow();
    expect(stored.secret_hash).not.toContain(secret);

    const exchanged = await api.request("POST", "/v1/auth/token", { body: { api_key: secret, scope: ["read"] } });
    expect(exchanged.status).toBe(201);

    // another user cannot see or revoke it
    const stranger = await createUser(api);
    expectProblem(await api.request("DELETE", `/v1/api-keys/${created.body.id}`, { token: stranger.token }), 404, "not_found");

    const revoked = await api.request("DELETE", `/v1/api-keys/${created.body.id}`, { token: user.token });
    expect(revoked.status).toBe(200);
    expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: secret, scope: ["read"] } }), 401, "unauthenticated");
    expectProblem(await api.request("GET", "/v1/users/me", { token: exchanged.body.token }), 401, "token_revoked");
    expectProblem(await api.request("DELETE", `/v1/api-keys/${created.body.id}`, { token: user.token }), 404, "not_found");
  });
});

describe("conventions", () => {
  it("echoes a valid X-Request-Id, mints req_ ids otherwise, and answers unknown routes with problem+json", async () => {
    const echoed = await api.request("GET", "/v1/nope", { headers: { "x-request-id": "trace-123" } });
    expectProblem(echoed, 404, "not_found");
    expect(echoed.headers.get("x-request-id")).toBe("trace-123");
    expect(echoed.body.request_id).toBe("trace-123");
    const minted = await api.request("GET", "/healthz", { headers: { "x-request-id": "bad id with spaces" } });
    expect(minted.headers.get("x-request-id")).toMatch(/^req_[0-9A-Z]{26}$/);
  });
});
