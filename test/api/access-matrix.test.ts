/**
 * The access rules of every route, generated from the served OpenAPI document (its `x-auth`, written
 * by the route declaration itself), so a new route is covered the moment it exists: anonymous
 * callers get 401 on every route that needs a token and never 401/403 on public ones; a token, or
 * an API key used as the bearer, without the route's scope gets 403 insufficient_scope; a token
 * with the scope but not the role gets 403 forbidden; a suspended user, even an admin holding every
 * scope, gets 403 account_suspended with its token and its API key, and a revoked API key 401
 * token_revoked, on public routes too. Never a 5xx, every refusal a problem+json. The rows that
 * need a resource each (the owner, another user, an admin) are in access-ownership.test.ts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { adminToken, createUser, expectProblem, type TestResponse, type TestUser, useTestApi } from "../support/api.ts";

const api = useTestApi();

interface Operation {
  method: string;
  path: string;
  operationId: string | undefined;
  auth: { public?: true; scope?: string | null; roles?: string[] };
}

let operations: Operation[] = [];
/** Tokens of a collector with one fine scope each. */
const tokens: Record<string, string> = {};
/** API keys of a collector capped at one fine scope each, used as the bearer. */
const keys: Record<string, string> = {};
/** An API key its owner revoked. */
let revokedKey: string;
/** Users an admin suspended after they had a token: an admin with every scope, a collector with `write`. */
const suspended: { role: string; user: TestUser }[] = [];

/** An API key of the token's user, capped at `scope` (POST /v1/api-keys). */
async function createKey(token: string, scope: string[]): Promise<{ id: string; secret: string }> {
  const res = await api.request("POST", "/v1/api-keys", { token, body: { name: `capped at ${scope.join(" ")}`, scope } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** A path with every parameter filled by a well-formed id of no resource. */
function concrete(path: string): string {
  return path.replace(/\{([^}]+)\}/g, (_m, name: string) => (name === "n" ? "1" : "xyz_01JD3Y5V0Q3G7W7J6T4N4C2X1M"));
}

/** The operation called on its concrete path, with an empty JSON body where it takes one. */
function call(op: Operation, token?: string): Promise<TestResponse> {
  return api.request(op.method.toUpperCase(), concrete(op.path), { token, ...(op.method === "get" || op.method === "delete" ? {} : { body: {} }) });
}

function expectProblemShape(res: TestResponse, op: Operation, who: string): void {
  expect(res.status, `${who} ${op.method.toUpperCase()} ${op.path}: ${res.text.slice(0, 300)}`).toBeLessThan(500);
  if (res.status >= 400) {
    expect(res.headers.get("content-type") ?? "", `${who} ${op.method.toUpperCase()} ${op.path}`).toMatch(/^application\/problem\+json|^text\/html/);
  }
}

beforeAll(async () => {
  const doc = await api.request("GET", "/v1/openapi.json");
  expect(doc.status).toBe(200);
  for (const [path, item] of Object.entries(doc.body.paths as Record<string, Record<string, { "x-auth"?: Operation["auth"]; operationId?: string }>>)) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      operations.push({ method, path, operationId: op.operationId, auth: op["x-auth"] as Operation["auth"] });
    }
  }
  for (const scope of ["users:read", "artworks:read"]) {
    tokens[scope] = (await createUser(api, { role: "collector", scope: [scope] })).token;
  }
  const writer = await createUser(api, { role: "collector", scope: ["write"] });
  tokens.write = writer.token;
  for (const scope of ["users:read", "artworks:read"]) keys[scope] = (await createKey(writer.token, [scope])).secret;
  const revoked = await createKey(writer.token, ["read"]);
  expect((await api.request("GET", "/v1/users/me", { token: revoked.secret })).status).toBe(200);
  expect((await api.request("DELETE", `/v1/api-keys/${revoked.id}`, { token: writer.token })).status).toBe(200);
  revokedKey = revoked.secret;
  const admin = await adminToken(api);
  for (const [role, scope] of [["admin", "admin"], ["collector", "write"]] as const) {
    const user = await createUser(api, { role, scope: [scope] });
    // The token works before the suspension: what refuses it after is the suspension alone.
    expect((await api.request("GET", "/v1/users/me", { token: user.token })).status).toBe(200);
    const res = await api.request("PATCH", `/v1/admin/users/${user.id}`, { token: admin, body: { status: "suspended" } });
    expect(res.status, res.text).toBe(200);
    suspended.push({ role, user });
  }
}, 60_000);

