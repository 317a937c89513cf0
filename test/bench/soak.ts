/**
 * `npm run soak`: a throwaway platform (embedded Postgres, Hardhat node, contracts, Ponder) with the
 * API's HTTP process and its worker as child processes, under SOAK_MINUTES of mixed traffic at
 * SOAK_RATE requests per second (reads, artwork creations, listings, buy-now purchases, offers and
 * their acceptance, share purchases, ticket purchases, likes, posts, reward redemptions), while the
 * worker is SIGKILLed every 60–120 s (seeded by SOAK_SEED) and started again at once. Afterwards it
 * waits for every purchase and certification to settle, checks that chain, indexer, database and
 * API agree (soak-invariants.ts), prints throughput, latencies, errors and the processes' RSS, and exits
 * 1 when an invariant failed or a request was answered 5xx.
 */
import { mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { readIndexerStatus } from "../../api/src/chain/indexer-views.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { freePort, type ManagedProcess, waitUntil } from "../../tools/stack/processes.ts";
import { artworkForm } from "./certification.ts";
import { blockNumber, createBenchContext, percentile, startApiProcess, table } from "./context.ts";
import { checkInvariants, type Purchases } from "./soak-invariants.ts";
import { seeded } from "../support/random.ts";
import { type Answer, REWARD_COST, request, setUpGoods, Stats, trafficWorld, vmRssKb } from "./soak-platform.ts";

const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const RATE = Number(process.env.SOAK_RATE ?? 40);
const SEED = Number(process.env.SOAK_SEED ?? 1);
const KILL_EVERY_S: [number, number] = [Number(process.env.SOAK_KILL_MIN_S ?? 60), Number(process.env.SOAK_KILL_MAX_S ?? 120)];
/** Requests outstanding at once; a tick beyond it is counted as skipped (the load is open-loop). */
const MAX_IN_FLIGHT = 200;
const RSS_EVERY_MS = 5_000;
const DRAIN_TIMEOUT_MS = Number(process.env.SOAK_DRAIN_TIMEOUT_S ?? 420) * 1000;
/** Mulberry32: the same SOAK_SEED gives the same kinds, parties and kill times. */
const random = seeded(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

async function main(): Promise<number> {
  const started = Date.now();
  const logDir = path.join(os.tmpdir(), `art-soak-logs-${new Date(started).toISOString().replace(/[:.]/g, "-")}`);
  mkdirSync(logDir, { recursive: true });
  const say = (line: string) => process.stderr.write(`[soak ${((Date.now() - started) / 1000).toFixed(0)}s] ${line}\n`);
  say(`SOAK_MINUTES=${MINUTES} SOAK_RATE=${RATE}/s SOAK_SEED=${SEED}; logs of the API processes in ${logDir}`);

  const ctx = await createBenchContext();
  const children: ManagedProcess[] = [];
  ctx.onDispose(async () => {
    await Promise.all(children.map((c) => c.stop("SIGTERM", 15_000)));
  });
  try {
    // Polling: the node's websocket feed can go silent under a long run of blocks, and a bench has no watchdog.
    await ctx.startIndexer({ polling: true });
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const settings = ctx.apiSettings({
      PORT: String(port),
      PUBLIC_BASE_URL: baseUrl,
      LOG_LEVEL: "warn",
      STORAGE_DIR: path.join(ctx.dir, "storage"),
      ALLOW_PRIVATE_WEBHOOK_URLS: "true",
    });
    const http = await startApiProcess("http", "api/src/server.ts", settings, /^API listening on (\S+)$/m, path.join(logDir, "http.log"));
    children.push(http.child);
    let workerLife = 0;
    const startWorker = async () => {
      workerLife++;
      const w = await startApiProcess(`worker-${workerLife}`, "api/src/worker.ts", settings, /^Worker running/m, path.join(logDir, `worker-${workerLife}.log`));
      children.push(w.child);
      return w.child;
    };
    let worker = await startWorker();
    say(`HTTP pid ${http.child.pid}, worker pid ${worker.pid}, ${baseUrl}`);

    // ---- the cast and the goods, and what the traffic can act on ----
    const db = createDb(ctx.databaseUrl, 3);
    ctx.onDispose(() => db.destroy());
    const { admin, artists, collectors, everyone, shareArtworks, events, reward } = await setUpGoods(baseUrl, db, say);
    const { world, refresh } = trafficWorld(db, artists.map((a) => a.id));
    await refresh();
    const partyOf = new Map(everyone.map((p) => [p.id, p]));
    /**
     * Picks an item no request is acting on (the world is refreshed every second, so an artwork,
     * listing or offer a request has in hand is still there); `done` releases it unless it was used
     * up (answered 2xx).
     */
    const inHand = new Set<string>();
    const take = <T extends { id: string }>(items: T[], where: (t: T) => boolean = () => true): { item: T; done: (a: Answer) => Answer } | undefined => {
      const candidates = items.filter((t) => where(t) && !inHand.has(t.id));
      if (candidates.length === 0) return undefined;
      const item = pick(candidates);
      inHand.add(item.id);
      return {
        item,
        done: (a) => {
          if (a.status < 200 || a.status >= 300) inHand.delete(item.id);
          return a;
        },
      };
    };

    // ---- the traffic ----
    const stats = new Stats();
    const purchases: Purchases = { sales: [], shares: [], tickets: [] };
    let artworkSerial = 0;
    type Action = () => Promise<[string, Answer] | null>;
    const get = (kind: string, p: string, token?: string): Action => async () => [kind, await request(baseUrl, "GET", p, { token })];
    const reads: Action[] = [
      get("read artworks", "/v1/artworks?limit=20"),
      get("read artworks", "/v1/artworks?limit=20&verified=true"),
      async () => [`read artwork`, await request(baseUrl, "GET", `/v1/artworks/${world.artworks.length ? pick(world.artworks) : shareArtworks[0]}`)],
      get("read listings", "/v1/marketplace/listings?limit=20"),
      async () => ["read user", await request(baseUrl, "GET", `/v1/users/${pick(everyone).id}`)],
      get("read posts", "/v1/community/posts?limit=20"),
      get("read events", "/v1/events?limit=20"),
      async () => ["read fractional", await request(baseUrl, "GET", `/v1/fractional/artworks/${pick(shareArtworks)}`)],
      async () => {
        const c = pick(collectors);
        return ["read transactions", await request(baseUrl, "GET", "/v1/marketplace/transactions?limit=20", { token: c.token })];
      },
    ];
    const writes: { weight: number; act: Action }[] = [
      {
        weight: 5,
        act: async () => {
          const artist = pick(artists);
          return ["create artwork", await request(baseUrl, "POST", "/v1/artworks", { token: artist.token, form: artworkForm(artworkSerial++) })];
        },
      },
      {
        weight: 4,
        act: async () => {
          const a = take(world.listable);
          if (!a) return null;
          const price = 20 + Math.floor(random() * 180);
          return ["create listing", a.done(await request(baseUrl, "POST", "/v1/marketplace/listings", { token: partyOf.get(a.item.artist_id)!.token, json: { artwork_id: a.item.id, price_usd: price, accepts_offers: random() < 0.4 } }))];
        },
      },
      {
        weight: 5,
        act: async () => {
          const l = take(world.listings);
          if (!l) return null;
          const answer = l.done(await request(baseUrl, "POST", `/v1/marketplace/listings/${l.item.id}/purchase`, { token: pick(collectors).token, json: { payment_method_id: "pm_card_visa" } }));
          if (answer.status >= 200 && answer.status < 300) purchases.sales.push(answer.body.tx_id);
          return ["buy now", answer];
        },
      },
      {
        weight: 3,
        act: async () => {
          const l = world.listings.filter((x) => x.accepts_offers && !inHand.has(x.id));
          if (l.length === 0) return null;
          const listing = pick(l);
          return ["make offer", await request(baseUrl, "POST", "/v1/marketplace/offers", { token: pick(collectors).token, json: { listing_id: listing.id, offer_amount_usd: 10 + Math.floor(random() * 10), payment_method_id: "pm_card_visa" } })];
        },
      },
      {
        weight: 2,
        act: async () => {
          // The offer's listing must not be in the hands of a buy-now meanwhile.
          const o = take(world.offers, (x) => !inHand.has(x.listing_id));
          if (!o) return null;
          inHand.add(o.item.listing_id);
          const answer = o.done(await request(baseUrl, "POST", `/v1/marketplace/offers/${o.item.id}/accept`, { token: partyOf.get(o.item.seller_id)!.token }));
          if (answer.status < 200 || answer.status >= 300) inHand.delete(o.item.listing_id);
          if (answer.status >= 200 && answer.status < 300) purchases.sales.push(answer.body.transaction_id);
          return ["accept offer", answer];
        },
      },
      {
        weight: 5,
        act: async () => {
          const answer = await request(baseUrl, "POST", `/v1/fractional/${pick(shareArtworks)}/purchase`, { token: pick(collectors).token, json: { shares_quantity: 1 + Math.floor(random() * 10), payment_method_id: "pm_card_visa" } });
          if (answer.status >= 200 && answer.status < 300) purchases.shares.push(answer.body.purchase_id);
          return ["buy shares", answer];
        },
      },
      {
        weight: 2,
        act: async () => {
          const eventId = pick(events);
          const kind = eventId === events[0] ? "in_person" : "virtual";
          const answer = await request(baseUrl, "POST", `/v1/events/${eventId}/tickets`, { token: pick(collectors).token, json: { kind, quantity: 1 + Math.floor(random() * 2), payment_method_id: "pm_card_visa" } });
          if (answer.status >= 200 && answer.status < 300) purchases.tickets.push(answer.body.order_id);
          return ["buy tickets", answer];
        },
      },
      {
        weight: 4,
        act: async () => {
          if (world.posts.length === 0) return null;
          return ["like post", await request(baseUrl, "POST", `/v1/community/posts/${pick(world.posts)}/like`, { token: pick(everyone).token })];
        },
      },
      {
        weight: 2,
        act: async () => {
          if (world.artworks.length === 0) return null;
          const author = pick(everyone);
          return ["create post", await request(baseUrl, "POST", "/v1/community/posts", { token: author.token, json: { type: "artwork_share", content: `Seen at the soak, ${random().toString(36).slice(2, 8)}`, tags: ["soak"], artwork_id: pick(world.artworks) } })];
        },
      },
      {
        weight: 2,
        act: async () => {
          const id = world.redeemers.length ? pick(world.redeemers) : null;
          if (!id || !partyOf.has(id)) return null;
          return ["redeem reward", await request(baseUrl, "POST", "/v1/rewards/redeem", { token: partyOf.get(id)!.token, json: { reward_id: reward, points_to_spend: REWARD_COST } })];
        },
      },
    ];
    const writeWeight = writes.reduce((n, w) => n + w.weight, 0);
    /** A third of the requests write (weights above, out of 100), the rest read. */
    const nextAction = (): Action => {
      let r = random() * 100;
      if (r >= writeWeight) return pick(reads);
      for (const w of writes) {
        if (r < w.weight) return w.act;
        r -= w.weight;
      }
      return pick(reads);
    };

    const rss = { http: [] as number[], worker: [] as number[], workerByLife: new Map<number, number[]>() };
    const sampleRss = () => {
      const h = vmRssKb(http.child.pid);
      const w = vmRssKb(worker.pid);
      if (h !== null) rss.http.push(h);
      if (w !== null) {
        rss.worker.push(w);
        rss.workerByLife.set(workerLife, [...(rss.workerByLife.get(workerLife) ?? []), w]);
      }
    };
    sampleRss();
    const kills: { at: number; restartMs: number }[] = [];
    const durationMs = MINUTES * 60_000;
    const loadStarted = performance.now();
    const until = loadStarted + durationMs;
    let inFlight = 0;
    let sent = 0;
    const pending = new Set<Promise<void>>();

    const timers: NodeJS.Timeout[] = [];
    let refreshing = false;
    timers.push(
      setInterval(() => {
        if (refreshing) return;
        refreshing = true;
        void refresh()
          .catch((err: unknown) => say(`refresh failed: ${String(err)}`))
          .finally(() => {
            refreshing = false;
          });
      }, 1_000),
    );
    timers.push(setInterval(sampleRss, RSS_EVERY_MS));
    timers.push(
      setInterval(() => {
        const s = (performance.now() - loadStarted) / 1000;
        say(`${s.toFixed(0)} s: ${sent} sent (${(sent / s).toFixed(1)}/s), ${inFlight} in flight, ${stats.serverErrors.length} 5xx, ${kills.length} kills, RSS http ${rss.http.at(-1)} kB worker ${rss.worker.at(-1)} kB`);
      }, 30_000),
    );

    // The killer: SIGKILL the worker at seeded random times, start a new one at once.
    const killer = (async () => {
      for (;;) {
        const wait = (KILL_EVERY_S[0] + random() * (KILL_EVERY_S[1] - KILL_EVERY_S[0])) * 1000;
        if (performance.now() + wait > until) return;
        await new Promise((r) => setTimeout(r, wait));
        const at = performance.now() - loadStarted;
        sampleRss();
        process.kill(worker.pid, "SIGKILL");
        await worker.exited;
        const t = performance.now();
        worker = await startWorker();
        kills.push({ at, restartMs: performance.now() - t });
        say(`worker SIGKILLed at ${(at / 1000).toFixed(0)} s; worker ${workerLife} (pid ${worker.pid}) ready after ${((performance.now() - t) / 1000).toFixed(1)} s`);
      }
    })();

    // Open loop: one request every 1/RATE s whatever the answers take.
    const interval = 1000 / RATE;
    for (let next = performance.now(); next < until; next += interval) {
      const delay = next - performance.now();
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      if (inFlight >= MAX_IN_FLIGHT) {
        stats.skipped++;
        continue;
      }
      const action = nextAction();
      inFlight++;
      sent++;
      const t0 = performance.now();
      const p = action()
        .then((done) => done ?? pick(reads)())
        .then((done) => {
          const [kind, answer] = done!;
          stats.record(kind, answer.status, performance.now() - t0, answer.body, (t0 - loadStarted) / 1000);
        })
        .catch((err: unknown) => stats.record("client error", 0, performance.now() - t0, String(err), (t0 - loadStarted) / 1000))
        .finally(() => {
          inFlight--;
          pending.delete(p);
        });
      pending.add(p);
    }
    await Promise.all(pending);
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    await killer;
    for (const t of timers) clearInterval(t);
    sampleRss();
    say(`load done: ${sent} requests in ${loadSeconds.toFixed(0)} s; waiting for the queues to drain`);

    // ---- drain: every purchase and certification settled ----
    const drainStarted = performance.now();
    let drained = true;
    try {
      await waitUntil(
        async () => {
          const { rows } = await sql<{ what: string; n: number }>`
            select 'artworks pending certification' as what, count(*)::int as n from artworks where status not in ('certified', 'certification_failed') and deleted_at is null
            union all select 'sales in progress', count(*)::int from sales where status in ('pending_payment', 'paid')
            union all select 'share purchases pending', count(*)::int from fractional_purchases where status = 'pending'
            union all select 'ticket orders pending', count(*)::int from ticket_orders o where o.status = 'pending' or exists (select from transactions t where t.id = o.transaction_id and t.stage = 'refunding')
            union all select 'chain operations open', count(*)::int from chain_operations where status not in ('confirmed', 'failed')
            union all select 'transactions pending', count(*)::int from transactions where status = 'pending'
            union all select 'outbox events undispatched', count(*)::int from outbox_events where dispatched_at is null`.execute(db);
          const open = rows.filter((r) => r.n > 0);
          return open.length === 0 || undefined;
        },
        { timeoutMs: DRAIN_TIMEOUT_MS, intervalMs: 1_000, what: "the queues drained" },
      );
    } catch (err) {
      drained = false;
      say(String(err));
    }
    const drainSeconds = (performance.now() - drainStarted) / 1000;
    // The indexer has the last block before the chain is compared with it.
    const head = BigInt(await blockNumber(ctx.rpcUrl));
    await waitUntil(async () => ((await readIndexerStatus({ db, viewsSchema: "chain" })).indexedBlock ?? -1n) >= head || undefined, {
      timeoutMs: 60_000,
      intervalMs: 250,
      what: `the indexer at block ${head}`,
    });
    sampleRss();
    say(`drained: ${drained} after ${drainSeconds.toFixed(0)} s; checking invariants`);
    const { rows: openJobs } = await sql<{ task: string; n: number; locked: number }>`
      select t.identifier as task, count(*)::int as n, count(j.locked_at)::int as locked from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where j.run_at <= now() group by 1 order by 2 desc`
      .execute(db)
      .catch(() => ({ rows: [] as { task: string; n: number; locked: number }[] }));

    // How long the purchases answered 2xx took to complete, from their creation (the request's transaction).
    const { rows: settleTimes } = await sql<{ kind: string; ms: number }>`
      select 'sale (buy-now or accepted offer)' as kind, extract(epoch from completed_at - created_at)::float8 * 1000 as ms from transactions where type = 'sale' and status = 'completed' and id in (${sql.join(purchases.sales.length ? purchases.sales : [""])})
      union all select 'share purchase', extract(epoch from t.completed_at - p.created_at)::float8 * 1000 from fractional_purchases p join transactions t on t.id = p.transaction_id where p.status = 'confirmed' and p.id in (${sql.join(purchases.shares.length ? purchases.shares : [""])})
      union all select 'ticket order', extract(epoch from coalesce(t.completed_at, o.confirmed_at) - o.created_at)::float8 * 1000 from ticket_orders o left join transactions t on t.id = o.transaction_id where o.status = 'confirmed' and o.id in (${sql.join(purchases.tickets.length ? purchases.tickets : [""])})`.execute(db);

    const checks = await checkInvariants({ db, baseUrl, adminToken: admin, rpcUrl: ctx.rpcUrl, deployment: ctx.deployment, purchases });
    if (!drained) checks.unshift({ name: "the queues drained within the timeout", ok: false, detail: `not after ${DRAIN_TIMEOUT_MS / 1000} s` });
    checks.push({ name: "no request answered 5xx (or no answer)", ok: stats.serverErrors.length === 0, detail: `${stats.serverErrors.length}` });

    // ---- the report ----
    const kb = (v: number | undefined) => (v === undefined ? "-" : `${(v / 1024).toFixed(0)} MB`);
    const kinds = [...stats.latencies.keys()].sort();
    const total = kinds.reduce((n, k) => n + stats.latencies.get(k)!.length, 0);
    const ms = (v: number) => `${Math.round(v)}`;
    const statusText = (k: string) =>
      [...stats.statuses.get(k)!.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([s, n]) => `${n}× ${s}`)
        .join(", ");
    const workerLives = [...rss.workerByLife.values()];
    const lines = [
      `Soak: ${os.cpus().length} cores; HTTP process and worker process (children, tsx); Ponder polling; sandbox processor; SOAK_SEED=${SEED}`,
      `${MINUTES} min at ${RATE} requests/s asked: ${total} requests in ${loadSeconds.toFixed(0)} s = ${(total / loadSeconds).toFixed(1)}/s achieved (${stats.skipped} ticks skipped at ${MAX_IN_FLIGHT} in flight); worker SIGKILLed ${kills.length}× (restart to ready: ${kills.map((k) => (k.restartMs / 1000).toFixed(1)).join(", ")} s); drained ${drained ? "in" : "NOT within"} ${drainSeconds.toFixed(0)} s`,
      "",
      table(
        ["kind", "requests", "req/s", "p50 ms", "p99 ms", "answers"],
        kinds.map((k) => {
          const l = [...stats.latencies.get(k)!].sort((a, b) => a - b);
          return [k, l.length, (l.length / loadSeconds).toFixed(2), ms(percentile(l, 50)), ms(percentile(l, 99)), statusText(k)];
        }),
      ),
      "",
      table(
        ["purchase answered 2xx: created -> completed", "count", "p50 ms", "p99 ms", "max ms"],
        [...new Set(settleTimes.map((r) => r.kind))].map((k) => {
          const l = settleTimes.filter((r) => r.kind === k).map((r) => r.ms).sort((a, b) => a - b);
          return [k, l.length, ms(percentile(l, 50)), ms(percentile(l, 99)), ms(l.at(-1)!)];
        }),
      ),
      "",
      table(
        ["process", "RSS start", "RSS peak", "RSS end"],
        [
          ["HTTP", kb(rss.http[0]), kb(Math.max(...rss.http)), kb(rss.http.at(-1))],
          ["worker (all lives)", kb(rss.worker[0]), kb(Math.max(...rss.worker)), kb(rss.worker.at(-1))],
          ...workerLives.map((l, i) => [`  worker life ${i + 1}`, kb(l[0]), kb(Math.max(...l)), kb(l.at(-1))]),
        ],
      ),
      "",
      table(
        ["invariant", "held", "detail"],
        checks.map((c) => [c.name, c.ok ? "yes" : "**NO**", c.detail.replace(/\|/g, "/")]),
      ),
    ];
    lines.push("", `4xx answers (first code of each): ${[...stats.refusals.entries()].map(([k, code]) => `${k} ${code}`).join("; ")}`);
    if (openJobs.length) lines.push("", `Jobs due and not done: ${openJobs.map((j) => `${j.task} ${j.n} (${j.locked} locked)`).join(", ")}`);
    if (stats.serverErrors.length) {
      lines.push("", "5xx answers (first 20):", ...stats.serverErrors.slice(0, 20).map((e) => `- ${e.at.toFixed(1)} s ${e.kind}: ${e.status} ${e.body}`));
    }
    lines.push("", `RSS samples (MB, every ${RSS_EVERY_MS / 1000} s): HTTP ${rss.http.map((v) => Math.round(v / 1024)).join(" ")}`, `worker ${rss.worker.map((v) => Math.round(v / 1024)).join(" ")}`);
    process.stdout.write(`\n## soak\n\n${lines.join("\n")}\n`);
    const failed = checks.filter((c) => !c.ok);
    if (failed.length) say(`FAILED: ${failed.map((c) => c.name).join("; ")} (logs in ${logDir})`);
    return failed.length ? 1 : 0;
  } finally {
    await ctx.dispose();
  }
}

process.exitCode = await main();
