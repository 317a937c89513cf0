import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { createPlatformDatabase } from "../support/artworks.ts";
import { ADMIN_API_KEY, adminToken, createUser, expectProblem, startTestApi, type TestApi, useTestApi, uniqueName } from "../support/api.ts";

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
    // Its token carried ["admin"]: revoked with the demotion, so it makes nothing either.
    expectProblem(await api.request("GET", "/v1/admin/users", { token: second.token }), 401, "token_revoked");
    const keysBefore = await api.db.selectFrom("api_keys").select("id").where("user_id", "=", second.id).execute();
    expectProblem(await api.request("POST", "/v1/api-keys", { token: second.token, body: { scope: ["admin"] } }), 401, "token_revoked");
    expect(await api.db.selectFrom("api_keys").select("id").where("user_id", "=", second.id).execute()).toEqual(keysBefore);
    // Its first key has no cap of its own: it grants what a collector may hold, and no more.
    expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: second.apiKey, scope: ["admin:read"] } }), 403, "insufficient_scope");
    const token = await api.request("POST", "/v1/auth/token", { body: { api_key: second.apiKey, scope: ["write"] } });
    expect(token.status).toBe(201);
    expectProblem(await api.request("GET", "/v1/admin/users", { token: token.body.token }), 403, "insufficient_scope");
    expectProblem(await api.request("POST", "/v1/api-keys", { token: token.body.token, body: { scope: ["admin"] } }), 403, "insufficient_scope");
    expect((await api.request("POST", "/v1/api-keys", { token: token.body.token, body: { scope: ["artworks:read"] } })).status).toBe(201);
  });

  it("a demotion revokes, with the role, the user's tokens and keys holding admin scopes (and the keys made from them); the rest keep working", async () => {
    const second = await createUser(api, { role: "admin", scope: ["admin"] });
    const exchange = (apiKey: string, scope: string[]) => api.request("POST", "/v1/auth/token", { body: { api_key: apiKey, scope } });
    const mint = async (token: string, scope: string[]) => {
      const res = await api.request("POST", "/v1/api-keys", { token, body: { scope } });
      expect(res.status, res.text).toBe(201);
      return res.body as { id: string; secret: string };
    };
    const tokenOf = async (apiKey: string, scope: string[]) => {
      const res = await exchange(apiKey, scope);
      expect(res.status, res.text).toBe(201);
      return res.body.token as string;
    };
    // Made while it is an admin: keys capped with admin scopes, their tokens, a key made with one of those.
    const adminKey = await mint(second.token, ["admin"]);
    const adminReadKey = await mint(second.token, ["admin:read", "artworks:read"]);
    const adminKeyToken = await tokenOf(adminKey.secret, ["admin"]);
    const adminReadToken = await tokenOf(adminReadKey.secret, ["admin:read"]);
    const madeByAdminKey = await mint(adminKeyToken, ["artworks:read"]);
    const firstKeyAdminToken = await tokenOf(second.apiKey, ["admin:write"]);
    // And what a collector may hold too: a write key, its token, a read token of the first key.
    const writeKey = await mint(second.token, ["write"]);
    const writeToken = await tokenOf(writeKey.secret, ["write"]);
    const readToken = await tokenOf(second.apiKey, ["read"]);

    const admin = await adminToken(api);
    expect((await api.request("PATCH", `/v1/admin/users/${second.id}`, { token: admin, body: { role: "collector" } })).status).toBe(200);

    // Revoked (401), not merely refused by the role (403): the tokens, on any endpoint...
    for (const token of [second.token, adminKeyToken, adminReadToken, firstKeyAdminToken]) {
      expectProblem(await api.request("GET", "/v1/users/me", { token }), 401, "token_revoked");
    }
    // ...the keys, as bearers and in an exchange for what a collector may hold.
    for (const key of [adminKey, adminReadKey, madeByAdminKey]) {
      expectProblem(await api.request("GET", "/v1/users/me", { token: key.secret }), 401, "token_revoked");
      expectProblem(await exchange(key.secret, ["artworks:read"]), 401, "invalid_credentials");
    }
    // The user's live keys are its first one (now a collector's) and the write key.
    const listed = await api.request("GET", "/v1/api-keys", { token: writeToken });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((k: { id: string; scopes: string[] }) => [k.id, k.scopes]).sort()).toEqual(
      [[(await api.db.selectFrom("api_keys").select("id").where("user_id", "=", second.id).where("parent_api_key_id", "is", null).executeTakeFirstOrThrow()).id, ["write"]], [writeKey.id, ["write"]]].sort(),
    );
    const stored = await api.db.selectFrom("api_keys").select(["id", "revoked_at"]).where("user_id", "=", second.id).execute();
    expect(stored.filter((k) => k.revoked_at !== null).map((k) => k.id).sort()).toEqual([adminKey.id, adminReadKey.id, madeByAdminKey.id].sort());
    const revokedTokens = await api.db.selectFrom("access_tokens").select("scopes").where("user_id", "=", second.id).where("revoked_at", "is not", null).execute();
    expect(revokedTokens.map((t) => t.scopes).sort()).toEqual([["admin"], ["admin"], ["admin:read"], ["admin:write"]].sort());
    // What it may still hold keeps working.
    expect((await api.request("GET", "/v1/users/me", { token: writeToken })).status).toBe(200);
    expect((await api.request("GET", "/v1/users/me", { token: readToken })).status).toBe(200);
    expect((await api.request("GET", "/v1/users/me", { token: writeKey.secret })).status).toBe(200);
    expect((await exchange(writeKey.secret, ["write"])).status).toBe(201);
    expect((await mint(writeToken, ["artworks:read"])).id).toMatch(/^key_/);
    // A promotion gives back nothing revoked.
    expect((await api.request("PATCH", `/v1/admin/users/${second.id}`, { token: admin, body: { role: "admin" } })).status).toBe(200);
    expectProblem(await api.request("GET", "/v1/users/me", { token: adminKeyToken }), 401, "token_revoked");
    expectProblem(await exchange(adminKey.secret, ["admin"]), 401, "invalid_credentials");
  });

  it("a demotion and an admin key being made at once: whichever goes first, no live admin key remains", async () => {
    const admin = await adminToken(api);
    for (let round = 0; round < 8; round++) {
      const second = await createUser(api, { role: "admin", scope: ["admin"] });
      const [demoted, minted] = await Promise.all([
        api.request("PATCH", `/v1/admin/users/${second.id}`, { token: admin, body: { role: "collector" } }),
        api.request("POST", "/v1/api-keys", { token: second.token, body: { scope: ["admin"] } }),
      ]);
      expect(demoted.status).toBe(200);
      if (minted.status === 201) {
        // Made before the demotion committed: revoked by it.
        expectProblem(await api.request("POST", "/v1/auth/token", { body: { api_key: minted.body.secret, scope: ["read"] } }), 401, "invalid_credentials");
      } else if (minted.status === 401) expectProblem(minted, 401, "token_revoked");
      else expectProblem(minted, 403, "insufficient_scope"); // the role read after the demotion committed
      const live = await api.db
        .selectFrom("api_keys")
        .select("id")
        .where("user_id", "=", second.id)
        .where("revoked_at", "is", null)
        .where(sql<boolean>`scopes && array['admin', 'admin:read', 'admin:write']::text[]`)
        .execute();
      expect(live).toEqual([]);
      const token = await api.request("POST", "/v1/auth/token", { body: { api_key: second.apiKey, scope: ["write"] } });
      const listed = await api.request("GET", "/v1/api-keys", { token: token.body.token });
      expect(listed.body.data.flatMap((k: { scopes: string[] }) => k.scopes)).toEqual(["write"]);
    }
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
      const first = { token: await adminToken(api), id: "", apiKey: ADMIN_API_KEY };
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
        // Refused as the last admin, or (when it arrived after the change) as no longer an admin, or
        // with its admin token, revoked by its demotion.
        if (loser.status === 409) expectProblem(loser, 409, "invalid_state");
        else if (loser.status === 403) expect(["forbidden", "account_suspended"]).toContain(loser.body.code);
        else if (loser.status === 401) expectProblem(loser, 401, "token_revoked");
        else throw new Error(`unexpected ${loser.status} ${loser.text}`);

        const winner = admins[winners[0]!]!;
        const removed = admins[1 - winners[0]!]!;
        expect(await activeAdmins(api.db)).toEqual([winner.id]);
        // Restore the pair for the next round.
        const restored = await api.request("PATCH", `/v1/admin/users/${removed.id}`, { token: winner.token, body: { role: "admin", status: "active" } });
        expect(restored.status).toBe(200);
        // A demotion revoked its admin token; its first key grants what its role holds again.
        const token = await api.request("POST", "/v1/auth/token", { body: { api_key: removed.apiKey, scope: ["admin"] } });
        expect(token.status).toBe(201);
        removed.token = token.body.token;
        expect(await activeAdmins(api.db)).toEqual([first.id, second.id].sort());
      }
    } finally {
      await own?.close();
      await database.drop();
    }
  });
});
