import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { describe, expect, it } from "vitest";
import { adminToken, createUser, expectProblem, uniqueName, useTestApi } from "../support/api.ts";

const api = useTestApi();

describe("users", () => {
  it("GET /v1/users/me shows the caller's own fields, including a custodial wallet", async () => {
    const user = await createUser(api, { role: "artist" });
    const me = await api.request("GET", "/v1/users/me", { token: user.token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: user.id, username: user.username, email: user.email, role: "artist", tier: "bronze", status: "active", service_points: 0, badges: [] });
    expect(me.body.wallet_address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(me.body.created_at).toMatch(/Z$/);
  });

  it("GET /v1/users/:id is public and never leaks email or wallet", async () => {
    const user = await createUser(api);
    const res = await api.request("GET", `/v1/users/${user.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: user.id, username: user.username, artworks_count: 0, followers_count: 0 });
    expect(res.body).not.toHaveProperty("email");
    expect(res.body).not.toHaveProperty("wallet_address");
    expect(res.text).not.toContain(user.email);
    expectProblem(await api.request("GET", "/v1/users/usr_01JD3Y5V0Q3G7W7J6T4N4C2X1M"), 404, "not_found");
    expectProblem(await api.request("GET", "/v1/users/not-an-id"), 404, "not_found");
  });

  it("PATCH /v1/users/:id/profile updates only the caller's own profile", async () => {
    const user = await createUser(api);
    const res = await api.request("PATCH", `/v1/users/${user.id}/profile`, {
      token: user.token,
      body: { display_name: "Ada", bio: "Painter", location: "Lisbon", website: "https://ada.example.com" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: user.id, display_name: "Ada", bio: "Painter", location: "Lisbon", website: "https://ada.example.com" });
    expect(Date.parse(res.body.updated_at)).toBeGreaterThan(Date.now() - 60_000);
    const stored = await api.db.selectFrom("users").selectAll().where("id", "=", user.id).executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ display_name: "Ada", bio: "Painter", location: "Lisbon", website: "https://ada.example.com" });

    const cleared = await api.request("PATCH", `/v1/users/${user.id}/profile`, { token: user.token, body: { bio: "" } });
    expect(cleared.body).toEqual({ id: user.id, bio: null, updated_at: expect.any(String) });

    const other = await createUser(api);
    expectProblem(await api.request("PATCH", `/v1/users/${user.id}/profile`, { token: other.token, body: { bio: "hacked" } }), 403, "forbidden");
    const admin = await createUser(api, { role: "admin", scope: ["admin"] });
    expectProblem(await api.request("PATCH", `/v1/users/${user.id}/profile`, { token: admin.token, body: { bio: "hacked" } }), 403, "forbidden");
    expect((await api.db.selectFrom("users").select("bio").where("id", "=", user.id).executeTakeFirstOrThrow()).bio).toBeNull();
  });

  it("refuses bad profile input and changes nothing", async () => {
    const user = await createUser(api);
    const before = await api.db.selectFrom("users").selectAll().where("id", "=", user.id).executeTakeFirstOrThrow();
    const bad: unknown[] = [
      { website: "javascript:alert(1)" },
      { website: "ftp://files.example.com" },
      { website: "not a url" },
      { display_name: "" },
      { display_name: "x".repeat(101) },
      { bio: "x".repeat(1001) },
      { location: 42 },
      { email: "new@example.com" },
      { role: "admin" },
      {},
    ];
    for (const body of bad) {
      expectProblem(await api.request("PATCH", `/v1/users/${user.id}/profile`, { token: user.token, body }), 400, "validation_failed");
    }
    const after = await api.db.selectFrom("users").selectAll().where("id", "=", user.id).executeTakeFirstOrThrow();
    expect(after).toEqual(before);
  });
});

describe("last_login", () => {
  const listed = async (admin: string, username: string) => {
    const res = await api.request("GET", `/v1/admin/users?q=${encodeURIComponent(username)}`, { token: admin });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    return res.body.data[0] as { id: string; joined_at: string; last_login: string | null };
  };
  const stored = async (id: string) => (await api.db.selectFrom("users").select(["created_at", "last_login_at"]).where("id", "=", id).executeTakeFirstOrThrow());
  const within = (iso: string | null, from: number, to: number) => {
    expect(iso).not.toBeNull();
    // Postgres' now() is the transaction's start; the database runs on this machine's clock.
    expect(Date.parse(iso!)).toBeGreaterThanOrEqual(from - 1000);
    expect(Date.parse(iso!)).toBeLessThanOrEqual(to + 1000);
  };

  it("is null until the first token exchange, then moves with exchanges a minute apart; joined_at is created_at", async () => {
    const admin = await adminToken(api);
    const username = uniqueName();
    const created = await api.request("POST", "/v1/admin/users", { token: admin, body: { username, email: `${username}@example.test`, role: "collector" } });
    expect(created.status).toBe(201);
    expect(created.body.last_login).toBeNull();
    const row = await stored(created.body.id);
    expect(await listed(admin, username)).toMatchObject({ id: created.body.id, joined_at: row.created_at.toISOString(), last_login: null });

    // A refused exchange is no login.
    expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: created.body.api_key.secret, scope: ["admin"] } }), 403, "insufficient_scope");
    expect((await stored(created.body.id)).last_login_at).toBeNull();

    const t0 = Date.now();
    const exchanged = await api.request("POST", "/v1/auth/token", { body: { api_key: created.body.api_key.secret, scope: ["read"] } });
    expect(exchanged.status).toBe(201);
    const first = await listed(admin, username);
    within(first.last_login, t0, Date.now());
    expect(first.last_login).toBe((await stored(created.body.id)).last_login_at!.toISOString());

    // Exchanges record the login to the minute: one half a minute after the last leaves it...
    const halfAMinuteAgo = new Date(Date.parse(first.last_login!) - 30_000);
    await api.db.updateTable("users").set({ last_login_at: halfAMinuteAgo }).where("id", "=", created.body.id).execute();
    expect((await api.request("POST", "/v1/auth/token", { body: { api_key: created.body.api_key.secret, scope: ["read"] } })).status).toBe(201);
    expect((await listed(admin, username)).last_login).toBe(halfAMinuteAgo.toISOString());
    // ...one more than a minute after the last moves it.
    await api.db.updateTable("users").set({ last_login_at: new Date(Date.parse(first.last_login!) - 61_000) }).where("id", "=", created.body.id).execute();
    const t1 = Date.now();
    expect((await api.request("POST", "/v1/auth/token", { body: { api_key: created.body.api_key.secret, scope: ["read"] } })).status).toBe(201);
    const second = await listed(admin, username);
    within(second.last_login, t1, Date.now());
    expect(second.joined_at).toBe(first.joined_at);

    // The admin's user update answers the same fields.
    const patched = await api.request("PATCH", `/v1/admin/users/${created.body.id}`, { token: admin, body: { status: "active" } });
    expect(patched.body).toMatchObject({ joined_at: first.joined_at, last_login: second.last_login });
  });

  it("is set by a Sign-In with Ethereum, the first (which creates the user) and each one after", async () => {
    const admin = await adminToken(api);
    const account = privateKeyToAccount(generatePrivateKey());
    const signIn = async () => {
      const nonce = (await api.request("POST", "/v1/auth/siwe/nonce")).body.nonce;
      const message = createSiweMessage({
        domain: "api.test.local", address: account.address, statement: "Sign in to the art platform", uri: "https://api.test.local/login",
        version: "1", chainId: api.config.chain.id, nonce, issuedAt: new Date(),
      });
      const res = await api.request("POST", "/v1/auth/siwe/verify", { body: { message, signature: await account.signMessage({ message }) } });
      expect(res.status, res.text).toBe(201);
      return res.body.token as string;
    };
    const t0 = Date.now();
    const token = await signIn();
    const me = (await api.request("GET", "/v1/users/me", { token })).body;
    const first = await listed(admin, me.username);
    expect(first.joined_at).toBe(me.created_at);
    within(first.last_login, t0, Date.now());

    // As if the first were an hour ago: the next sets it to its own time.
    await api.db.updateTable("users").set({ last_login_at: new Date(Date.parse(first.last_login!) - 3_600_000) }).where("id", "=", me.id).execute();
    const t1 = Date.now();
    await signIn();
    const second = await listed(admin, me.username);
    within(second.last_login, t1, Date.now());
    expect((await stored(me.id)).last_login_at!.toISOString()).toBe(second.last_login);
  });
});
