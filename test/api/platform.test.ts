import { createPublicClient, http } from "viem";
import { describe, expect, it } from "vitest";
import { recordEvent } from "../../api/src/jobs/outbox.ts";
import { randomBytes } from "node:crypto";
import net from "node:net";
import { newId } from "../../api/src/lib/ids.ts";
import { waitFor } from "../support/wait.ts";
import { testEnvironment } from "../support/environment.ts";
import { createUser, expectProblem, send, startTestApi, useTestApi, uniqueName } from "../support/api.ts";

const api = useTestApi({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: "5", RATE_LIMIT_TOKEN_PER_MINUTE: "1000" });

describe("rate limits", () => {
  it("counts anonymous calls per IP, with RateLimit-* headers and a 429 carrying Retry-After", async () => {
    const results = [];
    for (let i = 0; i < 7; i++) results.push(await send(api.url, "GET", "/v1/users/usr_01JD3Y5V0Q3G7W7J6T4N4C2X1M"));
    expect(results[0]!.headers.get("ratelimit-limit")).toBe("5");
    expect(Number(results[0]!.headers.get("ratelimit-remaining"))).toBeLessThanOrEqual(4);
    const limited = results.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(2);
    for (const r of limited) {
      expectProblem(r, 429, "rate_limited");
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(r.headers.get("ratelimit-remaining")).toBe("0");
    }
  });
});