describe("the access matrix of every route", () => {
  it("covers every operation of the document, each with its rule", () => {
    expect(operations.length).toBeGreaterThan(80);
    const missing = operations.filter((op) => !op.auth);
    expect(missing.map((op) => `${op.method} ${op.path}`)).toEqual([]);
  });

  it("names every operation: a unique camelCase operationId (what SDK generators make method names of)", () => {
    expect(operations.filter((op) => !op.operationId).map((op) => `${op.method} ${op.path}`)).toEqual([]);
    expect(operations.filter((op) => !/^[a-z][A-Za-z0-9]+$/.test(op.operationId!)).map((op) => op.operationId)).toEqual([]);
    const ids = operations.map((op) => op.operationId);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });

  it("types query parameters as what they are: no boolean or number documented as a string", async () => {
    const doc = (await api.request("GET", "/v1/openapi.json")).body;
    const params = Object.values(doc.paths as Record<string, Record<string, { parameters?: { in: string; name: string; schema: { type?: string; enum?: string[] } }[] }>>)
      .flatMap((item) => Object.values(item).flatMap((op) => op.parameters ?? []))
      .filter((p) => p.in === "query");
    expect(params.length).toBeGreaterThan(20);
    const stringly = params.filter((p) => p.schema.type === "string" && (p.schema.enum?.every((v) => v === "true" || v === "false") || ["page", "limit"].includes(p.name)));
    expect(stringly.map((p) => p.name)).toEqual([]);
    const byName = new Map(params.map((p) => [p.name, p.schema.type]));
    expect({ verified: byName.get("verified"), featured: byName.get("featured"), page: byName.get("page"), limit: byName.get("limit") }).toEqual({ verified: "boolean", featured: "boolean", page: "integer", limit: "integer" });
  });

  it("refuses anonymous callers on every route that needs a token (401), and lets them reach every public one", async () => {
    const outcomes = await Promise.all(
      operations.map(async (op) => {
        const res = await call(op);
        expectProblemShape(res, op, "anonymous");
        return { op, res };
      }),
    );
    for (const { op, res } of outcomes) {
      const name = `${op.method.toUpperCase()} ${op.path}`;
      if (op.auth.public) expect([401, 403], `${name} is public`).not.toContain(res.status);
      else {
        expect(res.status, name).toBe(401);
        expect(res.body?.code, name).toBe("unauthenticated");
      }
    }
  });

  it("refuses a token without the route's scope (403 insufficient_scope), and a token with it but not the role (403 forbidden)", async () => {
    const scoped = operations.filter((op) => !op.auth.public && op.auth.scope);
    expect(scoped.length).toBeGreaterThan(40);
    let roleChecks = 0;
    for (const op of scoped) {
      const name = `${op.method.toUpperCase()} ${op.path} (${op.auth.scope})`;
      // A fine scope of another resource than the one the route asks for.
      const other = op.auth.scope!.startsWith("users:") ? "artworks:read" : "users:read";
      // The same with an API key capped at that scope, as the bearer.
      for (const [credential, bearer] of [["token", tokens[other]], ["API key", keys[other]]] as const) {
        const res = await call(op, bearer);
        expectProblemShape(res, op, `${other} ${credential}`);
        expect(res.status, `${name} with a ${credential}`).toBe(403);
        expect(res.body?.code, `${name} with a ${credential}`).toBe("insufficient_scope");
      }
      // A route limited to roles a collector lacks (e.g. artworks for artists): a collector holding the scope is still refused.
      if (op.auth.roles && !op.auth.roles.includes("collector") && !op.auth.scope!.startsWith("admin")) {
        roleChecks++;
        const byRole = await call(op, tokens.write);
        expectProblemShape(byRole, op, "collector with write");
        expect(byRole.status, name).toBe(403);
        expect(byRole.body?.code, name).toBe("forbidden");
      }
    }
    // POST /v1/artworks is such a route (artists and admins).
    expect(roleChecks).toBeGreaterThanOrEqual(1);
  });

  it("refuses a suspended user on every route (403 account_suspended), with its token and with its API key", async () => {
    for (const { role, user } of suspended) {
      // Public routes too: a bearer, if sent, must be valid (docs/decisions.md#public-endpoints).
      const outcomes = await Promise.all(
        operations.flatMap((op) =>
          [user.token, user.apiKey].map(async (bearer) => {
            const res = await call(op, bearer);
            expectProblemShape(res, op, `suspended ${role}`);
            return { op, res, credential: bearer === user.token ? "token" : "API key" };
          }),
        ),
      );
      for (const { op, res, credential } of outcomes) {
        const name = `suspended ${role} (${credential}) ${op.method.toUpperCase()} ${op.path}`;
        expect(res.status, name).toBe(403);
        expect(res.body?.code, name).toBe("account_suspended");
      }
      // Nor can the key be exchanged for a new token.
      const exchange = await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["read"] } });
      expect([exchange.status, exchange.body?.code]).toEqual([403, "account_suspended"]);
    }
  });

  it("refuses a revoked API key on every route (401 token_revoked), public ones too", async () => {
    const outcomes = await Promise.all(operations.map(async (op) => ({ op, res: await call(op, revokedKey) })));
    for (const { op, res } of outcomes) {
      const name = `revoked API key ${op.method.toUpperCase()} ${op.path}`;
      expectProblemShape(res, op, "revoked API key");
      expect(res.status, name).toBe(401);
      expect(res.body?.code, name).toBe("token_revoked");
    }
  });
});

