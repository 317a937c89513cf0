/**
 * Resolved credentials are kept a few seconds per process (AuthService.cacheCredentials), and a
 * change beats the cache: the database's triggers NOTIFY on commit, so even a change made outside
 * the API (another process, an operator's SQL) is seen at once, not after the cache's 5 s.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../tools/stack/processes.ts";
import { adminToken, createUser, expectProblem, useTestApi } from "../support/api.ts";

const api = useTestApi();

/** Polls until the token is refused, well within the cache's lifetime: the notification, not the expiry, did it. */
async function refusedSoon(token: string, code: string): Promise<void> {
  const started = Date.now();
  await waitUntil(async () => ((await api.request("GET", "/v1/users/me", { token })).status === 401 ? true : undefined), { timeoutMs: 2_000, intervalMs: 20, what: `the token refused (${code})` });
  expect(Date.now() - started).toBeLessThan(2_000);
  expectProblem(await api.request("GET", "/v1/users/me", { token }), 401, code);
}

describe("the credential cache", () => {
  it("keeps a resolved token: without the trigger's notification, a revocation made in SQL is not seen until the entry expires", async () => {
    const user = await createUser(api, { scope: ["read"] });
    expect((await api.request("GET", "/v1/users/me", { token: user.token })).status).toBe(200);
    await sql`alter table access_tokens disable trigger access_tokens_credentials_changed`.execute(api.db);
    try {
      await api.db.updateTable("access_tokens").set({ revoked_at: new Date() }).where("user_id", "=", user.id).execute();
      expect((await api.request("GET", "/v1/users/me", { token: user.token })).status).toBe(200);
    } finally {
      await sql`alter table access_tokens enable trigger access_tokens_credentials_changed`.execute(api.db);
    }
    await waitUntil(async () => ((await api.request("GET", "/v1/users/me", { token: user.token })).status === 401 ? true : undefined), {
      timeoutMs: 8_000,
      intervalMs: 200,
      what: "the kept entry to expire",
    });
  });

  it("forgets at once a token revoked, an API key revoked or a user suspended in SQL (the triggers' NOTIFY)", async () => {
    const revoked = await createUser(api, { scope: ["read"] });
    expect((await api.request("GET", "/v1/users/me", { token: revoked.token })).status).toBe(200);
    await api.db.updateTable("access_tokens").set({ revoked_at: new Date() }).where("user_id", "=", revoked.id).execute();
    await refusedSoon(revoked.token, "token_revoked");

    const keyRevoked = await createUser(api, { scope: ["read"] });
    expect((await api.request("GET", "/v1/users/me", { token: keyRevoked.token })).status).toBe(200);
    await api.db.updateTable("api_keys").set({ revoked_at: new Date() }).where("user_id", "=", keyRevoked.id).execute();
    await refusedSoon(keyRevoked.token, "token_revoked");

    const suspended = await createUser(api, { scope: ["read"] });
    expect((await api.request("GET", "/v1/users/me", { token: suspended.token })).status).toBe(200);
    await api.db.updateTable("users").set({ status: "suspended" }).where("id", "=", suspended.id).execute();
    await waitUntil(async () => ((await api.request("GET", "/v1/users/me", { token: suspended.token })).status === 403 ? true : undefined), {
      timeoutMs: 2_000,
      intervalMs: 20,
      what: "the suspended user refused",
    });
  });

  it("refuses at once through the API: a revoked token, and a suspended user's next call", async () => {
    const user = await createUser(api, { scope: ["read"] });
    expect((await api.request("GET", "/v1/users/me", { token: user.token })).status).toBe(200);
    expect((await api.request("DELETE", "/v1/auth/token", { token: user.token })).status).toBe(200);
    expectProblem(await api.request("GET", "/v1/users/me", { token: user.token }), 401, "token_revoked");

    const target = await createUser(api, { scope: ["read"] });
    const admin = await adminToken(api);
    expect((await api.request("GET", "/v1/users/me", { token: target.token })).status).toBe(200);
    const suspended = await api.request("PATCH", `/v1/admin/users/${target.id}`, { token: admin, body: { status: "suspended" } });
    expect(suspended.status).toBe(200);
    expect((await api.request("GET", "/v1/users/me", { token: target.token })).status).toBe(403);
  });

  it("serves the token exchange from the kept key, and forgets it at once when the key is revoked or its user suspended", async () => {
    const exchange = (apiKey: string) => api.request("POST", "/v1/auth/token", { body: { api_key: apiKey, scope: ["read"] } });
    const user = await createUser(api, { scope: ["read"] });
    expect((await exchange(user.apiKey)).status).toBe(201);
    // Kept: a revocation the trigger does not announce is not seen by the next exchange.
    await sql`alter table api_keys disable trigger api_keys_credentials_changed`.execute(api.db);
    try {
      await api.db.updateTable("api_keys").set({ revoked_at: new Date() }).where("user_id", "=", user.id).execute();
      expect((await exchange(user.apiKey)).status).toBe(201);
    } finally {
      await sql`alter table api_keys enable trigger api_keys_credentials_changed`.execute(api.db);
    }
    // Announced: refused at once.
    const revoked = await createUser(api, { scope: ["read"] });
    expect((await exchange(revoked.apiKey)).status).toBe(201);
    await api.db.updateTable("api_keys").set({ revoked_at: new Date() }).where("user_id", "=", revoked.id).execute();
    await waitUntil(async () => ((await exchange(revoked.apiKey)).status === 401 ? true : undefined), { timeoutMs: 2_000, intervalMs: 20, what: "the revoked key refused" });
    expectProblem(await exchange(revoked.apiKey), 401, "invalid_credentials");

    const suspended = await createUser(api, { scope: ["read"] });
    expect((await exchange(suspended.apiKey)).status).toBe(201);
    await api.db.updateTable("users").set({ status: "suspended" }).where("id", "=", suspended.id).execute();
    await waitUntil(async () => ((await exchange(suspended.apiKey)).status === 403 ? true : undefined), { timeoutMs: 2_000, intervalMs: 20, what: "the suspended user's key refused" });

    // A kept token is not an API key.
    const holder = await createUser(api, { scope: ["read"] });
    expect((await api.request("GET", "/v1/users/me", { token: holder.token })).status).toBe(200);
    expectProblem(await exchange(holder.token), 401, "invalid_credentials");
  });
});
