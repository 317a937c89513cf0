/**
 * Certification latency and throughput on the real pieces (API, Postgres, Hardhat node, Ponder):
 * the time from POST /v1/artworks to `certified` visible through the API, for artworks submitted
 * one by one, and how many certifications per second complete when many are submitted at once.
 * The reference promises "2 to 5 minutes".
 */
import os from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import pg from "pg";
import { loadConfig } from "../../api/src/config.ts";
import { certificationAttemptsAtOnce } from "../../api/src/modules/artworks/certification.service.ts";
import { BENCH_ADMIN_KEY, type BenchContext, blockNumber, call, percentile, table } from "./context.ts";

const SEQUENTIAL = Number(process.env.BENCH_CERT_SEQUENTIAL ?? 200);
const BURST = Number(process.env.BENCH_CERT_BURST ?? 200);
/** Bursts in a row (8 s apart): the first runs on the connections and code the sequential run warmed, the next on warm ones. */
const BURSTS = Number(process.env.BENCH_CERT_BURSTS ?? 1);
/** `processes`: the API as `npm start` runs it, an HTTP process and a worker process; `one` (default): both halves in the bench's own process. */
const LAYOUT = process.env.BENCH_CERT_LAYOUT === "processes" ? "processes" : "one";
/** One by one: how often an artwork's detail is read until it is certified (the latency's resolution). */
const POLL_MS = 10;
/**
 * At once: how often the artist's certified count is read. Each read is a list with a count through
 * the API, on the same two cores as the work it watches: at 10 ms the polls were about 100 requests
 * a second beside the burst's 200 creations; 50 ms costs at most 50 ms of resolution on seconds.
 */
const BURST_POLL_MS = 50;

/** A 1x1 PNG made unique by trailing bytes (the image hash is part of the certificate). */
function image(n: number): Blob {
  const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");
  return new Blob([Buffer.concat([png, Buffer.from(`bench-${n}-${Date.now()}`)])], { type: "image/png" });
}

/** The multipart body of `POST /v1/artworks` for artwork `n` (a small unique PNG). */
export function artworkForm(n: number): FormData {
  const form = new FormData();
  form.append("title", `Bench ${n}`);
  form.append("year", "2020");
  form.append("medium", "Digital print");
  form.append("dimensions", JSON.stringify({ width: 40, height: 30, unit: "cm" }));
  form.append("image", image(n), `bench-${n}.png`);
  return form;
}

/** Registers an artwork (a small unique PNG) and returns its id; it is certified by the worker. */
export async function submitArtwork(baseUrl: string, token: string, n: number): Promise<string> {
  const res = await fetch(new URL("/v1/artworks", baseUrl), { method: "POST", headers: { authorization: `Bearer ${token}` }, body: artworkForm(n) });
  const body = (await res.json()) as { id?: string };
  if (res.status !== 201 || !body.id) throw new Error(`POST /v1/artworks answered ${res.status}: ${JSON.stringify(body)}`);
  return body.id;
}

