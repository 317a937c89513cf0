/**
 * CORS over HTTP (the browser's side is cors-browser.test.ts): preflights answered before any
 * credential or rate limit, the headers a page may send and read, nothing at all for an origin not
 * allowed, and kept public reads that carry each request's own origin. The API here has a database
 * of its own (no other test's writes flush its kept reads) and a TTL of a minute.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../api/src/config.ts";
import { CORS_ALLOWED_HEADERS, CORS_ALLOWED_METHODS, CORS_EXPOSED_HEADERS } from "../../api/src/http/cors.ts";
import { originMatcher } from "../../api/src/lib/origins.ts";
import { createPlatformDatabase } from "../support/artworks.ts";
import { waitFor } from "../support/wait.ts";
import { createUser, expectProblem, startTestApi, type TestApi, testApiSettings, type TestResponse } from "../support/api.ts";

const RULES = "https://app.example.com, http://localhost:*, https://*.example.org";
const ALLOWED = ["https://app.example.com", "http://localhost:5173", "http://localhost", "https://shop.example.org", "https://a.b.example.org", "https://app.example.com:443"];
const REFUSED = [
  "https://evil.example.com",
  "http://app.example.com",
  "https://app.example.com:8443",
  "https://localhost:5173",
  "http://localhost.evil.com:5173",
  "https://example.org",
  "https://evilexample.org",
  "null",
  "https://app.example.com/path",
];

let database: Awaited<ReturnType<typeof createPlatformDatabase>>;
let api: TestApi;
/** The same database, allowing two anonymous requests a minute. */
let limited: TestApi;

beforeAll(async () => {
  database = await createPlatformDatabase();
  [api, limited] = await Promise.all([
    startTestApi({ DATABASE_URL: database.databaseUrl, PUBLIC_READ_CACHE_TTL_MS: "60000", CORS_ORIGINS: RULES }),
    startTestApi({ DATABASE_URL: database.databaseUrl, CORS_ORIGINS: RULES, RATE_LIMIT_ANONYMOUS_PER_MINUTE: "2" }),
  ]);
  await waitFor(async () => api.server.publicReads!.active, { what: "the kept reads listening" });
}, 60_000);
afterAll(async () => {
  await Promise.all([api?.close(), limited?.close()]);
  await database?.drop().catch(() => {});
});

const preflight = (server: TestApi, path: string, origin: string, method = "GET", headers = "authorization") =>
  server.request("OPTIONS", path, { headers: { origin, "access-control-request-method": method, "access-control-request-headers": headers } });

/** The response's Access-Control-* headers. */
function corsHeaders(res: TestResponse): Record<string, string> {
  return Object.fromEntries([...res.headers].filter(([name]) => name.startsWith("access-control-")));
}

function varies(res: TestResponse): string[] {
  return (res.headers.get("vary") ?? "").split(",").map((v) => v.trim().toLowerCase());
}

describe("CORS preflight", () => {
  it("answers an allowed origin 204 with the methods and headers a page may send, cacheable for two hours, without any credential", async () => {
    for (const origin of ALLOWED) {
      const res = await preflight(api, "/v1/users/me", origin, "GET", "authorization, idempotency-key, content-type");
      expect(res.status, origin).toBe(204);
      expect(res.text).toBe("");
      expect(corsHeaders(res), origin).toEqual({
        "access-control-allow-origin": origin,
        "access-control-allow-methods": "GET, POST, PATCH, PUT, DELETE",
        "access-control-allow-headers": "Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id",
        "access-control-max-age": "7200",
      });
      expect(varies(res)).toContain("origin");
      // A preflight is not a call: no credential asked for, no rate limit taken.
      expect(res.headers.get("www-authenticate")).toBeNull();
      expect(res.headers.get("ratelimit-remaining")).toBeNull();
    }
    expect([...CORS_ALLOWED_METHODS]).toEqual(["GET", "POST", "PATCH", "PUT", "DELETE"]);
    expect([...CORS_ALLOWED_HEADERS]).toEqual(expect.arrayContaining(["Authorization", "Content-Type", "Idempotency-Key"]));
  });

  it("gives an origin that is not allowed no CORS header at all (204 empty, as for any server that does not opt in): the browser blocks the call", async () => {
    for (const origin of REFUSED) {
      const res = await preflight(api, "/v1/webhooks", origin, "POST", "authorization, content-type");
      expect(res.status, origin).toBe(204);
      expect(corsHeaders(res), origin).toEqual({});
      expect(varies(res)).toContain("origin");
    }
  });

  it("never takes the rate limit: preflights past the limit are still answered, and the calls they precede are counted once each", async () => {
    const origin = "http://localhost:5173";
    const first = await limited.request("GET", "/v1/artworks?limit=1", { headers: { origin } });
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-remaining")).toBe("1");
    for (let i = 0; i < 5; i++) {
      const res = await preflight(limited, "/v1/artworks?limit=1", origin);
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe(origin);
    }
    const second = await limited.request("GET", "/v1/artworks?limit=1", { headers: { origin } });
    expect(second.headers.get("ratelimit-remaining")).toBe("0");
    // The refusal is readable by the page: its origin, Retry-After exposed.
    const refused = await limited.request("GET", "/v1/artworks?limit=1", { headers: { origin } });
    expectProblem(refused, 429, "rate_limited");
    expect(refused.headers.get("access-control-allow-origin")).toBe(origin);
    expect(refused.headers.get("access-control-expose-headers")).toContain("Retry-After");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await preflight(limited, "/v1/users/me", origin)).status).toBe(204);
  });
});

