/**
 * Webhook deliveries per second to a local receiver, and the time from the domain change (the
 * commit of the transaction that records the event) to the receiver holding the request.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { createDb } from "../../api/src/db/connection.ts";
import { recordEvent } from "../../api/src/jobs/outbox.ts";
import type { RunningPlatform } from "../../api/src/platform.ts";
import { BENCH_ADMIN_KEY, type BenchContext, call, percentile, table } from "./context.ts";

interface Scenario {
  name: string;
  events: number;
  subscriptions: number;
  /** Events per second; unset: as fast as the producers can commit (a burst). */
  rate?: number;
  /** The events are committed while no API runs; the rate is that of draining the backlog. */
  backlog?: boolean;
}

const SCENARIOS: Scenario[] = [
  { name: "burst", events: 1000, subscriptions: 1 },
  { name: "burst", events: 200, subscriptions: 5 },
  { name: "burst", events: 1000, subscriptions: 5 },
  { name: "steady 50 events/s", events: 200, subscriptions: 1, rate: 50 },
  { name: "backlog drained after start", events: 1000, subscriptions: 1, backlog: true },
];
const PRODUCERS = 4;

export async function benchWebhooks(ctx: BenchContext): Promise<string> {
  let api: RunningPlatform = await ctx.startApi();
  const { concurrency, maxInFlightPerUser, maxInFlightPerSubscription } = api.platform.config.webhooks;
  const db = createDb(ctx.databaseUrl, PRODUCERS + 1);
  ctx.onDispose(() => db.destroy());
  const admin = await call(api.url, "POST", "/v1/auth/token", { api_key: BENCH_ADMIN_KEY, scope: ["admin"] });
  const user = await call(api.url, "POST", "/v1/admin/users", { username: "bench_webhooks", email: "bench_webhooks@example.test" }, admin.token);
  const { token } = await call(api.url, "POST", "/v1/auth/token", { api_key: user.api_key.secret, scope: ["webhooks:write"] });

  // Receiver: when each (event, delivery) first arrived.
  const arrivals = new Map<string, number>();
  let duplicates = 0;
  let onArrival = () => {};
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = performance.now();
      res.writeHead(200).end();
      const key = `${JSON.parse(Buffer.concat(chunks).toString()).id} ${req.headers["webhook-id"]}`;
      if (arrivals.has(key)) duplicates++;
      else arrivals.set(key, at);
      onArrival();
    });
  });
  receiver.listen(0, "127.0.0.1");
  await new Promise((r) => receiver.once("listening", r));
  ctx.onDispose(() => new Promise((r) => receiver.close(() => r(undefined))));
  const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  const produce = async (scenario: Scenario, committed: Map<string, number>) => {
    let next = 0;
    const started = performance.now();
    const producer = async () => {
      while (next < scenario.events) {
        const n = next++;
        if (scenario.rate) {
          const due = started + (n * 1000) / scenario.rate;
          if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
        }
        const id = await db.transaction().execute((trx) => recordEvent(trx, "offer.created", { offer_id: `off_bench_${n}`, amount_usd: 100 }, [user.id]));
        committed.set(id, performance.now());
      }
    };
    await Promise.all(Array.from({ length: scenario.rate ? 1 : PRODUCERS }, producer));
  };

  const rows: (string | number)[][] = [];
  for (const scenario of SCENARIOS) {
    arrivals.clear();
    duplicates = 0;
    const subscriptions = [];
    for (let i = 0; i < scenario.subscriptions; i++) {
      subscriptions.push(await call(api.url, "POST", "/v1/webhooks", { url: `${base}/hook/${i}`, events: ["offer.created"] }, token));
    }
    const expected = scenario.events * scenario.subscriptions;
    const allArrived = new Promise<void>((resolve) => {
      onArrival = () => arrivals.size >= expected && resolve();
    });

    const committed = new Map<string, number>();
    if (scenario.backlog) {
      await api.close();
      await produce(scenario, committed);
      api = await ctx.startApi();
    } else {
      await produce(scenario, committed);
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([allArrived, new Promise((r) => (timer = setTimeout(r, 180_000)))]);
    clearTimeout(timer);

    const times = [...arrivals.values()];
    const latencies = [...arrivals].map(([key, at]) => at - committed.get(key.split(" ")[0]!)!).sort((a, b) => a - b);
    const from = scenario.backlog ? Math.min(...times) : Math.min(...committed.values());
    rows.push([
      scenario.name,
      scenario.events,
      scenario.subscriptions,
      `${arrivals.size}/${expected}`,
      scenario.rate ? scenario.rate : Math.round((scenario.events / (Math.max(...committed.values()) - Math.min(...committed.values()))) * 1000),
      Math.round((arrivals.size / (Math.max(...times) - from)) * 1000),
      scenario.backlog ? "–" : Math.round(percentile(latencies, 50)),
      scenario.backlog ? "–" : Math.round(percentile(latencies, 99)),
      duplicates,
    ]);
    for (const s of subscriptions) await call(api.url, "DELETE", `/v1/webhooks/${s.id}`, undefined, token);
  }

  return [
    `Webhooks: API, worker (WEBHOOK_CONCURRENCY=${concurrency}, caps ${maxInFlightPerUser} per user and ${maxInFlightPerSubscription} per subscription), receiver and producers (${PRODUCERS} connections, one when paced) in one process, ${os.cpus().length} cores; one user owns the subscriptions`,
    "",
    table(["scenario", "events", "subscriptions", "delivered", "events committed/s", "deliveries/s", "p50 ms", "p99 ms", "duplicates"], rows),
  ].join("\n");
}
