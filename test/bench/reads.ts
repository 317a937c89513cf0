/**
 * Public and authenticated reads at marketplace scale, next to bare Express serving the same bytes
 * in the same run: the platform is seeded (tools/seed: users, certified artworks with provenance,
 * listings, posts) to BENCH_READS_SMALL artworks (default 1,000) and measured, then grown to
 * BENCH_READS_LARGE (default 100,000; with a tenth as many users, a fifth as many listings, as
 * many posts) and measured again. The load generator runs in a worker thread of its own, so the
 * API's event loop (this process's) serves alone; BENCH_CONNECTIONS (64) connections,
 * BENCH_DURATION_S (8) seconds per row.
 *
 * The "mixed:" row is the headline: 90 % anonymous reads, 8 % authenticated reads and 2 % writes (community
 * posts, each of which empties the public read cache), with ids, filters and pages drawn by a Zipf
 * law (mixed-path.cjs). The "miss:" rows ask a different URL on every request (random ids, filters and pages over the
 * whole table), so that what they measure is the path of a read no cache holds. Each row also says
 * where its time went: statements sent per request (every query of this process's pg clients, the
 * worker's included), CPU of this process's main thread per request (the API's; the bare handler's
 * in its own run), and CPU of the Postgres cluster per request.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { sql } from "kysely";
import pg from "pg";
import { createDb } from "../../api/src/db/connection.ts";
import { HARDHAT_DEV_RELAYER_KEY } from "../../api/src/config.ts";
import { seedPlatform, type SeedCounts } from "../../tools/seed/seed.ts";
import { BENCH_ADMIN_KEY, type BenchContext, call, table } from "./context.ts";
import { bareExpress } from "./http.ts";

const SMALL = Number(process.env.BENCH_READS_SMALL ?? 1_000);
const LARGE = Number(process.env.BENCH_READS_LARGE ?? 100_000);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
/** Only the rows whose name contains one of these (comma-separated), e.g. `users/me,auth/token`; default every row. */
const ROWS = (process.env.BENCH_READS_ROWS ?? "").split(",").map((s) => s.trim()).filter(Boolean);
/** A directory: the API's CPU profile of each cache-miss row is written there (reads-<size>-<row>.cpuprofile). */
const CPU_PROFILE_DIR = process.env.BENCH_READS_CPU_PROFILE;
/** 1: EXPLAIN (ANALYZE, BUFFERS) each statement a cache-miss row ran, on stderr. */
const EXPLAIN = process.env.BENCH_READS_EXPLAIN === "1";
const RANDOM_PATH = path.join(import.meta.dirname, "random-path.cjs");
const MIXED_PATH = path.join(import.meta.dirname, "mixed-path.cjs");

interface Endpoint {
  name: string;
  method: "GET" | "POST";
  path: string;
  token?: string;
  /** Requests cycle through these credentials (one per request in turn on each connection). */
  tokens?: string[];
  body?: string;
  /**
   * Every request a different URL: `path` with `{artwork}`, `{artist}`, `{user}`, `{medium}` replaced by a random
   * entry and `{int:a:b}` by a random integer (random-path.cjs), so that almost every read misses the
   * public read cache and shares no computation.
   */
  miss?: boolean;
  /** The mixed workload (mixed-path.cjs): Zipf-distributed reads, anonymous and authenticated, and writes. */
  mixed?: boolean;
  /** Goal: at least this share of bare Express's requests per second. */
  goal: number;
}

const countsFor = (artworks: number): SeedCounts => ({
  artworks,
  users: Math.ceil(artworks / 10),
  listings: Math.floor(artworks / 5),
  fractional: Math.floor(artworks / 20),
  events: Math.floor(artworks / 20),
  posts: artworks,
});
const minus = (a: SeedCounts, b: SeedCounts): SeedCounts =>
  Object.fromEntries(Object.entries(a).map(([k, n]) => [k, n - b[k as keyof SeedCounts]])) as unknown as SeedCounts;

/**
 * Every statement this process's pg clients send (the API runs in this process), with its text and
 * last parameters: statements per request, and the texts a row ran, to EXPLAIN them.
 */
