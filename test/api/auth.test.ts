import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../tools/stack/processes.ts";
import { ADMIN_API_KEY, createUser, expectProblem, useIsolatedTestApi, useTestApi } from "../support/api.ts";

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
    // Stored as its SHA-256, computed here independently of the code: never as the token itself.
    const stored = rows.find((r) => r.token_hash === sha256Hex(res.body.token));
    expect(stored).toMatchObject({ scopes: ["artworks:read", "marketplace:write"] });
    expect(rows.flatMap((r) => Object.values(r).map(String)).some((v) => v.includes(res.body.token))).toBe(false);
  });

  it("records the key's last use and the user's last login with the exchange, once a minute however many exchanges", async () => {
    const user = await createUser(api);
    const key = () => api.db.selectFrom("api_keys").select(["id", "last_used_at"]).where("user_id", "=", user.id).executeTakeFirstOrThrow();
    const login = async () => (await api.db.selectFrom("users").select("last_login_at").where("id", "=", user.id).executeTakeFirstOrThrow()).last_login_at;
    // As if the last exchange was two minutes ago.
    const earlier = new Date(Date.now() - 120_000);
    await api.db.updateTable("api_keys").set({ last_used_at: earlier }).where("user_id", "=", user.id).execute();
    await api.db.updateTable("users").set({ last_login_at: earlier }).where("id", "=", user.id).execute();
    const exchange = async () => expect((await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["read"] } })).status).toBe(201);
    await exchange();
    const used = (await key()).last_used_at!;
    const loggedIn = (await login())!;
    expect(used.getTime()).toBeGreaterThan(earlier.getTime() + 60_000);
    expect(loggedIn.getTime()).toBeGreaterThan(earlier.getTime() + 60_000);
    // Within the minute: the token is issued, the rows are not written again.
    await exchange();
    expect((await key()).last_used_at).toEqual(used);
    expect(await login()).toEqual(loggedIn);
    expect(await api.db.selectFrom("access_tokens").select("id").where("user_id", "=", user.id).where("api_key_id", "=", (await key()).id).execute()).toHaveLength(3);
  });

  describe("an unknown API key", () => {
    // A database of its own: files running at the same time issue tokens on the shared one.
    const isolated = useIsolatedTestApi();
    it("is refused with 401 and issues nothing", async () => {
      const tokens = () => isolated.db.selectFrom("access_tokens").select((eb) => eb.fn.countAll<string>().as("n")).executeTakeFirstOrThrow();
      const before = await tokens();
      const res = await isolated.request("POST", "/v1/auth/token", { body: { api_key: "sk_not_a_real_key_at_all_000000", scope: ["read"] } });
      expectProblem(res, 401, "invalid_credentials");
      expect((await tokens()).n).toBe(before.n);
    });
  });

  it("validates scopes: unknown strings are 400, admin scopes for non-admins are 403", async () => {
    const user = await createUser(api);
    expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["artworks:delete"] } }), 400, "validation_failed");
    expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: [] } }), 400, "validation_failed");
    const wrongType = await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: "read" } });
    expectProblem(wrongType, 400, "validation_failed");
    expect(wrongType.body.errors).toEqual([expect.objectContaining({ field: "scope", code: "invalid_type" })]);
    // Left out: said as required, not as a type received.
    const left = await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey } });
    expectProblem(left, 400, "validation_failed");
    expect(left.body.errors).toEqual([{ field: "scope", code: "required", message: "scope is required" }]);
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
    // the API key itself is a bearer too, as its user (access-matrix.test.ts has the whole rule)
    expect((await api.request("GET", "/v1/users/me", { token: user.apiKey })).body.id).toBe(user.id);

    const row = await api.db.selectFrom("access_tokens").select("id").where("user_id", "=", user.id).orderBy("created_at", "desc").executeTakeFirstOrThrow();
    await api.db.updateTable("access_tokens").set({ expires_at: new Date(Date.now() - 1000) }).where("id", "=", row.id).execute();
    // A change made in SQL reaches the kept credential by the trigger's NOTIFY, a moment after the
    // commit (through the API it is at once): well within the 5 s the credential is kept.
    const changed = Date.now();
    await waitUntil(async () => ((await api.request("GET", "/v1/users/me", { token: user.token })).status === 401 ? true : undefined), { timeoutMs: 2_000, intervalMs: 10, what: "the expired token refused" });
    expect(Date.now() - changed).toBeLessThan(2_000);
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
    expect(stored.secret_hash).toBe(sha256Hex(secret));
    expect(Object.values(stored).map(String).some((v) => v.includes(secret))).toBe(false);

    const exchanged = await api.request("POST", "/v1/auth/token", { body: { api_key: secret, scope: ["read"] } });
    expect(exchanged.status).toBe(201);

    // another user cannot see or revoke it
    const stranger = await createUser(api);
    expectProblem(await api.request("DELETE", `/v1/api-keys/${created.body.id}`, { token: stranger.token }), 404, "not_found");

    const revoked = await api.request("DELETE", `/v1/api-keys/${created.body.id}`, { token: user.token });
    expect(revoked.status).toBe(200);
    expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: secret, scope: ["read"] } }), 401, "invalid_credentials");
    expectProblem(await api.request("GET", "/v1/users/me", { token: exchanged.body.token }), 401, "token_revoked");
    expectProblem(await api.request("DELETE", `/v1/api-keys/${created.body.id}`, { token: user.token }), 404, "not_found");
  });
});