describe("rate limits per user", () => {
  it("gives each user one budget, shared by all its tokens (issue 13)", async () => {
    const limited = await startTestApi({ RATE_LIMIT_TOKEN_PER_MINUTE: "3" });
    try {
      const a = await createUser(limited, { scope: ["read"] });
      const b = await createUser(limited, { scope: ["read"] });
      const aSecond = await limited.request("POST", "/v1/auth/token", { body: { api_key: a.apiKey, scope: ["read"] } });
      expect(aSecond.status).toBe(201);
      const statuses = [];
      for (let i = 0; i < 5; i++) statuses.push((await limited.request("GET", "/v1/users/me", { token: a.token })).status);
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      // A new token of the same user does not get a new budget.
      expectProblem(await limited.request("GET", "/v1/users/me", { token: aSecond.body.token }), 429, "rate_limited");
      expect((await limited.request("GET", "/v1/users/me", { token: b.token })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it("counts refused credentials against the caller's address (issue 13)", async () => {
    const limited = await startTestApi({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: "3" });
    try {
      const results = [];
      for (let i = 0; i < 6; i++) results.push(await limited.request("GET", "/v1/users/me", { token: `at_guess_${i}` }));
      expect(results.map((r) => r.status)).toEqual([401, 401, 401, 429, 429, 429]);
      for (const r of results.slice(0, 3)) expectProblem(r, 401, "token_invalid");
      for (const r of results.slice(3)) {
        expectProblem(r, 429, "rate_limited");
        expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
      }
      expect(results[0]!.headers.get("ratelimit-limit")).toBe("3");
      // The address's budget is spent on a public endpoint too, with or without a token.
      expectProblem(await limited.request("GET", "/v1/users/usr_01JD3Y5V0Q3G7W7J6T4N4C2X1M", { token: "at_guess_again" }), 429, "rate_limited");
    } finally {
      await limited.close();
    }
  });

  it.skipIf(!testEnvironment().redisUrl)("shares one budget between API instances through Redis", async () => {
    const shared = { RATE_LIMIT_ANONYMOUS_PER_MINUTE: "4", RATE_LIMIT_KEY_PREFIX: `rl-shared-${randomBytes(4).toString("hex")}` };
    const [one, two] = await Promise.all([startTestApi(shared), startTestApi(shared)]);
    try {
      const statuses = [];
      for (let i = 0; i < 6; i++) statuses.push((await send(i % 2 ? two.url : one.url, "GET", "/v1/users/usr_01JD3Y5V0Q3G7W7J6T4N4C2X1M")).status);
      expect(statuses.filter((s) => s === 429)).toHaveLength(2);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it.skipIf(!testEnvironment().redisUrl)("listens once Redis answers, so that its first request is counted rather than refused (a store slow to connect)", async () => {
    // Redis behind a relay that holds each connection half a second before it reaches the server.
    const redis = new URL(testEnvironment().redisUrl!);
    const relay = net.createServer((client) => {
      client.pause();
      setTimeout(() => {
        const upstream = net.connect(Number(redis.port || 6379), redis.hostname);
        upstream.on("error", () => client.destroy());
        client.on("error", () => upstream.destroy());
        client.pipe(upstream).pipe(client);
        client.resume();
      }, 500);
    });
    await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
    const slow = await startTestApi({ REDIS_URL: `redis://127.0.0.1:${(relay.address() as net.AddressInfo).port}`, RATE_LIMIT_ANONYMOUS_PER_MINUTE: "5", RATE_LIMIT_KEY_PREFIX: `rl-slow-${randomBytes(4).toString("hex")}` });
    try {
      const first = await send(slow.url, "GET", "/v1/users/usr_01JD3Y5V0Q3G7W7J6T4N4C2X1M");
      expect(first.status).toBe(404);
      expect(first.headers.get("ratelimit-limit")).toBe("5");
    } finally {
      await slow.close();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    }
  });
});

describe("OpenAPI", () => {
  it("serves an OpenAPI 3.1 document of every route, generated from the validating schemas, and the docs page", async () => {
    const res = await send(api.url, "GET", "/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.1.0");
    const paths = Object.keys(res.body.paths);
    for (const p of ["/v1/auth/token", "/v1/auth/siwe/nonce", "/v1/auth/siwe/verify", "/v1/api-keys", "/v1/api-keys/{id}", "/v1/users/me", "/v1/users/{id}", "/v1/users/{id}/profile", "/v1/admin/users", "/v1/admin/users/{id}"]) {
      expect(paths).toContain(p);
    }
    const exchange = res.body.paths["/v1/auth/token"].post;
    expect(exchange.requestBody.content["application/json"].schema).toBeDefined();
    expect(Object.keys(exchange.responses)).toEqual(expect.arrayContaining(["201", "400", "401", "429"]));
    expect(res.body.components.schemas.Problem).toBeDefined();
    const docs = await send(api.url, "GET", "/docs");
    expect(docs.status).toBe(200);
    expect(docs.text).toContain("swagger-ui");
    const asset = await fetch(new URL("/docs/assets/swagger-ui-bundle.js", api.url));
    expect(asset.status).toBe(200);
  });
});

describe("health", () => {
  it("GET /healthz answers while the process is up", async () => {
    const res = await send(api.url, "GET", "/healthz");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ok" });
  });

  it("GET /readyz reports each dependency; without an indexer it is not ready", async () => {
    const chain = createPublicClient({ transport: http(testEnvironment().rpcUrl) });
    // Uncached: viem keeps a block number for a few seconds, and other files mine meanwhile.
    const blockBefore = Number(await chain.getBlockNumber({ cacheTime: 0 }));
    const res = await send(api.url, "GET", "/readyz");
    const blockAfter = Number(await chain.getBlockNumber({ cacheTime: 0 }));
    expectProblem(res, 503, "service_unavailable");
    expect(res.body.checks.database.status).toBe("ok");
    expect(res.body.checks.chain.status).toBe("ok");
    // The chain's head as the check read it (other files mine meanwhile).
    expect(res.body.checks.chain.block).toBeGreaterThanOrEqual(blockBefore);
    expect(res.body.checks.chain.block).toBeLessThanOrEqual(blockAfter);
    expect(res.body.checks.indexer.status).toBe("error");
  });
});

describe("outbox", () => {
  it("records an event only when its transaction commits, and the worker dispatches it", async () => {
    const type = uniqueName("test.event");
    await expect(
      api.db.transaction().execute(async (trx) => {
        await recordEvent(trx, type, { n: 1 }, []);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect(await api.db.selectFrom("outbox_events").select("id").where("event_type", "=", type).execute()).toHaveLength(0);

    const id = await api.db.transaction().execute((trx) => recordEvent(trx, type, { n: 2 }, []));
    const row = await waitFor(
      async () => {
        const r = await api.db.selectFrom("outbox_events").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
        return r.dispatched_at ? r : undefined;
      },
      { timeoutMs: 15_000, what: "the event dispatched" },
    );
    expect(row.dispatched_at).toBeInstanceOf(Date);
    expect(row.payload).toEqual({ n: 2 });
  });

  it("dispatches an event nobody was told of (a lost notification) at its next poll", async () => {
    const type = uniqueName("test.unannounced");
    const id = newId("webhookEvent");
    // Written without the notification recordEvents sends.
    await api.db.insertInto("outbox_events").values({ id, event_type: type, payload: JSON.stringify({ n: 3 }), audience: [], created_at: new Date(Date.now() - 10 * 60_000) }).execute();
    const row = await waitFor(
      async () => {
        const r = await api.db.selectFrom("outbox_events").select("dispatched_at").where("id", "=", id).executeTakeFirstOrThrow();
        return r.dispatched_at ? r : undefined;
      },
      { timeoutMs: 15_000, what: "the unannounced event dispatched" },
    );
    expect(row.dispatched_at).toBeInstanceOf(Date);
  });
});