const statements = { count: 0, texts: new Map<string, { count: number; values: unknown[] }>() };
const clientQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  statements.count++;
  const [config, values] = args as [string | { text?: string; values?: unknown[] }, unknown];
  const text = typeof config === "string" ? config : config?.text;
  if (text) statements.texts.set(text, { count: (statements.texts.get(text)?.count ?? 0) + 1, values: (Array.isArray(values) ? values : typeof config === "object" ? config.values : undefined) ?? [] });
  return (clientQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof clientQuery;

export async function benchReads(ctx: BenchContext): Promise<string> {
  const storageDir = path.join(ctx.dir, "storage");
  // Seeding mints thousands of blocks in a burst: the indexer polls for them.
  await ctx.startIndexer({ polling: true });
  const api = await ctx.startApi({ STORAGE_DIR: storageDir });
  const admin = await call(api.url, "POST", "/v1/auth/token", { api_key: BENCH_ADMIN_KEY, scope: ["admin"] });
  const user = await call(api.url, "POST", "/v1/admin/users", { username: "bench_reader", email: "bench_reader@example.test", role: "collector" }, admin.token);
  const reader = await call(api.url, "POST", "/v1/auth/token", { api_key: user.api_key.secret, scope: ["read"] });
  const tokenBody = JSON.stringify({ api_key: user.api_key.secret, scope: ["read"] });
  // As many readers as connections: their reads are never identical, so none is shared.
  const readers: string[] = [];
  const readerKeys: string[] = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    const other = await call(api.url, "POST", "/v1/admin/users", { username: `bench_reader_${i}`, email: `bench_reader_${i}@example.test`, role: "collector" }, admin.token);
    readerKeys.push(other.api_key.secret);
    readers.push((await call(api.url, "POST", "/v1/auth/token", { api_key: other.api_key.secret, scope: ["read"] })).token);
  }
  // The mixed workload's writers post in the community.
  const writers: string[] = [];
  for (let i = 0; i < 8; i++) {
    const other = await call(api.url, "POST", "/v1/admin/users", { username: `bench_writer_${i}`, email: `bench_writer_${i}@example.test`, role: "collector" }, admin.token);
    writers.push((await call(api.url, "POST", "/v1/auth/token", { api_key: other.api_key.secret, scope: ["read", "write"] })).token);
  }

  const seedTarget = {
    databaseUrl: ctx.databaseUrl,
    rpcUrl: ctx.rpcUrl,
    chainId: ctx.chainId,
    relayerPrivateKey: HARDHAT_DEV_RELAYER_KEY as `0x${string}`,
    custodyMnemonic: api.platform.config.chain.custodyMnemonic,
    artCertificate: ctx.deployment.artCertificate,
    artShares: ctx.deployment.artShares,
    publicBaseUrl: api.url,
    storageDir,
    viewsSchema: "chain",
    royaltyBps: 500,
  };
  const log = (line: string) => process.stderr.write(`[reads] ${line}\n`);
  const sections: string[] = [];
  let seeded: SeedCounts = { artworks: 0, users: 0, listings: 0, fractional: 0, events: 0, posts: 0 };
  // BENCH_READS_LARGE=0 measures the small size alone.
  for (const size of [...new Set([SMALL, LARGE])].filter((n) => n > 0)) {
    const target = countsFor(size);
    const report = await seedPlatform(seedTarget, minus(target, seeded), { log });
    const first = seeded.artworks === 0;
    seeded = target;
    log(`seeded to ${JSON.stringify(target)}: ${JSON.stringify(report.seconds)} s, ${report.transactions} transactions`);
    if (first) await giveReadersHistory(api.url, ctx.databaseUrl, readerKeys, log);
    // As autovacuum leaves a table that has settled: its visibility map set (index-only scans read no
    // rows) and its statistics current. Right after a bulk seed neither holds yet.
    await vacuum(ctx.databaseUrl);
    const sample = await call(api.url, "GET", "/v1/artworks?limit=1&verified=true");
    const ids = await idsOf(ctx.databaseUrl);
    const pages = (n: number) => Math.max(1, Math.ceil(n / 20));
    const artwork = sample.data[0];
    const detail = await call(api.url, "GET", `/v1/artworks/${artwork.id}`);
    const endpoints: Endpoint[] = ([
      { name: "mixed: 90 % anonymous reads, 8 % authenticated, 2 % writes (Zipf ids, filters, pages)", method: "GET", path: "/", mixed: true, goal: 0.5 },
      { name: "GET /v1/artworks?limit=20", method: "GET", path: "/v1/artworks?limit=20", goal: 0.6 },
      { name: "… &verified=true", method: "GET", path: "/v1/artworks?limit=20&verified=true", goal: 0.6 },
      { name: "… &medium=oil", method: "GET", path: "/v1/artworks?limit=20&medium=oil", goal: 0.6 },
      { name: "… &price_min=100&price_max=5000", method: "GET", path: "/v1/artworks?limit=20&price_min=100&price_max=5000", goal: 0.6 },
      { name: "… &artist_id=", method: "GET", path: `/v1/artworks?limit=20&artist_id=${detail.artist_id}`, goal: 0.6 },
      { name: "… &q=study", method: "GET", path: "/v1/artworks?limit=20&q=study", goal: 0.6 },
      { name: "GET /v1/artworks/:id", method: "GET", path: `/v1/artworks/${artwork.id}`, goal: 0.6 },
      { name: "GET /v1/users/:id", method: "GET", path: `/v1/users/${detail.artist_id}`, goal: 0.6 },
      { name: "GET /v1/marketplace/listings", method: "GET", path: "/v1/marketplace/listings?limit=20", goal: 0.6 },
      { name: "GET /v1/fractional/artworks", method: "GET", path: "/v1/fractional/artworks?limit=20", goal: 0.6 },
      { name: "GET /v1/community/posts", method: "GET", path: "/v1/community/posts?limit=20", goal: 0.6 },
      { name: "GET /v1/events", method: "GET", path: "/v1/events?limit=20", goal: 0.6 },
      { name: "miss: GET /v1/artworks?limit=20&price_min=&page=", method: "GET", path: `/v1/artworks?limit=20&price_min={int:0:2000}&page={int:1:${pages(size / 2)}}`, miss: true, goal: 0.5 },
      { name: "miss: GET /v1/artworks?limit=20&medium=&price_min=&page=", method: "GET", path: `/v1/artworks?limit=20&medium={medium}&price_min={int:0:2000}&page={int:1:${pages(size / 40)}}`, miss: true, goal: 0.5 },
      { name: "miss: GET /v1/artworks?limit=20&artist_id=", method: "GET", path: "/v1/artworks?limit=20&artist_id={artist}", miss: true, goal: 0.5 },
      { name: "miss: GET /v1/artworks/:id", method: "GET", path: "/v1/artworks/{artwork}", miss: true, goal: 0.5 },
      { name: "miss: GET /v1/users/:id", method: "GET", path: "/v1/users/{user}", miss: true, goal: 0.5 },
      { name: "miss: GET /v1/marketplace/listings?page=", method: "GET", path: `/v1/marketplace/listings?limit=20&page={int:1:${pages(size / 5)}}`, miss: true, goal: 0.5 },
      { name: "miss: GET /v1/fractional/artworks?page=", method: "GET", path: `/v1/fractional/artworks?limit=20&page={int:1:${pages(size / 20)}}`, miss: true, goal: 0.5 },
      { name: "miss: GET /v1/fractional/artworks/:id", method: "GET", path: "/v1/fractional/artworks/{fractional}", miss: true, goal: 0.5 },
      // About four events in five have not ended (the list's default), a fifth of them of each type.
      { name: "miss: GET /v1/events?type=&page=", method: "GET", path: `/v1/events?limit=20&type={eventType}&page={int:1:${pages(size / 20 / 5 * 0.75)}}`, miss: true, goal: 0.5 },
      { name: "miss: GET /v1/events/:id", method: "GET", path: "/v1/events/{event}", miss: true, goal: 0.5 },
      { name: "miss: GET /v1/community/posts?page=", method: "GET", path: `/v1/community/posts?limit=20&page={int:1:${pages(size)}}`, miss: true, goal: 0.5 },
      { name: "GET /v1/users/me", method: "GET", path: "/v1/users/me", token: reader.token, goal: 0.5 },
      { name: `GET /v1/users/me, ${CONNECTIONS} users in turn`, method: "GET", path: "/v1/users/me", tokens: readers, goal: 0.5 },
      { name: "GET /v1/marketplace/transactions", method: "GET", path: "/v1/marketplace/transactions", token: reader.token, goal: 0.5 },
      { name: `GET /v1/marketplace/transactions, ${CONNECTIONS} users in turn`, method: "GET", path: "/v1/marketplace/transactions", tokens: readers, goal: 0.5 },
      { name: `GET /v1/marketplace/offers, ${CONNECTIONS} users in turn`, method: "GET", path: "/v1/marketplace/offers", tokens: readers, goal: 0.5 },
      { name: "POST /v1/auth/token", method: "POST", path: "/v1/auth/token", body: tokenBody, goal: 0.4 },
    ] satisfies Endpoint[]).filter((e) => ROWS.length === 0 || ROWS.some((r) => e.name.includes(r)));
    // The bare handlers answer each endpoint's bytes as the API answered them.
    const answers = new Map<string, { status: number; type: string; body: Buffer }>();
    // A cache-miss row's bare handler answers every URL of the row with one of them (same size and route).
    const missAnswers: { pattern: RegExp; key: string }[] = [];
    for (const e of endpoints) {
      if (e.mixed) continue;
      if (e.miss) {
        const one = e.path.replace(/\{(\w+)\}/g, (_, list: keyof typeof ids) => ids[list][0]!).replace(/\{int:(\d+):\d+\}/g, "$1");
        const source = e.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/?&]*");
        missAnswers.push({ pattern: new RegExp(`^${source}$`), key: `${e.method} ${e.path}` });
        answers.set(`${e.method} ${e.path}`, await answerOf(api.url, { ...e, path: one }));
        continue;
      }
      if (answers.has(`${e.method} ${e.path}`)) continue;
      answers.set(`${e.method} ${e.path}`, await answerOf(api.url, e));
    }
    // The mixed row's bare handler answers each request with an answer of its route.
    const mixedAnswers: { method: string; pattern: RegExp; answer: { status: number; type: string; body: Buffer } }[] = [];
    if (endpoints.some((e) => e.mixed)) {
      const routes: [string, RegExp, string, string?][] = [
        ["GET", /^\/v1\/artworks\/[^/?]+$/, `/v1/artworks/${ids.artwork[0]}`],
        ["GET", /^\/v1\/artworks\?limit=20&artist_id=/, `/v1/artworks?limit=20&artist_id=${ids.artist[0]}`],
        ["GET", /^\/v1\/artworks\?/, "/v1/artworks?limit=20&page=2"],
        ["GET", /^\/v1\/users\/me$/, "/v1/users/me", readers[0]],
        ["GET", /^\/v1\/users\/[^/?]+$/, `/v1/users/${ids.user[0]}`],
        ["GET", /^\/v1\/marketplace\/transactions$/, "/v1/marketplace/transactions", readers[0]],
        ["GET", /^\/v1\/marketplace\/listings\?/, "/v1/marketplace/listings?limit=20&page=2"],
        ["GET", /^\/v1\/community\/posts\?/, "/v1/community/posts?limit=20&page=2"],
      ];
      for (const [method, pattern, one, token] of routes) mixedAnswers.push({ method, pattern, answer: await answerOf(api.url, { name: one, method: "GET", path: one, ...(token ? { token } : {}), goal: 0 }) });
      const post = await fetch(new URL("/v1/community/posts", api.url), { method: "POST", headers: { authorization: `Bearer ${writers[0]}`, "content-type": "application/json" }, body: JSON.stringify({ type: "discussion", content: "The bare handler's model post", tags: ["bench"] }) });
      if (post.status !== 201) throw new Error(`a community post answered ${post.status}: ${await post.text()}`);
      mixedAnswers.push({ method: "POST", pattern: /^\/v1\/community\/posts$/, answer: { status: 201, type: post.headers.get("content-type") ?? "application/json", body: Buffer.from(await post.arrayBuffer()) } });
    }
    const bareUrl = await bareExpress(ctx, (bare) => {
      bare.use((req, res, next) => {
        const key = `${req.method} ${req.originalUrl}`;
        const answer =
          answers.get(key) ??
          answers.get(missAnswers.find((m) => m.pattern.test(req.originalUrl))?.key ?? "") ??
          mixedAnswers.find((m) => m.method === req.method && m.pattern.test(req.originalUrl))?.answer;
        if (!answer) return next();
        res.status(answer.status).type(answer.type).send(answer.body);
      });
    });

    const rows: (string | number)[][] = [];
    for (const e of endpoints) {
      const opts = {
        method: e.method,
        headers: { ...(e.token ? { authorization: `Bearer ${e.token}` } : {}), ...(e.body ? { "content-type": "application/json" } : {}) },
        ...(e.body ? { body: e.body } : {}),
        ...(e.tokens ? { requests: e.tokens.map((token) => ({ method: e.method, path: e.path, headers: { authorization: `Bearer ${token}` } })) } : {}),
        ...(e.miss ? { requests: [{ method: e.method, template: e.path, ids, setupRequest: RANDOM_PATH }] } : {}),
        ...(e.mixed ? { requests: [{ method: "GET" as const, path: "/", mix: { ids, readers, writers, pages: { artworks: pages(size), listings: pages(size / 5), posts: pages(size) } }, setupRequest: MIXED_PATH }] } : {}),
      };
      const profiler = CPU_PROFILE_DIR && (e.miss || e.mixed) ? new Session() : undefined;
      if (profiler) {
        profiler.connect();
        await profiler.post("Profiler.enable");
        await profiler.post("Profiler.start");
      }
      const hitsBefore = api.publicReads?.stats.hits ?? 0;
      const apiCpu = mainThreadCpuMs();
      const pgCpu = postgresCpuMs(path.join(ctx.dir, "pg"));
      statements.count = 0;
      statements.texts.clear();
      const ours = await load(e.miss || e.mixed ? `${api.url}/` : `${api.url}${e.path}`, opts);
      const n = Math.max(1, ours.total);
      const apiMs = (mainThreadCpuMs() - apiCpu) / n;
      const pgMs = (postgresCpuMs(path.join(ctx.dir, "pg")) - pgCpu) / n;
      const perRequest = statements.count / n;
      const hits = (api.publicReads?.stats.hits ?? 0) - hitsBefore;
      const ran = new Map(statements.texts);
      if (profiler) {
        const { profile } = await profiler.post("Profiler.stop");
        profiler.disconnect();
        const file = path.join(CPU_PROFILE_DIR!, `reads-${size}-${e.name.replace(/[^a-z0-9]+/gi, "_").replace(/^_|_$/g, "")}.cpuprofile`);
        writeFileSync(file, JSON.stringify(profile));
        log(`CPU profile of ${e.name}: ${file}`);
      }
      const bareCpu = mainThreadCpuMs();
      const bare = await load(e.miss || e.mixed ? `${bareUrl}/` : `${bareUrl}${e.path}`, opts);
      const bareMs = (mainThreadCpuMs() - bareCpu) / Math.max(1, bare.total);
      const ratio = ours.rps / bare.rps;
      rows.push([
        e.name, ours.rps, bare.rps, ratio.toFixed(2), e.goal, ours.p50, ours.p99,
        perRequest.toFixed(2), apiMs.toFixed(2), bareMs.toFixed(2), pgMs.toFixed(2), ((hits / n) * 100).toFixed(0), ours.failures,
        ratio >= e.goal && ours.p99 < (e.miss || e.mixed ? 100 : 50) ? "yes" : "no",
      ]);
      log(`${size}: ${e.name} ${ours.rps} req/s (bare ${bare.rps}), p99 ${ours.p99} ms, ${perRequest.toFixed(2)} statements, API ${apiMs.toFixed(2)} ms (bare ${bareMs.toFixed(2)}), Postgres ${pgMs.toFixed(2)} ms CPU a request`);
      if (e.miss || e.mixed) {
        const frequent = [...ran].filter(([, r]) => r.count >= n / 20).sort((x, y) => y[1].count - x[1].count);
        for (const [text, r] of frequent) log(`${e.name}: ${(r.count / n).toFixed(2)} a request: ${text.replace(/\s+/g, " ").slice(0, 400)}`);
        if (EXPLAIN) await explain(ctx.databaseUrl, e.name, frequent, log);
      }
    }
    sections.push(
      [
        `### ${target.artworks.toLocaleString("en")} artworks, ${target.users.toLocaleString("en")} users, ${target.listings.toLocaleString("en")} listings, ${target.fractional.toLocaleString("en")} fractionalized, ${target.events.toLocaleString("en")} events, ${target.posts.toLocaleString("en")} posts`,
        "",
        table(["endpoint", "API req/s", "bare req/s", "ratio", "goal", "p50 ms", "p99 ms", "statements / request", "API CPU ms / request", "bare CPU ms / request", "Postgres CPU ms / request", "cache hits %", "non-2xx", "met"], rows),
      ].join("\n"),
    );
  }
  return [`Reads: ${CONNECTIONS} connections, ${DURATION_S} s per row, ${os.cpus().length} cores, load generator in a worker thread`, "", ...sections].join("\n\n");
}