describe("DELETE /v1/auth/token (issue 7)", () => {
  it("lets a token of any scope revoke itself", async () => {
    const user = await createUser(api, { scope: ["artworks:read"] });
    const res = await api.request("DELETE", "/v1/auth/token", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body.revoked).toBe(true);
    const stored = await api.db.selectFrom("access_tokens").select("revoked_at").where("user_id", "=", user.id).execute();
    expect(stored).toHaveLength(1);
    expect(stored[0]!.revoked_at).toBeInstanceOf(Date);
    expectProblem(await api.request("GET", `/v1/users/${user.id}`, { token: user.token }), 401, "token_revoked");
  });
});

describe("API keys cannot raise privileges (issue 7, 2)", () => {
  const exchange = (apiKey: string, scope: string[]) => api.request("POST", "/v1/auth/token", { body: { api_key: apiKey, scope } });
  const keyRow = (id: string) => api.db.selectFrom("api_keys").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
  const keysOf = async (userId: string) =>
    Number((await api.db.selectFrom("api_keys").select((eb) => eb.fn.countAll<string>().as("n")).where("user_id", "=", userId).executeTakeFirstOrThrow()).n);

  it("refuses to make keys with a narrow token, so users:write cannot be turned into write", async () => {
    const user = await createUser(api, { scope: ["users:write"] });
    const before = await keysOf(user.id);
    const res = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "escalate" } });
    expectProblem(res, 403, "insufficient_scope");
    expect(await keysOf(user.id)).toBe(before);
    const revoke = await api.request("DELETE", `/v1/api-keys/key_01JD3Y5V0Q3G7W7J6T4N4C2X1M`, { token: user.token });
    expectProblem(revoke, 403, "insufficient_scope");
  });

  it("caps a key at its maker's scopes: an admin's write token makes no key that grants admin", async () => {
    const admin = await createUser(api, { role: "admin", scope: ["write"] });
    const rootKey = await api.db.selectFrom("api_keys").select("id").where("user_id", "=", admin.id).executeTakeFirstOrThrow();
    const created = await api.request("POST", "/v1/api-keys", { token: admin.token, body: { name: "ci" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ scopes: ["write"], parent_key_id: rootKey.id });
    expect(await keyRow(created.body.id)).toMatchObject({ scopes: ["write"], parent_api_key_id: rootKey.id });

    expectProblem(await exchange(created.body.secret, ["admin"]), 403, "insufficient_scope");
    expectProblem(await exchange(created.body.secret, ["admin:read"]), 403, "insufficient_scope");
    expectProblem(await exchange(created.body.secret, ["write", "admin:write"]), 403, "insufficient_scope");
    const allowed = await exchange(created.body.secret, ["artworks:write", "read"]);
    expect(allowed.status).toBe(201);
    expectProblem(await api.request("GET", "/v1/admin/users", { token: allowed.body.token }), 403, "insufficient_scope");
    // The platform-issued first key still follows the role.
    expect((await exchange(admin.apiKey, ["admin"])).status).toBe(201);

    const list = await api.request("GET", "/v1/api-keys", { token: admin.token });
    expect(list.status).toBe(200);
    const listed = new Map(list.body.data.map((k: { id: string }) => [k.id, k]));
    expect(listed.get(created.body.id)).toMatchObject({ scopes: ["write"], parent_key_id: rootKey.id });
    expect(listed.get(rootKey.id)).toMatchObject({ scopes: ["admin"], parent_key_id: null });
  });

  it("makes narrower keys on request, never wider ones, and a narrow key's tokens stay narrow", async () => {
    const user = await createUser(api, { scope: ["write"] });
    const before = await keysOf(user.id);
    expectProblem(await api.request("POST", "/v1/api-keys", { token: user.token, body: { scope: ["admin"] } }), 403, "insufficient_scope");
    expect(await keysOf(user.id)).toBe(before);

    const narrow = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "reader", scope: ["artworks:read"] } });
    expect(narrow.status).toBe(201);
    expect(narrow.body.scopes).toEqual(["artworks:read"]);
    expect((await keyRow(narrow.body.id)).scopes).toEqual(["artworks:read"]);
    expectProblem(await exchange(narrow.body.secret, ["read"]), 403, "insufficient_scope");
    expectProblem(await exchange(narrow.body.secret, ["users:write"]), 403, "insufficient_scope");
    const token = await exchange(narrow.body.secret, ["artworks:read"]);
    expect(token.status).toBe(201);
    // Its token cannot make keys at all (the coarse write scope is needed).
    expectProblem(await api.request("POST", "/v1/api-keys", { token: token.body.token, body: {} }), 403, "insufficient_scope");
    expect(await keysOf(user.id)).toBe(before + 1);
  });

  it("revokes the keys made from a revoked key's tokens, transitively, with their tokens", async () => {
    const user = await createUser(api, { scope: ["write"] });
    const child = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "child" } });
    const childToken = (await exchange(child.body.secret, ["write"])).body.token as string;
    const grandchild = await api.request("POST", "/v1/api-keys", { token: childToken, body: { name: "grandchild" } });
    expect(grandchild.status).toBe(201);
    expect(grandchild.body.parent_key_id).toBe(child.body.id);
    const grandchildToken = (await exchange(grandchild.body.secret, ["read"])).body.token as string;
    expect((await api.request("GET", "/v1/users/me", { token: grandchildToken })).status).toBe(200);

    expect((await api.request("DELETE", `/v1/api-keys/${child.body.id}`, { token: user.token })).status).toBe(200);
    expect((await keyRow(child.body.id)).revoked_at).toBeInstanceOf(Date);
    expect((await keyRow(grandchild.body.id)).revoked_at).toBeInstanceOf(Date);
    const tokens = await api.db
      .selectFrom("access_tokens")
      .select(["api_key_id", "revoked_at"])
      .where("api_key_id", "in", [child.body.id, grandchild.body.id])
      .execute();
    expect(tokens).toHaveLength(2);
    for (const t of tokens) expect(t.revoked_at).toBeInstanceOf(Date);
    expectProblem(await api.request("GET", "/v1/users/me", { token: grandchildToken }), 401, "token_revoked");
    expectProblem(await exchange(grandchild.body.secret, ["read"]), 401, "invalid_credentials");
    // The key the user's own token came from is untouched.
    expect((await keyRow(child.body.parent_key_id)).revoked_at).toBeNull();
    expect((await api.request("GET", "/v1/users/me", { token: user.token })).status).toBe(200);
  });

  it("leaves no live key behind when keys are made from a key's tokens while it is revoked", async () => {
    const user = await createUser(api, { scope: ["write"] });
    const parent = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "parent" } });
    const parentToken = (await exchange(parent.body.secret, ["write"])).body.token as string;
    const results = await Promise.all([
      ...Array.from({ length: 4 }, (_, i) => api.request("POST", "/v1/api-keys", { token: parentToken, body: { name: `racer-${i}` } })),
      api.request("DELETE", `/v1/api-keys/${parent.body.id}`, { token: user.token }),
      ...Array.from({ length: 4 }, (_, i) => api.request("POST", "/v1/api-keys", { token: parentToken, body: { name: `late-${i}` } })),
    ]);
    expect(results[4]!.status).toBe(200);
    for (const r of results.filter((_, i) => i !== 4)) expect([201, 401]).toContain(r.status);
    const children = await api.db.selectFrom("api_keys").select(["id", "revoked_at"]).where("parent_api_key_id", "=", parent.body.id).execute();
    expect(children.map((c) => c.id).sort()).toEqual(results.filter((r) => r.status === 201).map((r) => r.body.id).sort());
    for (const c of children) expect(c.revoked_at).toBeInstanceOf(Date);
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

function sha256Hex(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}
