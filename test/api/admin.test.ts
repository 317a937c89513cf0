import { describe, expect, it } from "vitest";
import { createPlatformDatabase } from "../support/artworks.ts";
import { adminToken, createUser, expectProblem, startTestApi, type TestApi, useTestApi, uniqueName } from "../support/api.ts";

const api = useTestApi();

describe("admin users", () => {
  it("lists users with search, filters and pagination (default limit 50)", async () => {
    const admin = await adminToken(api);
    const tag = uniqueName("tag");
    const created = [];
    for (let i = 0; i < 3; i++) {
      const res = await api.request("POST", "/v1/admin/users", {
        token: admin,
        body: { username: `${tag}_${i}`, email: `${tag}_${i}@example.test`, role: i === 0 ? "artist" : "collector" },
      });
      expect(res.status).toBe(201);
      expect(res.body.api_key.secret).toMatch(/^sk_/);
      expect(res.body.wallet_address).toMatch(/^0x[0-9a-fA-F]{40}$/);
      created.push(res.body);
    }
    const all = await api.request("GET", `/v1/admin/users?q=${tag}`, { token: admin });
    expect(all.status).toBe(200);
    expect(all.body.pagination).toEqual({ page: 1, limit: 50, total: 3, has_more: false });
    expect(all.body.data[0]).toEqual({
      id: expect.any(String), username: expect.any(String), display_name: expect.any(String), email: expect.any(String),
      role: expect.any(String), tier: "bronze", status: "active", wallet_address: expect.any(String), joined_at: expect.any(String), last_login: null,
    });
    const artists = await api.request("GET", `/v1/admin/users?q=${tag}&role=artist`, { token: admin });
    expect(artists.body.data.map((u: { id: string }) => u.id)).toEqual([created[0].id]);
    const page2 = await api.request("GET", `/v1/admin/users?q=${tag}&limit=2&page=2`, { token: admin });
    expect(page2.body.pagination).toEqual({ page: 2, limit: 2, total: 3, has_more: false });
    expect(page2.body.data).toHaveLength(1);
    const byEmail = await api.request("GET", `/v1/admin/users?q=${encodeURIComponent(`${tag}_1@example`)}`, { token: admin });
    expect(byEmail.body.data.map((u: { id: string }) => u.id)).toEqual([created[1].id]);

    for (const q of ["role=emperor", "status=zombie", "tier=diamond", "limit=0", "limit=201", "page=0", "page=x"]) {
      expectProblem(await api.request("GET", `/v1/admin/users?${q}`, { token: admin }), 400, "invalid_parameter");
    }
    expect((await api.request("GET", "/v1/admin/users?unknown=1&limit=200", { token: admin })).status).toBe(200);
  });

  it("is closed to non-admins: missing scope is 403, a demoted admin's token stops at once", async () => {
    const collector = await createUser(api, { scope: ["write"] });
    expectProblem(await api.request("GET", "/v1/admin/users", { token: collector.token }), 403, "insufficient_scope");
    expectProblem(await api.request("GET", "/v1/admin/users"), 401, "unauthenticated");

    const second = await createUser(api, { role: "admin", scope: ["admin"] });
    expect((await api.request("GET", "/v1/admin/users", { token: second.token })).status).toBe(200);
    const admin = await adminToken(api);
    const demoted = await api.request("PATCH", `/v1/admin/users/${second.id}`, { token: admin, body: { role: "collector" } });
    expect(demoted.status).toBe(200);
    expect(demoted.body.role).toBe("collector");
    expectProblem(await api.request("GET", "/v1/admin/users", { token: second.token }), 403, "forbidden");
    // Its token still carries ["admin"], but the role it was issued under is gone: no admin key from it.
    const keysBefore = await api.db.selectFrom("api_keys").select("id").where("user_id", "=", second.id).execute();
    expectProblem(await api.request("POST", "/v1/api-keys", { token: second.token, body: { scope: ["admin"] } }), 403, "insufficient_scope");
    expectProblem(await api.request("POST", "/v1/api-keys", { token: second.token, body: { scope: ["admin:read"] } }), 403, "insufficient_scope");
    expectProblem(await api.request("POST", "/v1/api-keys", { token: second.token, body: {} }), 403, "insufficient_scope");
    expect(await api.db.selectFrom("api_keys").select("id").where("user_id", "=", second.id).execute()).toEqual(keysBefore);
    // What a collector may hold it may still make.
    expect((await api.request("POST", "/v1/api-keys", { token: second.token, body: { scope: ["artworks:read"] } })).status).toBe(201);
  });

  it("suspending a user stops its tokens and keys at once; reactivating restores them", async () => {
    const admin = await adminToken(api);
    const user = await createUser(api);
    const res = await api.request("PATCH", `/v1/admin/users/${user.id}`, { token: admin, body: { status: "suspended" } });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("suspended");
    expectProblem(await api.request("GET", "/v1/users/me", { token: user.token }), 403, "account_suspended");
    expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["read"] } }), 403, "account_suspended");
    await api.request("PATCH", `/v1/admin/users/${user.id}`, { token: admin, body: { status: "active" } });
    expect((await api.request("GET", "/v1/users/me", { token: user.token })).status).toBe(200);
  });

  it("refuses bad changes and self-suspension without changing anything", async () => {
    const admin = await adminToken(api);
    const me = await api.request("GET", "/v1/users/me", { token: admin });
    const user = await createUser(api);
    expectProblem(await api.request("PATCH", `/v1/admin/users/${user.id}`, { token: admin, body: { role: "emperor" } }), 400, "validation_failed");
    expectProblem(await api.request("PATCH", `/v1/admin/users/${user.id}`, { token: admin, body: { status: "suspended", email: "x@y.z" } }), 400, "validation_failed");
    expectProblem(await api.request("PATCH", `/v1/admin/users/${user.id}`, { token: admin, body: {} }), 400, "validation_failed");
    expectProblem(await api.request("PATCH", `/v1/admin/users/${me.body.id}`, { token: admin, body: { status: "suspended" } }), 409, "invalid_state");
    expectProblem(await api.request("PATCH", "/v1/admin/users/usr_01JD3Y5V0Q3G7W7J6T4N4C2X1M", { token: admin, body: { status: "suspended" } }), 404, "not_found");
    const stored = await api.db.selectFrom("users").select(["status", "role"]).where("id", "=", user.id).executeTakeFirstOrThrow();
    expect(stored).toEqual({ status: "active", role: "collector" });

    const dup = await api.request("POST", "/v1/admin/users", { token: admin, body: { username: user.username, email: "other@example.test" } });
    expectProblem(dup, 409, "conflict");
    expectProblem(await api.request("POST", "/v1/admin/users", { token: admin, body: { username: "x", email: "not-an-email" } }), 400, "validation_failed");
  });
});

