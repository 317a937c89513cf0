/**
 * The access rules of every route, generated from the served OpenAPI document (its `x-auth`, written
 * by the route declaration itself), so a new route is covered the moment it exists: anonymous
 * callers get 401 on every route that needs a token and never 401/403 on public ones; a token
 * without the route's scope gets 403 insufficient_scope; a token with the scope but not the role
 * gets 403 forbidden; a suspended user, even an admin holding every scope, gets 403
 * account_suspended with its token and its API key, on public routes too. Never a 5xx, every
 * refusal a problem+json. The rows that need a resource each (the owner, another user, an admin)
 * are in access-ownership.test.ts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { adminToken, createUser, type TestResponse, type TestUser, useTestApi } from "./helpers.ts";

const api = useTestApi();

interface Operation {
  method: string;
  path: string;
  operationId: string | undefined;
  auth: { public?: true; scope?: string | null; roles?: string[]; api_key?: true };
}

let operations: Operation[] = [];
/** Tokens of a collector with one fine scope each. */
const tokens: Record<string, string> = {};
/** Users an admin suspended after they had a token: an admin with every scope, a collector with `write`. */
const suspended: { role: string; user: TestUser }[] = [];

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
  tokens.write = (await createUser(api, { role: "collector", scope: ["write"] })).token;
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
      const res = await call(op, tokens[other]);
      expectProblemShape(res, op, other);
      expect(res.status, name).toBe(403);
      expect(res.body?.code, name).toBe("insufficient_scope");
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
      // Public routes too: a bearer, if sent, must be valid (CONTRACT §2).
      const outcomes = await Promise.all(
        operations.flatMap((op) =>
          [user.token, ...(op.auth.api_key ? [user.apiKey] : [])].map(async (bearer) => {
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
});
