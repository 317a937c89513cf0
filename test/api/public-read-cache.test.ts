/**
 * Anonymous public reads are kept a moment per URL by each HTTP process (PublicReadCache), with the
 * tables they showed, and forgotten when one of those changes: a change committed anywhere (the
 * tables' triggers NOTIFY), a block the indexer projected (the reads of its views); a write this
 * process answers waits until it has heard its own changes. With a credential nothing is kept. The API here has a database of its own (no other test's writes flush its cache) and a
 * TTL of a minute, so a kept answer can only go because of a change.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHAIN_DEPENDENCY, PUBLIC_DATA_CHANNEL, PublicReadCache, ReadDependencies } from "../../api/src/http/public-read-cache.ts";
import { PUBLIC_DATA_TABLES } from "../../api/src/db/migrations/2026_11_26_0001_public_data_changed.ts";
import { indexerNotifyChannel } from "../../api/src/chain/indexer-schema.ts";
import { createPlatformDatabase } from "../support/artworks.ts";
import { signalled, waitFor } from "../support/wait.ts";
import { adminToken, createUser, startTestApi, type TestApi } from "../support/api.ts";

/** Tables no public read shows: changes to them never flush the kept reads. */
const INTERNAL_TABLES = [
  "access_tokens",
  "api_keys",
  "audit_ledger",
  "chain_cursors",
  "chain_deployment",
  "chain_operations",
  "disputes",
  "exchange_orders",
  "idempotency_keys",
  "kysely_migration",
  "kysely_migration_lock",
  "ledger_anchors",
  "outbox_events",
  "payment_methods",
  "reward_ledger",
  "reward_redemptions",
  "reward_sources",
  "sandbox_charges",
  "sandbox_processing_errors",
  "sandbox_refunds",
  "siwe_nonces",
  "webhook_deliveries",
  "webhook_subscriptions",
  "withdrawals",
];

let database: Awaited<ReturnType<typeof createPlatformDatabase>>;
let api: TestApi;
let cache: PublicReadCache;
let admin: string;

beforeAll(async () => {
  database = await createPlatformDatabase();
  api = await startTestApi({ DATABASE_URL: database.databaseUrl, PUBLIC_READ_CACHE_TTL_MS: "60000" });
  cache = api.server.publicReads!;
  await waitFor(async () => cache.active, { what: "the cache listening" });
  admin = await adminToken(api);
});
afterAll(async () => {
  await api?.close();
  await database?.drop().catch(() => {});
});

async function createEvent(location: string, title = "Cached") {
  const start = Date.now() + 86_400_000;
  const created = await api.request("POST", "/v1/events", {
    token: admin,
    body: { title, type: "talk", format: "virtual", location, starts_at: new Date(start).toISOString(), ends_at: new Date(start + 3_600_000).toISOString(), tickets: { virtual: { price_usd: 0 } } },
  });
  expect(created.status, created.text).toBe(201);
  return created.body as { event_id: string };
}

/**
 * Two anonymous reads of `path`: the first computed (miss), the second the kept answer (hit). A
 * change's notification may arrive between them (a write just committed whose NOTIFY comes late, a
 * block the indexer projects) and rightly forget the first answer: then the cache is emptied and the
 * pair read again, at most five times. Without an invalidation in between, the second is a hit.
 */
async function kept(path: string) {
  for (let attempt = 1; ; attempt++) {
    const invalidations = cache.stats.invalidations;
    const first = await api.request("GET", path);
    expect(first.status, first.text).toBe(200);
    const second = await api.request("GET", path);
    if (cache.stats.invalidations !== invalidations && attempt < 5) {
      cache.invalidate();
      continue;
    }
    expect([first.headers.get("x-cache"), second.headers.get("x-cache")]).toEqual(["miss", "hit"]);
    expect(second.text).toBe(first.text);
    expect(second.headers.get("etag")).toBe(first.headers.get("etag"));
    return second;
  }
}