describe("CORS on answers", () => {
  it("hands an allowed origin its answers with the API's headers exposed (errors and replays too), never credentials mode", async () => {
    const origin = "https://app.example.com";
    const user = await createUser(api, { scope: ["read"] });
    const me = await api.request("GET", "/v1/users/me", { token: user.token, headers: { origin } });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(user.id);
    expect(corsHeaders(me)).toEqual({
      "access-control-allow-origin": origin,
      "access-control-expose-headers": "X-Request-Id, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, WWW-Authenticate, Retry-After, Idempotent-Replayed, ETag, X-Cache, Indexer-Lag",
    });
    // Every header it exposes is one the API sends: the ones on this answer are there.
    for (const name of ["X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "ETag"]) expect(me.headers.get(name), name).not.toBeNull();
    expect([...CORS_EXPOSED_HEADERS]).toEqual(expect.arrayContaining(["X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After", "Idempotent-Replayed", "ETag"]));
    expect(varies(me)).toContain("origin");

    const anonymous = await api.request("GET", "/v1/users/me", { headers: { origin } });
    expectProblem(anonymous, 401, "unauthenticated");
    expect(anonymous.headers.get("access-control-allow-origin")).toBe(origin);

    const key = `cors-${Date.now()}`;
    const nonce = () => api.request("POST", "/v1/auth/siwe/nonce", { headers: { origin, "idempotency-key": key } });
    const created = await nonce();
    const replayed = await nonce();
    expect([created.status, replayed.status]).toEqual([201, 201]);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    expect(replayed.body).toEqual(created.body);
    expect(replayed.headers.get("access-control-allow-origin")).toBe(origin);

    const refused = await api.request("GET", "/v1/users/me", { token: user.token, headers: { origin: "https://evil.example.com" } });
    expect(refused.status).toBe(200); // a server-side client is no browser: CORS only tells browsers what pages may read
    expect(corsHeaders(refused)).toEqual({});
    expect(varies(refused)).toContain("origin");
  });

  it("serves a kept public read with each request's own origin: the answer is shared, its CORS headers never are", async () => {
    const cache = api.server.publicReads!;
    const path = "/v1/artworks?limit=1&cors=kept";
    for (let attempt = 1; ; attempt++) {
      const invalidations = cache.stats.invalidations;
      const allowed = await api.request("GET", path, { headers: { origin: "https://app.example.com" } });
      const refused = await api.request("GET", path, { headers: { origin: "https://evil.example.com" } });
      const other = await api.request("GET", path, { headers: { origin: "http://localhost:3001" } });
      const none = await api.request("GET", path);
      const revalidated = await api.request("GET", path, { headers: { origin: "https://shop.example.org", "if-none-match": allowed.headers.get("etag")! } });
      // A change's late notification may forget the first answer between the reads: read them again.
      if (cache.stats.invalidations !== invalidations && attempt < 5) continue;
      expect([allowed, refused, other, none].map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect([allowed, refused, other, none, revalidated].map((r) => r.headers.get("x-cache"))).toEqual(["miss", "hit", "hit", "hit", "hit"]);
      expect(new Set([allowed, refused, other, none].map((r) => r.text)).size).toBe(1);
      expect([allowed, refused, other, none, revalidated].map((r) => r.headers.get("access-control-allow-origin"))).toEqual([
        "https://app.example.com",
        null,
        "http://localhost:3001",
        null,
        "https://shop.example.org",
      ]);
      expect(revalidated.status).toBe(304);
      for (const res of [allowed, refused, other, none, revalidated]) {
        expect(varies(res)).toEqual(expect.arrayContaining(["origin", "authorization"]));
        expect(res.headers.get("cache-control")).toBe("public, max-age=0, must-revalidate");
      }
      return;
    }
  });
});

describe("CORS_ORIGINS", () => {
  const production = { ...testApiSettings(), NODE_ENV: "production", RELAYER_PRIVATE_KEY: `0x${"11".repeat(32)}`, PUBLIC_BASE_URL: "https://api.example.com", PAYMENT_SANDBOX_IN_PRODUCTION: "true" };

  it("allows no origin in production unless configured, the local dev origins otherwise, and refuses what is not an origin", () => {
    expect(loadConfig(production).cors.allowedOrigins).toEqual([]);
    expect(loadConfig({ ...production, CORS_ORIGINS: "https://app.example.com, https://*.example.org" }).cors.allowedOrigins).toEqual(["https://app.example.com", "https://*.example.org"]);
    expect(loadConfig({ ...testApiSettings(), NODE_ENV: "development" }).cors.allowedOrigins).toEqual(["http://localhost:*", "http://127.0.0.1:*"]);
    expect(loadConfig({ ...testApiSettings(), CORS_ORIGINS: "*" }).cors.allowedOrigins).toEqual(["*"]);
    for (const bad of ["app.example.com", "https://app.example.com/", "ftp://app.example.com", "https://app.*.com", "https://*", "http://localhost:*5"]) {
      expect(() => loadConfig({ ...testApiSettings(), CORS_ORIGINS: `https://ok.example.com,${bad}` }), bad).toThrow(ConfigError);
    }
  });

  it("matches origins as browsers send them: scheme, host and port; `*` as the port or the leftmost labels; `*` alone any origin but null", () => {
    const allowed = originMatcher(RULES.split(",").map((r) => r.trim()));
    expect(ALLOWED.filter((o) => !allowed(o))).toEqual([]);
    expect(REFUSED.filter((o) => allowed(o))).toEqual([]);
    expect(originMatcher(["http://127.0.0.1:*"])("http://127.0.0.1:61234")).toBe(true);
    expect(originMatcher(["http://[::1]:*"])("http://[::1]:8080")).toBe(true);
    expect(originMatcher(["http://localhost:80"])("http://localhost")).toBe(true);
    const any = originMatcher(["*"]);
    expect([any("https://anything.example"), any("null")]).toEqual([true, false]);
  });
});
