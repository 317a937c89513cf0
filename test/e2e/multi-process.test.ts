/**
 * Two HTTP processes (api/src/server.ts) and two workers (api/src/worker.ts) on one Postgres, the
 * run's chain and a Ponder of their own: 100 artworks created through both HTTP processes are each
 * certified once (one token, one provenance entry, one artwork.certified event), their 100 webhook
 * deliveries are each sent once, and, with Redis (TEST_REDIS_URL), the HTTP processes share one
 * rate limit. Without TEST_REDIS_URL the rate-limit part is skipped (each process counts alone).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDb } from "../../api/src/db/connection.ts";
import { binPath, childEnv, freePort, type ManagedProcess, spawnManaged, waitUntil } from "../../tools/stack/processes.ts";
import { testEnvironment } from "../support/environment.ts";
import { testApiSettings } from "../support/api.ts";
import { Receiver } from "../support/webhooks.ts";
import { createPlatformDatabase, freshRelayerKey } from "../support/artworks.ts";
import { startIndexerForTest, type TestIndexer } from "../support/indexer.ts";
import { artworkForm, createSdkUser, sdkOf } from "../support/sdk.ts";

const ARTWORKS = 100;
const ANONYMOUS_LIMIT = 40;
const redisUrl = testEnvironment().redisUrl;

const children: ManagedProcess[] = [];
const workers: ManagedProcess[] = [];
const logFiles: string[] = [];
let database: { databaseUrl: string; drop(): Promise<void> };
let indexer: TestIndexer;
let receiver: Receiver;
let urls: string[] = [];
let db: ReturnType<typeof createDb>;

async function startProcess(name: string, script: string, settings: Record<string, string>, ready: RegExp): Promise<RegExpExecArray> {
  const logFile = path.join(testEnvironment().tempDir, `${name}-${randomBytes(3).toString("hex")}.log`);
  const child = spawnManaged({ name, command: binPath("node"), args: ["--import", "tsx", script], logFile, detached: false, env: childEnv(settings) });
  children.push(child);
  if (script.endsWith("worker.ts")) workers.push(child);
  logFiles.push(logFile);
  return waitUntil(async () => ready.exec(readFileSync(logFile, "utf8")) ?? undefined, { timeoutMs: 60_000, intervalMs: 100, what: `${name} (${script}, log ${logFile})`, abort: child.exited });
}

beforeAll(async () => {
  database = await createPlatformDatabase();
  const [started, relayerKey] = await Promise.all([startIndexerForTest({ target: { databaseUrl: database.databaseUrl } }), freshRelayerKey()]);
  indexer = started;
  receiver = await new Receiver().start();
  const settings = testApiSettings({
    DATABASE_URL: database.databaseUrl,
    INDEXER_URL: indexer.url,
    INDEXER_VIEWS_SCHEMA: indexer.viewsSchema,
    STORAGE_DIR: mkdtempSync(path.join(testEnvironment().tempDir, "storage-")),
    // One relayer account for both workers: its nonces must not collide.
    RELAYER_PRIVATE_KEY: relayerKey,
    LOG_LEVEL: "warn",
    DATABASE_POOL_SIZE: "8",
    CERTIFICATION_CONCURRENCY: "8",
    CERTIFICATION_SWEEP_INTERVAL_MS: "1000",
    CERTIFICATION_RETRY_BASE_MS: "200",
    WEBHOOK_CONCURRENCY: "8",
    WEBHOOK_MAX_IN_FLIGHT_PER_USER: "8",
    WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: "8",
    ALLOW_PRIVATE_WEBHOOK_URLS: "true",
    RATE_LIMIT_ANONYMOUS_PER_MINUTE: String(ANONYMOUS_LIMIT),
    RATE_LIMIT_KEY_PREFIX: `rl-multi-${randomBytes(4).toString("hex")}`,
    REDIS_URL: redisUrl ?? "",
  });
  // Links in token metadata must not depend on which process certifies.
  const ports = [await freePort(), await freePort()];
  const http = ports.map((port, i) =>
    startProcess(`http-${i + 1}`, "api/src/server.ts", { ...settings, PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${ports[0]}` }, /^API listening on (\S+)$/m),
  );
  const workersReady = [1, 2].map((i) => startProcess(`worker-${i}`, "api/src/worker.ts", { ...settings, PUBLIC_BASE_URL: `http://127.0.0.1:${ports[0]}` }, /^Worker running/m));
  await Promise.all([...http, ...workersReady]);
  urls = ports.map((port) => `http://127.0.0.1:${port}`);
  db = createDb(database.databaseUrl, 2);
}, 120_000);

afterAll(async () => {
  await Promise.all(children.map((c) => c.stop("SIGTERM", 15_000)));
  await db?.destroy();
  await receiver?.stop();
  await indexer?.stop();
  await database?.drop().catch(() => {});
}, 60_000);

it(`certifies ${ARTWORKS} artworks created through two HTTP processes once each, and sends each webhook delivery once`, async () => {
  const artist = await createSdkUser(urls[0]!, { role: "artist" });
  // The same user's token through either HTTP process.
  const through = urls.map((url) => sdkOf(url, artist));
  const hook = receiver.endpoint(() => ({ status: 200 }));
  const { data: sub, response: subscribed } = await through[1]!.POST("/v1/webhooks", { body: { url: hook, events: ["artwork.certified"] } });
  expect(subscribed.status).toBe(201);

  const created = await Promise.all(Array.from({ length: ARTWORKS }, (_, i) => through[i % 2]!.POST("/v1/artworks", { body: artworkForm() })));
  expect(created.map((r) => r.response.status)).toEqual(Array(ARTWORKS).fill(201));
  const ids = created.map((r) => r.data.id);

  await waitUntil(
    async () => {
      const { count } = await db.selectFrom("artworks").select((eb) => eb.fn.countAll<string>().as("count")).where("id", "in", ids).where("status", "=", "certified").executeTakeFirstOrThrow();
      return Number(count) === ARTWORKS || undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250, what: `${ARTWORKS} certified artworks` },
  );

  // One token per artwork on chain (the indexer's view), one provenance entry, one event.
  const tokens = await sql<{ artwork_id: string; n: number }>`select artwork_id, count(*)::int as n from ${sql.id(indexer.viewsSchema, "certificate")} where artwork_id in (${sql.join(ids)}) group by artwork_id`.execute(db);
  expect(tokens.rows).toHaveLength(ARTWORKS);
  expect(tokens.rows.every((r) => r.n === 1)).toBe(true);
  const provenance = await db.selectFrom("artwork_provenance").select(["artwork_id", (eb) => eb.fn.countAll<string>().as("n")]).where("artwork_id", "in", ids).where("event", "=", "certified").groupBy("artwork_id").execute();
  expect(provenance).toHaveLength(ARTWORKS);
  expect(provenance.every((r) => Number(r.n) === 1)).toBe(true);
  const events = await db.selectFrom("outbox_events").select(sql<string>`payload->>'artwork_id'`.as("artwork_id")).where("event_type", "=", "artwork.certified").where(sql`payload->>'artwork_id'`, "in", ids).execute();
  expect(events).toHaveLength(ARTWORKS);
  expect(new Set(events.map((e) => e.artwork_id)).size).toBe(ARTWORKS);

  // Each delivery sent once per attempt: one request per delivery id, and the database counts one attempt.
  await receiver.waitForRequests(hook, ARTWORKS, 30_000);
  // The receiver answers before the worker records the attempt: wait until no delivery is in flight.
  const settled = () =>
    db.selectFrom("webhook_deliveries").select(["id", "attempts", "status", "in_flight_since", "last_error"]).where("subscription_id", "=", sub.id).execute();
  const deliveries = await waitUntil(
    async () => {
      const rows = await settled();
      return rows.length === ARTWORKS && rows.every((d) => d.status !== "pending" || (d.in_flight_since === null && d.attempts > 0)) ? rows : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 250, what: `${ARTWORKS} settled deliveries` },
  );
  // Only the workers send, and each stops only once its attempts under way are answered and
  // recorded: once both have exited, every request that will ever come has come.
  await Promise.all(workers.map((worker) => worker.stop("SIGTERM", 15_000)));
  const requests = receiver.requests(hook);
  const perDelivery = new Map<string, number>();
  for (const r of requests) perDelivery.set(String(r.headers["webhook-id"]), (perDelivery.get(String(r.headers["webhook-id"])) ?? 0) + 1);
  expect(requests.length).toBeGreaterThanOrEqual(ARTWORKS);
  expect(perDelivery.size).toBe(ARTWORKS);
  expect([...perDelivery.values()].every((n) => n === 1)).toBe(true);
  const anomalies = deliveries.filter((d) => !(d.status === "succeeded" && d.attempts === 1 && perDelivery.get(d.id) === 1));
  // An attempt lost to an error is sent again once its lease expires: the processes' warnings say why.
  const warnings = logFiles.flatMap((file) => readFileSync(file, "utf8").split("\n").filter((line) => /"level":(40|50|60)/.test(line)).map((line) => line.slice(0, 800)));
  expect(anomalies, warnings.join("\n")).toEqual([]);
}, 120_000);

it.skipIf(!redisUrl)("shares the rate limit between the HTTP processes (Redis)", async () => {
  // Anonymous calls count per IP: 30 to each process against one limit of 40 a minute. Raw HTTP: the
  // answers' statuses are what is counted (the SDK would wait out each 429's Retry-After and retry).
  const answers = await Promise.all(urls.flatMap((url) => Array.from({ length: 30 }, () => fetch(`${url}/v1/users/me`).then((r) => r.status))));
  const allowed = answers.filter((s) => s !== 429).length;
  expect(allowed).toBeLessThanOrEqual(ANONYMOUS_LIMIT);
  expect(answers.filter((s) => s === 429).length).toBeGreaterThanOrEqual(60 - ANONYMOUS_LIMIT);
});