async function load(url: string, opts: Partial<autocannon.Options>): Promise<{ rps: number; p50: number; p99: number; failures: number; total: number }> {
  const r = await autocannon({ url, duration: DURATION_S, connections: CONNECTIONS, workers: 1, ...opts } as autocannon.Options);
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, failures: r.non2xx + r.errors + r.timeouts, total: r.requests.total };
}

/**
 * Each reader buys a seeded listing by card and makes an offer on another, through the API, so that
 * the per-user rows read a page with a sale and an offer rather than an empty one; returns once
 * every sale has settled on-chain.
 */
async function giveReadersHistory(apiUrl: string, databaseUrl: string, apiKeys: string[], log: (line: string) => void): Promise<void> {
  const db = createDb(databaseUrl, 1);
  try {
    const listings = await sql<{ id: string; price_cents: string; accepts_offers: boolean }>`
      select id, price_cents::text, accepts_offers from listings where status = 'active' order by created_at, id limit ${apiKeys.length * 3}`.execute(db);
    const forSale = listings.rows.filter((l) => !l.accepts_offers).slice(0, apiKeys.length);
    const forOffers = listings.rows.filter((l) => l.accepts_offers).slice(0, apiKeys.length);
    if (forSale.length < apiKeys.length || forOffers.length < apiKeys.length) throw new Error("too few seeded listings for the readers' purchases and offers");
    const started = Date.now();
    let next = 0;
    const buyer = async () => {
      while (next < apiKeys.length) {
        const i = next++;
        const { token } = await call(apiUrl, "POST", "/v1/auth/token", { api_key: apiKeys[i], scope: ["read", "write"] });
        await call(apiUrl, "POST", `/v1/marketplace/listings/${forSale[i]!.id}/purchase`, { payment_method_id: "pm_card_visa" }, token);
        const offer = Math.max(1, Math.floor(Number(forOffers[i]!.price_cents) / 200));
        await call(apiUrl, "POST", "/v1/marketplace/offers", { listing_id: forOffers[i]!.id, offer_amount_usd: offer, payment_method_id: "pm_card_visa" }, token);
      }
    };
    await Promise.all(Array.from({ length: 8 }, buyer));
    const ids = forSale.map((l) => l.id);
    for (;;) {
      const { rows } = await sql<{ n: string }>`select count(*) as n from sales where listing_id = any(${ids}::text[]) and status = 'completed'`.execute(db);
      if (Number(rows[0]!.n) === ids.length) break;
      if (Date.now() - started > 300_000) throw new Error(`the readers' purchases did not complete: ${rows[0]!.n} of ${ids.length}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    log(`${apiKeys.length} readers each bought a listing and made an offer in ${Math.round((Date.now() - started) / 100) / 10} s`);
  } finally {
    await db.destroy();
  }
}

async function answerOf(apiUrl: string, e: Endpoint): Promise<{ status: number; type: string; body: Buffer }> {
  // A row of many users' reads: the bare handler answers each with the first user's answer.
  const token = e.token ?? e.tokens?.[0];
  const res = await fetch(new URL(e.path, apiUrl), {
    method: e.method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(e.body ? { "content-type": "application/json" } : {}) },
    body: e.body,
  });
  if (!res.ok) throw new Error(`${e.name} answered ${res.status}: ${await res.text()}`);
  return { status: res.status, type: res.headers.get("content-type") ?? "application/json", body: Buffer.from(await res.arrayBuffer()) };
}

async function vacuum(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query("vacuum (analyze)");
  } finally {
    await client.end();
  }
}

/** The ids the cache-miss rows pick from: live artworks, their artists, every user, fractionalized artworks, events; words of the seeded media, event types. */
async function idsOf(databaseUrl: string): Promise<Record<"artwork" | "artist" | "user" | "medium" | "fractional" | "event" | "eventType", string[]>> {
  const db = createDb(databaseUrl, 1);
  try {
    const artworks = await sql<{ id: string; artist_id: string }>`select id, artist_id from artworks where deleted_at is null`.execute(db);
    const users = await sql<{ id: string }>`select id from users`.execute(db);
    const fractional = await sql<{ id: string }>`select artwork_id as id from fractional_artworks where status = 'active'`.execute(db);
    const events = await sql<{ id: string }>`select id from platform_events`.execute(db);
    return {
      artwork: artworks.rows.map((r) => r.id),
      artist: [...new Set(artworks.rows.map((r) => r.artist_id))],
      user: users.rows.map((r) => r.id),
      medium: ["oil", "acrylic", "water", "digital", "photo", "charcoal", "bronze", "ink", "mixed", "gouache"],
      fractional: fractional.rows.map((r) => r.id),
      event: events.rows.map((r) => r.id),
      eventType: ["exhibition", "talk", "workshop", "auction", "fair"],
    };
  } finally {
    await db.destroy();
  }
}

/**
 * CPU time of the Postgres cluster in `dataDir` so far, in ms: the postmaster with its exited
 * children, and its live backends (Linux /proc; 0 elsewhere).
 */
function postgresCpuMs(dataDir: string): number {
  try {
    const postmaster = Number(readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    const ticks = (stat: string[], fields: number[]) => fields.reduce((sum, i) => sum + Number(stat[i]), 0);
    // Fields after the command's closing parenthesis: [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime.
    const statOf = (pid: string) => readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "").split(" ");
    let total = ticks(statOf(String(postmaster)), [11, 12, 13, 14]);
    for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
      try {
        const stat = statOf(pid);
        if (Number(stat[1]) === postmaster) total += ticks(stat, [11, 12]);
      } catch {
        // gone meanwhile
      }
    }
    return total * 10; // USER_HZ is 100 on Linux
  } catch {
    return 0;
  }
}

/** CPU time of this process's main thread so far, in ms (the API's event loop; not the load generator's thread; Linux /proc). */
function mainThreadCpuMs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8").replace(/^.*\) /s, "").split(" ");
    return (Number(stat[11]) + Number(stat[12])) * 10;
  } catch {
    return 0;
  }
}

/** EXPLAIN (ANALYZE, BUFFERS) of each statement a row ran (with the last parameters it was given), to stderr. */
async function explain(databaseUrl: string, row: string, texts: [string, { values: unknown[] }][], log: (line: string) => void): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    for (const [text, { values }] of texts) {
      if (!/^\s*(select|with)\b/i.test(text)) continue;
      const plan = await client.query({ text: `explain (analyze, buffers) ${text}`, values: values.map((v) => (typeof v === "bigint" ? v.toString() : v)) });
      log(`${row}: EXPLAIN ANALYZE of ${text}\n  params ${JSON.stringify(values, (_, v) => (typeof v === "bigint" ? v.toString() : v))}\n${plan.rows.map((r) => `    ${r["QUERY PLAN"]}`).join("\n")}`);
    }
  } finally {
    await client.end();
  }
}