describe("the last active admin (issue 12)", () => {
  const activeAdmins = (db: TestApi["db"]) =>
    db.selectFrom("users").select("id").where("role", "=", "admin").where("status", "=", "active").execute().then((rows) => rows.map((r) => r.id).sort());

  it("two admins removing each other at once: exactly one succeeds and one active admin remains", async () => {
    // A database of its own: the run's shared one has admins of other test files.
    const database = await createPlatformDatabase();
    let own: TestApi | undefined;
    try {
      own = await startTestApi({ DATABASE_URL: database.databaseUrl });
      const api = own;
      const first = { token: await adminToken(api), id: "" };
      first.id = (await api.request("GET", "/v1/users/me", { token: first.token })).body.id;
      const second = await createUser(api, { role: "admin", scope: ["admin"] });
      const admins = [first, second];
      expect(await activeAdmins(api.db)).toEqual([first.id, second.id].sort());

      for (const change of [{ role: "collector" }, { status: "suspended" }, { role: "artist" }, { status: "suspended" }, { role: "collector" }]) {
        const results = await Promise.all([
          api.request("PATCH", `/v1/admin/users/${second.id}`, { token: first.token, body: change }),
          api.request("PATCH", `/v1/admin/users/${first.id}`, { token: second.token, body: change }),
        ]);
        const winners = results.flatMap((r, i) => (r.status === 200 ? [i] : []));
        expect(winners).toHaveLength(1);
        const loser = results[1 - winners[0]!]!;
        // Refused as the last admin, or (when it arrived after the change) as no longer an admin.
        if (loser.status === 409) expectProblem(loser, 409, "invalid_state");
        else if (loser.status === 403) expect(["forbidden", "account_suspended"]).toContain(loser.body.code);
        else throw new Error(`unexpected ${loser.status} ${loser.text}`);

        const winner = admins[winners[0]!]!;
        const removed = admins[1 - winners[0]!]!;
        expect(await activeAdmins(api.db)).toEqual([winner.id]);
        // Restore the pair for the next round.
        const restored = await api.request("PATCH", `/v1/admin/users/${removed.id}`, { token: winner.token, body: { role: "admin", status: "active" } });
        expect(restored.status).toBe(200);
        expect(await activeAdmins(api.db)).toEqual([first.id, second.id].sort());
      }
    } finally {
      await own?.close();
      await database.drop();
    }
  });
});