describe("an API key as the bearer: one rule on every route", () => {
  it("acts as its user with its own scopes, reading and writing within them, refused outside them, and stops everywhere once revoked", async () => {
    const admin = await createUser(api, { role: "admin", scope: ["admin"] });
    // Capped below what the admin's role allows: the key's scopes, not the role's, decide.
    const key = await createKey(admin.token, ["users:write", "webhooks:read", "admin:read"]);
    const stored = await api.db.selectFrom("api_keys").select(["user_id", "scopes", "revoked_at"]).where("id", "=", key.id).executeTakeFirstOrThrow();
    expect(stored).toEqual({ user_id: admin.id, scopes: ["users:write", "webhooks:read", "admin:read"], revoked_at: null });

    const within = [
      ["GET", "/v1/users/me"],
      ["GET", "/v1/webhooks"],
      ["GET", "/v1/admin/reports"],
    ] as const;
    for (const [method, path] of within) {
      const res = await api.request(method, path, { token: key.secret });
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(200);
    }
    expect((await api.request("GET", "/v1/users/me", { token: key.secret })).body.id).toBe(admin.id);
    const bio = `written with an API key ${Date.now()}`;
    const patched = await api.request("PATCH", `/v1/users/${admin.id}/profile`, { token: key.secret, body: { bio } });
    expect(patched.status, patched.text).toBe(200);
    expect((await api.db.selectFrom("users").select("bio").where("id", "=", admin.id).executeTakeFirstOrThrow()).bio).toBe(bio);

    // Outside its scopes, though the admin's role would allow them.
    const outside = [
      ["POST", "/v1/webhooks", { url: "https://hooks.example.com/in", events: ["*"] }, "webhooks:write"],
      ["PATCH", `/v1/admin/users/${admin.id}`, { status: "suspended" }, "admin:write"],
      ["GET", "/v1/fractional/purchases/frac_01JD3Y5V0Q3G7W7J6T4N4C2X1M", undefined, "fractional:read"],
    ] as const;
    for (const [method, path, body, scope] of outside) {
      const res = await api.request(method, path, { token: key.secret, body });
      expectProblem(res, 403, "insufficient_scope");
      expect(res.body.required_scope, `${method} ${path}`).toBe(scope);
    }
    expect(await api.db.selectFrom("webhook_subscriptions").select("id").where("user_id", "=", admin.id).execute()).toEqual([]);
    expect((await api.db.selectFrom("users").select("status").where("id", "=", admin.id).executeTakeFirstOrThrow()).status).toBe("active");

    expect((await api.request("DELETE", `/v1/api-keys/${key.id}`, { token: admin.token })).status).toBe(200);
    for (const [method, path] of [...within, ["PATCH", `/v1/users/${admin.id}/profile`]] as const) {
      expectProblem(await api.request(method, path, { token: key.secret, ...(method === "PATCH" ? { body: { bio: "after" } } : {}) }), 401, "token_revoked");
    }
    expect((await api.db.selectFrom("users").select("bio").where("id", "=", admin.id).executeTakeFirstOrThrow()).bio).toBe(bio);
  });
});
