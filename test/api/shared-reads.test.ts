/**
 * Identical reads in flight are computed once per round (api/src/http/shared-reads.ts): a request
 * that arrives while its read is computed waits for the next computation, never the running one,
 * so no answer predates its request; its own credential and rate limit are checked as the route
 * would check them.
 */
import type { AddressInfo } from "node:net";
import { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import express from "express";
import { sql } from "kysely";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { errorHandler } from "../../api/src/http/problem.ts";
import type { IdempotencyStore } from "../../api/src/http/idempotency.ts";
import type { RateLimiter } from "../../api/src/http/rate-limit.ts";
import { ApiRouter } from "../../api/src/http/route.ts";
import { type Computed, SharedReads } from "../../api/src/http/shared-reads.ts";
import { ApiError } from "../../api/src/lib/errors.ts";
import type { AuthContext } from "../../api/src/lib/actor.ts";
import { waitUntil } from "../../tools/stack/processes.ts";
import { createUser, expectProblem, send, useIsolatedTestApi } from "../support/api.ts";

/** A computation held until the test lets it end; `seen` is what it read when it started. */
function gatedComputations(read: () => number) {
  const gates: (() => void)[] = [];
  const compute = async (): Promise<Computed> => {
    const seen = read();
    await new Promise<void>((resolve) => gates.push(resolve));
    return { answer: { json: JSON.stringify({ seen }), etag: `W/"${seen}"`, isPublic: false, cacheable: false }, result: { seen } };
  };
  return { gates, compute };
}

describe("SharedReads", () => {
  it("answers a request that arrives during a computation with the next one, never the running one", async () => {
    const shared = new SharedReads();
    let database = 1;
    const { gates, compute } = gatedComputations(() => database);
    const first = shared.lead("k", { compute, auth: null });
    expect(gates).toHaveLength(1);
    database = 2; // a write commits while the first computation runs
    const second = shared.join("k");
    const third = shared.lead("k", { compute, auth: null });
    expect(gates).toHaveLength(1); // they wait: no second computation while one runs
    gates.shift()!();
    expect(await first).toMatchObject({ kind: "ran", computed: { result: { seen: 1 } } });
    await waitUntil(async () => (gates.length === 1 ? true : undefined), { timeoutMs: 1_000, intervalMs: 1, what: "the next computation" });
    gates.shift()!();
    expect(JSON.parse((await second)!.json)).toEqual({ seen: 2 });
    expect(await third).toMatchObject({ kind: "shared", answer: { json: JSON.stringify({ seen: 2 }) } });
    expect(shared.stats).toEqual({ computed: 2, joined: 2 });
    // Nothing is kept once a key's requests are answered: the next request computes.
    expect(shared.running("k")).toBeUndefined();
    expect(shared.join("k")).toBeUndefined();
  });

  it("does not share between credential contexts, and a failed computation sends those waiting to compute their own", async () => {
    const shared = new SharedReads();
    const { gates, compute } = gatedComputations(() => 1);
    const reader: AuthContext = { userId: "u1", role: "collector", status: "active", tokenId: "t1", apiKeyId: "k1", scopes: ["read"], principal: "user:u1" };
    const first = shared.lead("k", { compute, auth: reader });
    // The same header resolving to another context (a new role meanwhile): not this computation's.
    expect(await shared.lead("k", { compute, auth: { ...reader, role: "artist" } })).toBeNull();
    expect(await shared.lead("k", { compute, auth: { ...reader, scopes: ["read", "write"] } })).toBeNull();
    const waiting = shared.lead("k", { compute, auth: { ...reader } });

    let failures = 0;
    const failing = shared.lead("f", { compute: async () => { failures++; throw new Error("boom"); }, auth: null });
    const waitingForFailure = shared.join("f");
    await expect(failing).rejects.toThrow("boom");
    expect(await waitingForFailure).toBeNull();
    expect(failures).toBe(2);

    gates.shift()!();
    await first;
    await waitUntil(async () => (gates.length === 1 ? true : undefined), { timeoutMs: 1_000, intervalMs: 1, what: "the next computation" });
    gates.shift()!();
    expect(await waiting).toMatchObject({ kind: "shared" });
  });
});

describe("ApiRouter's shared reads", () => {
  let url = "";
  let server: ReturnType<express.Express["listen"]>;
  const shared = new SharedReads();
  const consumed: string[] = [];
  const revoked = new Set<string>();
  const gates: (() => void)[] = [];
  let gateArrived = () => {};
  /** Holds a computation until the test lets it end. */
  const held = () =>
    new Promise<void>((resolve) => {
      gates.push(resolve);
      gateArrived();
    });
  let computations = 0;
  let perRequestRuns = 0;
  const contextOf = (token: string): AuthContext => ({ userId: token, role: "collector", status: "active", tokenId: token, apiKeyId: null, scopes: ["read"], principal: `user:${token}` });

  beforeAll(async () => {
    const router = express.Router();
    const rateLimiter: RateLimiter = {
      consume: async (kind, key) => {
        consumed.push(`${kind} ${key}`);
        return { allowed: true, limit: 100, remaining: 99, resetSeconds: 60 };
      },
      ready: async () => true,
      close: async () => {},
    };
    const api = new ApiRouter({
      router,
      registry: new OpenAPIRegistry(),
      authenticate: async (req) => {
        const header = req.get("Authorization");
        if (!header) return null;
        const token = header.replace(/^Bearer /, "");
        if (revoked.has(token)) throw new ApiError(401, "token_revoked", "This token has been revoked");
        return contextOf(token);
      },
      rateLimiter,
      idempotency: {} as IdempotencyStore,
      checkResponses: true,
      sharedReads: shared,
    });
    router.use(api.joinSharedReads);
    api.route({
      method: "get",
      path: "/v1/things/:id",
      operationId: "getThing",
      summary: "A thing, held until the test lets it go",
      tags: ["Test"],
      auth: { scope: "read" },
      params: z.object({ id: z.string() }),
      response: z.object({ id: z.string(), computation: z.number(), user: z.string() }),
      handler: async ({ params, auth }) => {
        const computation = ++computations;
        await held();
        return { id: params.id, computation, user: auth.userId };
      },
    });
    api.route({
      method: "get",
      path: "/v1/reads-request",
      operationId: "readsRequest",
      summary: "Reads a header without saying so",
      tags: ["Test"],
      auth: { public: true },
      response: z.object({ accept: z.string() }),
      handler: async ({ req }) => ({ accept: req.get("Accept") ?? "" }),
    });
    api.route({
      method: "get",
      path: "/v1/per-request",
      operationId: "perRequest",
      summary: "Reads a header, and says so",
      tags: ["Test"],
      auth: { public: true },
      perRequest: true,
      response: z.object({ accept: z.string(), run: z.number() }),
      handler: async ({ req }) => ({ accept: req.get("Accept") ?? "", run: ++perRequestRuns }),
    });
    const app = express();
    app.use(router);
    app.use(errorHandler(pino({ level: "silent" })));
    server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** Lets each held computation end as it arrives, until `answered` settles; its outcome. */
  const releaseUntil = async <T>(answered: Promise<T>): Promise<T> => {
    let settled = false;
    const over = answered.then(
      () => void (settled = true),
      () => void (settled = true),
    );
    while (!settled) {
      const arrived = new Promise<void>((resolve) => (gateArrived = resolve));
      while (gates.length > 0) gates.shift()!();
      await Promise.race([over, arrived]);
    }
    return answered;
  };

  it("computes 20 identical requests twice, takes each one's rate limit, and computes another credential's apart", async () => {
    computations = 0;
    consumed.length = 0;
    const before = { ...shared.stats };
    const first = send(url, "GET", "/v1/things/a", { token: "alice" });
    await waitUntil(async () => (gates.length === 1 ? true : undefined), { timeoutMs: 2_000, intervalMs: 2, what: "the first computation" });
    const others = Array.from({ length: 19 }, () => send(url, "GET", "/v1/things/a", { token: "alice" }));
    const bob = send(url, "GET", "/v1/things/a", { token: "bob" });
    await waitUntil(async () => (shared.stats.joined - before.joined === 19 && gates.length === 2 ? true : undefined), { timeoutMs: 5_000, intervalMs: 2, what: "19 requests waiting" });
    const [one, ...rest] = await releaseUntil(Promise.all([first, ...others, bob]));
    const bobs = rest.pop()!;
    expect(one!.status).toBe(200);
    expect(one!.body).toEqual({ id: "a", computation: 1, user: "alice" });
    for (const res of rest) {
      expect(res.status).toBe(200);
      expect(res.body.computation).toBeGreaterThan(1); // the next computation, not the one running when they arrived
      expect(res.body.user).toBe("alice");
      expect(res.headers.get("etag")).toMatch(/^W\//);
      expect(res.headers.get("ratelimit-remaining")).toBe("99");
    }
    expect(new Set(rest.map((r) => r.body.computation)).size).toBe(1);
    expect(bobs.body.user).toBe("bob");
    expect(computations).toBe(3); // alice twice, bob once
    expect(consumed.filter((c) => c === "user user:alice")).toHaveLength(20);
    expect(consumed.filter((c) => c === "user user:bob")).toHaveLength(1);
  });

  it("refuses a request whose credential was revoked while its read was computed, though the same header started it", async () => {
    revoked.clear();
    const first = send(url, "GET", "/v1/things/b", { token: "carol" });
    await waitUntil(async () => (gates.length === 1 ? true : undefined), { timeoutMs: 2_000, intervalMs: 2, what: "the first computation" });
    revoked.add("carol");
    const joined = shared.stats.joined;
    const late = await (async () => {
      const pending = send(url, "GET", "/v1/things/b", { token: "carol" });
      // It arrives while the read runs, as a request to join it.
      await waitUntil(async () => (shared.stats.joined > joined ? true : undefined), { timeoutMs: 2_000, intervalMs: 2, what: "the late request" });
      return releaseUntil(pending);
    })();
    expectProblem(late, 401, "token_revoked");
    expect((await releaseUntil(first)).status).toBe(200);
  });

  it("refuses a shared handler that reads the request, and computes a perRequest one for each request", async () => {
    const refused = await send(url, "GET", "/v1/reads-request");
    expect(refused.status).toBe(500);
    perRequestRuns = 0;
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => send(url, "GET", "/v1/per-request", { headers: { accept: `application/x-${i}` } })));
    expect(answers.map((a) => a.body.accept).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `application/x-${i}`));
    expect(perRequestRuns).toBe(5);
  });
});

describe("shared reads through the API", () => {
  // A database of its own: another file's revocation or change of role drops every credential this
  // server keeps (seen in npm test), and the revocation test needs its user's kept while the users
  // table is locked.
  const api = useIsolatedTestApi();

  it("never answers a read older than the client's own write, while identical reads are shared", async () => {
    const user = await createUser(api, { scope: ["read", "write"] });
    const shared = api.server.sharedReads!;
    const joinedBefore = shared.stats.joined;
    let stop = false;
    const hammer = async () => {
      while (!stop) expect((await api.request("GET", "/v1/users/me", { token: user.token })).status).toBe(200);
    };
    const hammers = Array.from({ length: 8 }, hammer);
    try {
      for (let i = 0; i < 25; i++) {
        const name = `Name ${i}`;
        const patched = await api.request("PATCH", `/v1/users/${user.id}/profile`, { token: user.token, body: { display_name: name } });
        expect(patched.status).toBe(200);
        const read = await api.request("GET", "/v1/users/me", { token: user.token });
        expect(read.body.display_name).toBe(name);
      }
    } finally {
      stop = true;
      await Promise.all(hammers);
    }
    // The reads above did share computations (else this proves nothing about sharing).
    expect(shared.stats.joined - joinedBefore).toBeGreaterThan(0);
  });

  it("refuses a token revoked while its read waits on the database, and answers those that came before", async () => {
    const user = await createUser(api, { scope: ["read", "write"] });
    expect((await api.request("GET", "/v1/users/me", { token: user.token })).status).toBe(200); // credential kept
    const shared = api.server.sharedReads!;
    const key = SharedReads.keyOf(`Bearer ${user.token}`, "/v1/users/me");
    const joinedBefore = shared.stats.joined;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // Hold the users table: the read's computation waits on it.
    const holding = api.db.transaction().execute(async (trx) => {
      await sql`lock table users in access exclusive mode`.execute(trx);
      await released;
    });
    try {
      await waitUntil(async () => ((await sql<{ n: number }>`select count(*)::int as n from pg_locks where relation = 'users'::regclass and mode = 'AccessExclusiveLock' and granted`.execute(api.db)).rows[0]!.n === 1 ? true : undefined), { timeoutMs: 5_000, intervalMs: 10, what: "the lock" });
      const first = api.request("GET", "/v1/users/me", { token: user.token });
      await waitUntil(async () => (shared.running(key) ? true : undefined), { timeoutMs: 5_000, intervalMs: 5, what: "the computation" });
      const before = api.request("GET", "/v1/users/me", { token: user.token });
      await waitUntil(async () => (shared.stats.joined > joinedBefore ? true : undefined), { timeoutMs: 5_000, intervalMs: 5, what: "the second request waiting" });
      expect((await api.request("DELETE", "/v1/auth/token", { token: user.token })).status).toBe(200);
      const after = api.request("GET", "/v1/users/me", { token: user.token });
      release();
      await holding;
      expect((await first).status).toBe(200);
      expect((await before).status).toBe(200);
      expectProblem(await after, 401, "token_revoked");
    } finally {
      release();
      await holding.catch(() => {});
    }
  });
});