describe("the public read cache", () => {
  it("serves an anonymous public read again from the cache, with its ETag, 304 and public caching headers", async () => {
    const location = `Kept-${Date.now()}`;
    await createEvent(location);
    const path = `/v1/events?location=${location}`;
    const hit = await kept(path);
    expect(hit.body.data).toHaveLength(1);
    expect(hit.headers.get("cache-control")).toBe("public, max-age=0, must-revalidate");
    const revalidated = await api.request("GET", path, { headers: { "If-None-Match": hit.headers.get("etag")! } });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers.get("x-cache")).toBe("hit");
    // Another URL (another filter, another order of the same filters) is another entry.
    expect((await api.request("GET", `${path}&limit=5`)).headers.get("x-cache")).toBe("miss");
  });

  it("never keeps nor serves a read made with a credential, nor a failed read", async () => {
    const user = await createUser(api, { scope: ["read"] });
    const location = `Private-${Date.now()}`;
    const path = `/v1/events?location=${location}`;
    await kept(path);
    const withToken = await api.request("GET", path, { token: user.token });
    expect(withToken.status).toBe(200);
    expect(withToken.headers.get("x-cache")).toBeNull();
    expect(withToken.headers.get("cache-control")).toBe("private, no-cache");
    // Private routes are never kept either, nor is a refusal.
    expect((await api.request("GET", "/v1/users/me", { token: user.token })).headers.get("x-cache")).toBeNull();
    for (let i = 0; i < 2; i++) {
      const unknown = await api.request("GET", "/v1/events/evt_01JD3Y5V0Q3G7W7J6T4N4C2X1M");
      expect(unknown.status).toBe(404);
      expect(unknown.headers.get("x-cache")).toBe("miss");
    }
  });

  it("answers a write only once this process has heard its changes: its next read is never the kept one from before", async () => {
    const location = `Write-${Date.now()}`;
    const path = `/v1/events?location=${location}`;
    expect((await kept(path)).body.data).toHaveLength(0);
    // The cache's notifications are held: the write's answer must wait for them.
    const held: string[] = [];
    const cacheOf = cache as unknown as { heard(payload: string): void };
    const heard = cacheOf.heard;
    let settling!: () => void;
    const settlingSent = new Promise<void>((resolve) => (settling = resolve));
    cacheOf.heard = (payload: string) => {
      held.push(payload);
      if (payload.startsWith("sync:")) settling();
    };
    let answered = false;
    const creating = createEvent(location).then((event) => {
      answered = true;
      return event;
    });
    try {
      await signalled(settlingSent, "the write's settling notification");
      expect(answered).toBe(false);
      expect(held).toContain("platform_events");
    } finally {
      cacheOf.heard = heard;
      for (const payload of held) heard.call(cache, payload);
    }
    const event = await creating;
    const after = await api.request("GET", path);
    expect(after.headers.get("x-cache")).toBe("miss");
    expect(after.body.data.map((e: { event_id: string }) => e.event_id)).toEqual([event.event_id]);
  });

  it("forgets only the reads that showed a changed table", async () => {
    const location = `Tables-${Date.now()}`;
    const event = await createEvent(location, "Before");
    const user = await createUser(api, { role: "artist", scope: ["read"] });
    const eventPath = `/v1/events/${event.event_id}`;
    const userPath = `/v1/users/${user.id}`;
    await kept(eventPath);
    await kept(userPath);
    await api.db.updateTable("platform_events").set({ title: "After" }).where("id", "=", event.event_id).execute();
    // A notification of our own after it (commit order): once it is in, the change's is too.
    const before = cache.stats.invalidations;
    await sql`select pg_notify(${PUBLIC_DATA_CHANNEL}, 'after the change')`.execute(api.db);
    await waitFor(async () => cache.stats.invalidations >= before + 1, { timeoutMs: 2_000, intervalMs: 5, what: "our own notification" });
    const [eventRead, userRead] = [await api.request("GET", eventPath), await api.request("GET", userPath)];
    expect([eventRead.headers.get("x-cache"), eventRead.body.title]).toEqual(["miss", "After"]);
    expect(userRead.headers.get("x-cache")).toBe("hit");
  });

  it("forgets a read on a change committed elsewhere (SQL here), once the trigger's notification arrives", async () => {
    const location = `Elsewhere-${Date.now()}`;
    const event = await createEvent(location, "Before");
    const path = `/v1/events/${event.event_id}`;
    expect((await kept(path)).body.title).toBe("Before");
    await api.db.updateTable("platform_events").set({ title: "After" }).where("id", "=", event.event_id).execute();
    const seen = await waitFor(async () => {
      const res = await api.request("GET", path);
      return res.body.title === "After" ? res : null;
    }, { timeoutMs: 2_000, intervalMs: 10, what: "the change seen" });
    expect(seen.headers.get("x-cache")).toBe("miss");
  });

  it("is not flushed by a login (users.last_login_at), and is by a change to a public profile", async () => {
    const user = await createUser(api, { role: "artist", scope: ["read"] });
    const path = `/v1/users/${user.id}`;
    await kept(path);
    const before = cache.stats.invalidations;
    await api.db.updateTable("users").set({ last_login_at: new Date() }).where("id", "=", user.id).execute();
    // A notification of our own after it: Postgres delivers notifications in commit order, so once
    // this one is in, a notification of the login would be in too.
    await sql`select pg_notify(${PUBLIC_DATA_CHANNEL}, 'after the login')`.execute(api.db);
    await waitFor(async () => cache.stats.invalidations > before, { timeoutMs: 2_000, intervalMs: 5, what: "our own notification" });
    expect(cache.stats.invalidations).toBe(before + 1);

    await api.db.updateTable("users").set({ bio: "Now painting seascapes" }).where("id", "=", user.id).execute();
    await waitFor(async () => ((await api.request("GET", path)).body.bio === "Now painting seascapes" ? true : null), { timeoutMs: 2_000, intervalMs: 10, what: "the new bio" });
  });

  it("forgets the reads of the indexer's views when the indexer projects a block (its notification), and keeps the others", async () => {
    const location = `Block-${Date.now()}`;
    const path = `/v1/events?location=${location}`;
    await kept(path);
    const before = cache.stats.invalidations;
    await sql`select pg_notify(${indexerNotifyChannel(api.config.indexer.viewsSchema)}, '')`.execute(api.db);
    await waitFor(async () => cache.stats.invalidations > before, { timeoutMs: 2_000, intervalMs: 5, what: "the block's notification" });
    expect((await api.request("GET", path)).headers.get("x-cache")).toBe("hit");
    // A read of the indexer's views (the certificate's transfers beside an artwork) goes with the block.
    const c = activeCache();
    (c as unknown as { dependencies: ReadDependencies }).dependencies = await ReadDependencies.load(api.db, api.config.indexer.viewsSchema);
    c.store("/chain", c.generation, "1", 'W/"1"', [`select * from "${api.config.indexer.viewsSchema}"."certificate_transfer" where token_id = $1`]);
    c.store("/events", c.generation, "2", 'W/"2"', ['select * from "platform_events" where "location" = $1']);
    c.invalidate([CHAIN_DEPENDENCY]);
    expect([c.lookup("/chain")?.json, c.lookup("/events")?.json]).toEqual([undefined, "2"]);
  });

  it("keeps and serves nothing while its notification connection is lost, and everything kept before is forgotten", async () => {
    const location = `Lost-${Date.now()}`;
    const event = await createEvent(location, "Before the loss");
    const path = `/v1/events/${event.event_id}`;
    await kept(path);
    await sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'art-platform-api notifications'`.execute(api.db);
    await waitFor(async () => !cache.active, { timeoutMs: 5_000, intervalMs: 5, what: "the loss noticed" });
    // Without a listener no notification can come: a change now must not be hidden by what was kept.
    await api.db.updateTable("platform_events").set({ title: "During the loss" }).where("id", "=", event.event_id).execute();
    const during = await api.request("GET", path);
    expect(during.body.title).toBe("During the loss");
    expect(during.headers.get("x-cache")).toBe("miss");
    // Reconnected (backoff from 250 ms): kept again.
    await waitFor(async () => cache.active, { timeoutMs: 10_000, what: "the listener back" });
    expect((await kept(path)).body.title).toBe("During the loss");
  });

  it("rate limits kept reads like the route: the caller's address pays for each, and gets 429 past its budget", async () => {
    const limited = await startTestApi({ DATABASE_URL: database.databaseUrl, PUBLIC_READ_CACHE_TTL_MS: "60000", RATE_LIMIT_ANONYMOUS_PER_MINUTE: "4" });
    try {
      await waitFor(async () => limited.server.publicReads!.active, { what: "the cache listening" });
      const path = `/v1/events?location=Limited-${Date.now()}`;
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await limited.request("GET", path));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 429]);
      expect(answers.map((a) => a.headers.get("x-cache"))).toEqual(["miss", "hit", "hit", "hit", null]);
      expect(answers.map((a) => a.headers.get("ratelimit-remaining"))).toEqual(["3", "2", "1", "0", "0"]);
      expect(answers[4]!.body.code).toBe("rate_limited");
      expect(answers[4]!.headers.get("retry-after")).toMatch(/^\d+$/);
    } finally {
      await limited.close();
    }
  });

  it("covers every table: each has the trigger or is one no public read shows", async () => {
    const tables = (await sql<{ name: string }>`select tablename as name from pg_tables where schemaname = 'public'`.execute(api.db)).rows.map((r) => r.name);
    const triggered = (
      await sql<{ name: string }>`
        select distinct c.relname as name from pg_trigger t
        join pg_class c on c.oid = t.tgrelid join pg_proc p on p.oid = t.tgfoid
        where p.proname = 'notify_public_data_changed' and not t.tgisinternal`.execute(api.db)
    ).rows.map((r) => r.name);
    expect(triggered).toEqual(expect.arrayContaining([...PUBLIC_DATA_TABLES, "users"]));
    const undecided = tables.filter((t) => !triggered.includes(t) && !INTERNAL_TABLES.includes(t));
    expect(undecided, "tables with neither the public_data_changed trigger nor a place in INTERNAL_TABLES").toEqual([]);
    expect(INTERNAL_TABLES.filter((t) => triggered.includes(t))).toEqual([]);
  });
});

function activeCache(options: { ttlMs?: number; maxBytes?: number; now?: () => number } = {}) {
  const c = new PublicReadCache({ ttlMs: options.ttlMs ?? 1_000, maxBytes: options.maxBytes ?? 1_000_000, now: options.now });
  // As once both listeners are ready (start() does it against a database).
  (c as unknown as { listening: { data: boolean; indexer: boolean } }).listening = { data: true, indexer: true };
  return c;
}

describe("PublicReadCache on its own", () => {
  it("keeps an answer computed while another table changed, and forgets on a change what showed that table, through its views too", async () => {
    const c = activeCache();
    (c as unknown as { dependencies: ReadDependencies }).dependencies = new ReadDependencies(
      new Map([["artworks", ["artworks"]], ["artwork_summaries", ["artworks"]], ["listings", ["listings"]], ["community_posts", ["community_posts"]], ["access_tokens", []]]),
      "chain",
    );
    const generation = c.generation;
    c.invalidate(["community_posts"]); // a post while the listings were read
    c.store("/listings", generation, "L", 'W/"l"', ['select "listings".*, "artworks"."title" from "listings" inner join "artwork_summaries" as "artworks" on "artworks"."id" = "listings"."artwork_id"']);
    c.store("/posts", generation, "P", 'W/"p"', ['select * from "community_posts"']);
    c.store("/unknown", c.generation, "U", 'W/"u"', []);
    c.store("/internal", c.generation, "I", 'W/"i"', ['select * from "access_tokens"']);
    expect(["/listings", "/posts", "/unknown", "/internal"].map((k) => c.lookup(k)?.json)).toEqual(["L", undefined, "U", "I"]);
    // An artwork changed: the listings showed it through the view, the statement that read no notifying table did not.
    c.invalidate(["artworks"]);
    expect(["/listings", "/unknown", "/internal"].map((k) => c.lookup(k)?.json)).toEqual([undefined, undefined, "I"]);
  });


  it("does not keep an answer computed while a change arrived", () => {
    const c = activeCache();
    const generation = c.generation;
    c.invalidate(); // a change arrives while the answer is computed
    c.store("/v1/events", generation, "[]", 'W/"a"');
    expect(c.lookup("/v1/events")).toBeUndefined();
    c.store("/v1/events", c.generation, "[]", 'W/"a"');
    expect(c.lookup("/v1/events")?.json).toBe("[]");
  });

  it("serves an answer for its TTL only", () => {
    let now = 0;
    const c = activeCache({ ttlMs: 1_000, now: () => now });
    c.store("/a", c.generation, "1", 'W/"1"');
    now = 999;
    expect(c.lookup("/a")?.json).toBe("1");
    now = 1_000;
    expect(c.lookup("/a")).toBeUndefined();
  });

  it("makes room by dropping the oldest answers, and never keeps one larger than a sixteenth of the room", () => {
    const c = activeCache({ maxBytes: 1_600 });
    const body = "x".repeat(90); // 90 + 10 bytes of key: 100 a piece
    for (let i = 0; i < 20; i++) c.store(`/k/${String(i).padStart(6, "0")}`, c.generation, body, 'W/"x"');
    expect(c.lookup("/k/000000")).toBeUndefined();
    expect(c.lookup("/k/000003")).toBeUndefined();
    expect(c.lookup("/k/000004")?.json).toBe(body);
    expect(c.lookup("/k/000019")?.json).toBe(body);
    c.store("/big", c.generation, "y".repeat(200), 'W/"y"');
    expect(c.lookup("/big")).toBeUndefined();
  });

  it("keeps and serves nothing until it listens", () => {
    const c = new PublicReadCache({ ttlMs: 1_000, maxBytes: 1_000_000 });
    c.store("/a", c.generation, "1", 'W/"1"');
    expect(c.active).toBe(false);
    expect(c.lookup("/a")).toBeUndefined();
  });
});
