/**
 * Public and authenticated reads at marketplace scale, next to bare Express serving the same bytes
 * in the same run: the platform is seeded (tools/seed: users, certified artworks with provenance,
 * listings, posts) to BENCH_READS_SMALL artworks (default 1,000) and measured, then grown to
 * BENCH_READS_LARGE (default 100,000; with a tenth as many users, a fifth as many listings, as
 * many posts) and measured again. The load generator runs in a worker thread of its own, so the
 * API's event loop (this process's) serves alone; BENCH_CONNECTIONS (64) connections,
 * BENCH_DURATION_S (8) seconds per row.
 */
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
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

interface Endpoint {
  name: string;
  method: "GET" | "POST";
  path: string;
  token?: string;
  /** Requests cycle through these credentials (one per request in turn on each connection). */
  tokens?: string[];
  body?: string;
  /** Goal: at least this share of bare Express's requests per second. */
  goal: number;
}

const countsFor = (artworks: number): SeedCounts => ({ artworks, users: Math.ceil(artworks / 10), listings: Math.floor(artworks / 5), posts: artworks });
const minus = (a: SeedCounts, b: SeedCounts): SeedCounts => ({ artworks: a.artworks - b.artworks, users: a.users - b.users, listings: a.listings - b.listings, posts: a.posts - b.posts });

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
  for (let i = 0; i < CONNECTIONS; i++) {
    const other = await call(api.url, "POST", "/v1/admin/users", { username: `bench_reader_${i}`, email: `bench_reader_${i}@example.test`, role: "collector" }, admin.token);
    readers.push((await call(api.url, "POST", "/v1/auth/token", { api_key: other.api_key.secret, scope: ["read"] })).token);
  }

  const seedTarget = {
    databaseUrl: ctx.databaseUrl,
    rpcUrl: ctx.rpcUrl,
    chainId: ctx.chainId,
    relayerPrivateKey: HARDHAT_DEV_RELAYER_KEY as `0x${string}`,
    custodyMnemonic: api.platform.config.chain.custodyMnemonic,
    artCertificate: ctx.deployment.artCertificate,
    publicBaseUrl: api.url,
    storageDir,
    viewsSchema: "chain",
    royaltyBps: 500,
  };
  const log = (line: string) => process.stderr.write(`[reads] ${line}\n`);
  const sections: string[] = [];
  let seeded: SeedCounts = { artworks: 0, users: 0, listings: 0, posts: 0 };
  // BENCH_READS_LARGE=0 measures the small size alone.
  for (const size of [...new Set([SMALL, LARGE])].filter((n) => n > 0)) {
    const target = countsFor(size);
    const report = await seedPlatform(seedTarget, minus(target, seeded), { log });
    seeded = target;
    log(`seeded to ${JSON.stringify(target)}: ${JSON.stringify(report.seconds)} s, ${report.transactions} transactions`);
    const sample = await call(api.url, "GET", "/v1/artworks?limit=1&verified=true");
    const artwork = sample.data[0];
    const detail = await call(api.url, "GET", `/v1/artworks/${artwork.id}`);
    const endpoints: Endpoint[] = ([
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
      { name: "GET /v1/users/me", method: "GET", path: "/v1/users/me", token: reader.token, goal: 0.5 },
      { name: `GET /v1/users/me, ${CONNECTIONS} users in turn`, method: "GET", path: "/v1/users/me", tokens: readers, goal: 0.5 },
      { name: "GET /v1/marketplace/transactions", method: "GET", path: "/v1/marketplace/transactions", token: reader.token, goal: 0.5 },
      { name: "POST /v1/auth/token", method: "POST", path: "/v1/auth/token", body: tokenBody, goal: 0.4 },
    ] satisfies Endpoint[]).filter((e) => ROWS.length === 0 || ROWS.some((r) => e.name.includes(r)));
    // The bare handlers answer each endpoint's bytes as the API answered them.
    const answers = new Map<string, { status: number; type: string; body: Buffer }>();
    for (const e of endpoints) {
      if (answers.has(`${e.method} ${e.path}`)) continue;
      const res = await fetch(new URL(e.path, api.url), {
        method: e.method,
        headers: { ...(e.token ? { authorization: `Bearer ${e.token}` } : {}), ...(e.body ? { "content-type": "application/json" } : {}) },
        body: e.body,
      });
      if (!res.ok) throw new Error(`${e.name} answered ${res.status}: ${await res.text()}`);
      answers.set(`${e.method} ${e.path}`, { status: res.status, type: res.headers.get("content-type") ?? "application/json", body: Buffer.from(await res.arrayBuffer()) });
    }
    const bareUrl = await bareExpress(ctx, (bare) => {
      bare.use((req, res, next) => {
        const answer = answers.get(`${req.method} ${req.originalUrl}`);
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
      };
      const ours = await load(`${api.url}${e.path}`, opts);
      const bare = await load(`${bareUrl}${e.path}`, opts);
      const ratio = ours.rps / bare.rps;
      rows.push([e.name, ours.rps, bare.rps, ratio.toFixed(2), e.goal, ours.p50, ours.p99, ours.failures, ratio >= e.goal && ours.p99 < 50 ? "yes" : "no"]);
      log(`${size}: ${e.name} ${ours.rps} req/s (bare ${bare.rps}), p99 ${ours.p99} ms`);
    }
    sections.push(
      [
        `### ${target.artworks.toLocaleString("en")} artworks, ${target.users.toLocaleString("en")} users, ${target.listings.toLocaleString("en")} listings, ${target.posts.toLocaleString("en")} posts`,
        "",
        table(["endpoint", "API req/s", "bare req/s", "ratio", "goal", "p50 ms", "p99 ms", "non-2xx", "met"], rows),
      ].join("\n"),
    );
  }
  return [`Reads: ${CONNECTIONS} connections, ${DURATION_S} s per row, ${os.cpus().length} cores, load generator in a worker thread`, "", ...sections].join("\n\n");
}

async function load(url: string, opts: Partial<autocannon.Options>): Promise<{ rps: number; p50: number; p99: number; failures: number }> {
  const r = await autocannon({ url, duration: DURATION_S, connections: CONNECTIONS, workers: 1, ...opts } as autocannon.Options);
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, failures: r.non2xx + r.errors + r.timeouts };
}