/** Waits until `count` of the artist's artworks are certified (polled every 100 ms through the API), at most `timeoutMs`. */
export async function untilCertified(baseUrl: string, artistId: string, count: number, timeoutMs: number): Promise<void> {
  for (const started = performance.now(); (await certifiedCount(baseUrl, artistId)) < count; ) {
    if (performance.now() - started > timeoutMs) throw new Error(`${count} artworks not certified within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** How many of the artist's artworks are certified, through the API. */
export async function certifiedCount(baseUrl: string, artistId: string): Promise<number> {
  const list = await call(baseUrl, "GET", `/v1/artworks?artist_id=${artistId}&verified=true&limit=1`);
  return list.pagination.total as number;
}

export async function benchCertification(ctx: BenchContext): Promise<string> {
  await ctx.startIndexer();
  // CERTIFICATION_CONCURRENCY and CERTIFICATION_BATCH_SIZE from the environment, to compare settings.
  const tuning = Object.fromEntries(Object.entries(process.env).filter(([k, v]) => /^CERTIFICATION_(CONCURRENCY|BATCH_SIZE)$/.test(k) && v)) as Record<string, string>;
  const settings = { STORAGE_DIR: path.join(ctx.dir, "storage"), ...tuning };
  const api = LAYOUT === "processes" ? await ctx.startApiProcesses(settings) : await ctx.startApi(settings);
  const admin = await call(api.url, "POST", "/v1/auth/token", { api_key: BENCH_ADMIN_KEY, scope: ["admin"] });
  const artist = async (name: string) => {
    const user = await call(api.url, "POST", "/v1/admin/users", { username: name, email: `${name}@example.test`, role: "artist" }, admin.token);
    const token = await call(api.url, "POST", "/v1/auth/token", { api_key: user.api_key.secret, scope: ["write"] });
    return { id: user.id as string, token: token.token as string };
  };

  // The load generator of the bursts, started (and its modules loaded) before anything is measured.
  const load = await BurstWorker.start();
  try {
    return await measure(ctx, api, artist, load, tuning);
  } finally {
    await load.stop();
  }
}

async function measure(ctx: BenchContext, api: { url: string }, artist: (name: string) => Promise<{ id: string; token: string }>, load: BurstWorker, tuning: Record<string, string>): Promise<string> {
  // One by one: POST, then poll the detail until it says certified.
  const solo = await artist("bench_sequential");
  const latencies: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const started = performance.now();
    const id = await submitArtwork(api.url, solo.token, i);
    for (;;) {
      const detail = await call(api.url, "GET", `/v1/artworks/${id}`);
      if (detail.status === "certified") break;
      if (detail.status === "certification_failed") throw new Error(`${id} failed: ${detail.certification_error}`);
      if (performance.now() - started > 60_000) throw new Error(`${id} not certified within 60 s`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    latencies.push(performance.now() - started);
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  // What the API now tells a caller, from these certifications.
  const estimated = await estimate(api.url, solo.token);

  // All at once: submit BURST artworks concurrently, then count certified ones through the API.
  const crowd = await artist("bench_burst");
  const bursts: { accepted: number; certified: number; blocks: number; stages: string }[] = [];
  for (let b = 0; b < BURSTS; b++) {
    if (b > 0) await new Promise((r) => setTimeout(r, 8_000));
    const blockBefore = await blockNumber(ctx.rpcUrl);
    const { accepted, certified } = await load.run({ baseUrl: api.url, token: crowd.token, artistId: crowd.id, count: BURST, first: 10_000 * (b + 1), expectedCertified: BURST * (b + 1) });
    // On the local chain each transaction is a block of its own: blocks used = certifyBatch transactions sent.
    bursts.push({ accepted, certified, blocks: (await blockNumber(ctx.rpcUrl)) - blockBefore, stages: await burstStages(ctx.databaseUrl, crowd.id, 10_000 * (b + 1)) });
  }

  const fmt = (ms: number) => (ms / 1000).toFixed(2);
  const batch = tuning.CERTIFICATION_BATCH_SIZE ?? "40 (default)";
  const concurrency = `${certificationAttemptsAtOnce(loadConfig(ctx.apiSettings(tuning)).certification)} attempts at once`;
  return [
    `Certification: ${os.cpus().length} cores, Hardhat node (automine), Ponder over websocket, CERTIFICATION_BATCH_SIZE=${batch} (${concurrency}); multipart uploads of small PNGs; ${LAYOUT === "processes" ? "an HTTP process and a worker process, as npm start runs them (BENCH_CERT_LAYOUT=processes)" : "HTTP and worker in the bench's process"}`,
    "",
    table(
      ["measure", "value"],
      [
        [`POST -> certified via the API, ${SEQUENTIAL} one by one: p50`, `${fmt(percentile(sorted, 50))} s`],
        ["  p90", `${fmt(percentile(sorted, 90))} s`],
        ["  p99", `${fmt(percentile(sorted, 99))} s`],
        ["  max", `${fmt(sorted.at(-1)!)} s`],
        ...bursts.flatMap((burst, b) => [
          [`${BURST} submitted at once${BURSTS > 1 ? ` (burst ${b + 1})` : ""}: all accepted (201) after`, `${fmt(burst.accepted)} s`],
          [`  all ${BURST} certified after`, `${fmt(burst.certified)} s`],
          ["  certifications per second", (BURST / (burst.certified / 1000)).toFixed(1)],
          ["  transactions (blocks) they took", `${burst.blocks} (${(BURST / burst.blocks).toFixed(1)} certifications each)`],
          ["  stages, s after the first creation committed (p50 / last)", burst.stages],
        ]),
        ["estimated_certification_time answered after the sequential run", estimated],
        ["reference (published)", "2 to 5 minutes"],
      ],
    ),
  ].join("\n");
}

/**
 * Where a burst's time went, from the database's own clock (each `now()` is its transaction's
 * start): creations committed, chain operations confirmed (the artwork certified in the same
 * transaction) and seen by the indexer, as p50 / last seconds after the first creation.
 */
async function burstStages(databaseUrl: string, artistId: string, first: number): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ stage: string; p50: number; last: number }>(
      `with burst as (
         select a.id, a.created_at, o.confirmed_at, o.indexed_at
         from artworks a join chain_operations o on o.key = 'certify:' || a.id
         where a.artist_id = $1 and a.title like 'Bench %' and substring(a.title from 7)::int >= $2 and substring(a.title from 7)::int < $2 + 10000
       ), start as (select min(created_at) as t0 from burst),
       stages as (
         select 'created' as stage, 1 as n, extract(epoch from created_at - t0) as s from burst, start
         union all select 'confirmed', 2, extract(epoch from confirmed_at - t0) from burst, start
         union all select 'indexed', 3, extract(epoch from indexed_at - t0) from burst, start
       )
       select stage, percentile_cont(0.5) within group (order by s) as p50, max(s) as last from stages group by stage, n order by n`,
      [artistId, first],
    );
    return rows.map((r) => `${r.stage} ${Number(r.p50).toFixed(2)} / ${Number(r.last).toFixed(2)}`).join("; ");
  } finally {
    await client.end();
  }
}

export interface BurstOrder {
  baseUrl: string;
  token: string;
  artistId: string;
  count: number;
  /** The first artwork number (images are unique per number). */
  first: number;
  /** The artist's certified count that ends the burst. */
  expectedCertified: number;
}

/**
 * Submits `count` artworks at once, then reads the artist's certified count until it reaches
 * `expectedCertified`: milliseconds until all were accepted and until all were certified.
 */
export async function runBurst(order: BurstOrder): Promise<{ accepted: number; certified: number }> {
  const started = performance.now();
  const ids = await Promise.all(Array.from({ length: order.count }, (_, i) => submitArtwork(order.baseUrl, order.token, order.first + i)));
  if (new Set(ids).size !== order.count) throw new Error("lost submissions");
  const accepted = performance.now() - started;
  for (;;) {
    const done = await certifiedCount(order.baseUrl, order.artistId);
    if (done >= order.expectedCertified) break;
    if (performance.now() - started > 300_000) throw new Error(`only ${done}/${order.expectedCertified} certified after 300 s`);
    await new Promise((r) => setTimeout(r, BURST_POLL_MS));
  }
  return { accepted, certified: performance.now() - started };
}

/**
 * runBurst in a worker thread: the 200 multipart requests and the polls are encoded and decoded off
 * the event loop the API serves on (in this process), as a client elsewhere would be (measured: the
 * load generator took 12-15 % of that thread during a burst). The thread starts once, before the
 * first burst: loading its modules takes about 1.4 s of both cores, which a thread per burst spent
 * right before each burst's first request.
 */
class BurstWorker {
  private readonly worker = new Worker(new URL("./certification-burst.ts", import.meta.url));
  private readonly exited = new Promise<never>((_, reject) => {
    this.worker.once("error", reject);
    this.worker.once("exit", (code) => reject(new Error(`the burst's worker thread exited with ${code}`)));
  });

  private next(): Promise<{ ready?: true; result?: { accepted: number; certified: number }; error?: string }> {
    return Promise.race([this.exited, new Promise((resolve) => this.worker.once("message", resolve))]) as never;
  }

  static async start(): Promise<BurstWorker> {
    const burst = new BurstWorker();
    // The exit that stop() causes rejects `exited` after the last burst; each burst sees it through next().
    burst.exited.catch(() => {});
    await burst.next();
    return burst;
  }

  async run(order: BurstOrder): Promise<{ accepted: number; certified: number }> {
    const reply = this.next();
    this.worker.postMessage(order);
    const { result, error } = await reply;
    if (!result) throw new Error(`the burst failed: ${error}`);
    return result;
  }

  async stop(): Promise<void> {
    await this.worker.terminate();
  }
}

/** The estimate a new registration is given (its artwork is removed again). */
async function estimate(baseUrl: string, token: string): Promise<string> {
  const form = new FormData();
  form.append("title", "Estimate probe");
  form.append("year", "2020");
  form.append("medium", "Digital print");
  form.append("dimensions", JSON.stringify({ width: 1, height: 1, unit: "cm" }));
  form.append("image", image(-1), "probe.png");
  const res = await fetch(new URL("/v1/artworks", baseUrl), { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form });
  const body = (await res.json()) as { id: string; estimated_certification_time: string };
  await call(baseUrl, "DELETE", `/v1/artworks/${body.id}`, undefined, token);
  return body.estimated_certification_time;
}
