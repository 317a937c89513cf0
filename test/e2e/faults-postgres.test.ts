/**
 * Postgres restarted under load. The API runs as an operator runs it (HTTP process and worker as
 * children) on an embedded Postgres of this file's own (the run's shared one serves the other test
 * files), with a Ponder of its own on it. A few clients keep writing (posts, artworks) and reading
 * while Postgres is stopped (fast shutdown) and started again on the same port and data directory
 * once every client has been refused during the outage:
 * the API recovers by itself (same processes, /readyz ready again, the worker certifies what was
 * created around the outage), every request is answered within the client's timeout, what fails
 * fails as a problem+json 503, and every creation answered 2xx is there afterwards, no more, no less.
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDb } from "../../api/src/db/connection.ts";
import { type EmbeddedPostgres, type EmbeddedPostgresOptions, startEmbeddedPostgres } from "../../tools/stack/postgres.ts";
import { freePort } from "../../tools/stack/processes.ts";
import { ApiError } from "../../clients/typescript/index.ts";
import { type ApiProcesses, startApiProcesses } from "../support/api-processes.ts";
import { createPlatformDatabase, freshRelayerKey, platformSettings, publicClient } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { startIndexerForTest, type TestIndexer } from "../support/indexer.ts";
import { type ArtPlatformClient, artworkForm, createSdkUser, sdk, type SdkUser } from "../support/sdk.ts";
import { Recording, waitFor } from "../support/wait.ts";

/** The clients' successful requests before the fault, and after the recovery, each. */
const STEADY_REQUESTS = 3;
/** A client refused pauses this long before its next request: the load's pace while the API is down, no wait for anything. */
const PAUSE_AFTER_REFUSAL_MS = 100;
/** A request not answered within this counts as hung. */
const CLIENT_TIMEOUT_MS = 15_000;
/** Clients writing posts (each reads back what it wrote), and one creating artworks. */
const POST_CLIENTS = 3;

const env = testEnvironment();
let postgresOptions: EmbeddedPostgresOptions;
let postgres: EmbeddedPostgres;
let database: Awaited<ReturnType<typeof createPlatformDatabase>>;
let indexer: TestIndexer;
let api: ApiProcesses;
/** The API's processes that exited (none should, for whatever the database does). */
const exits: string[] = [];

beforeAll(async () => {
  postgresOptions = {
    dataDir: path.join(env.tempDir, `postgres-faults-${randomBytes(3).toString("hex")}`),
    port: await freePort(),
    logFile: path.join(env.tempDir, "postgres-faults.log"),
    detached: false,
  };
  postgres = await startEmbeddedPostgres(postgresOptions);
  database = await createPlatformDatabase(postgres.url("postgres"));
  const [started, relayerKey] = await Promise.all([startIndexerForTest({ target: { databaseUrl: database.databaseUrl } }), freshRelayerKey()]);
  indexer = started;
  api = await startApiProcesses("faults-postgres", {
    ...platformSettings({ databaseUrl: database.databaseUrl, indexer, relayerKey, storageDir: path.join(env.tempDir, `storage-faults-postgres-${randomBytes(3).toString("hex")}`) }),
    DATABASE_POOL_SIZE: "8",
    CERTIFICATION_SWEEP_INTERVAL_MS: "1000",
    CERTIFICATION_RETRY_BASE_MS: "200",
  });
  void api.http.exited.then(() => exits.push("http"));
  void api.worker!.exited.then(() => exits.push("worker"));
}, 120_000);

afterAll(async () => {
  await api?.stop("SIGKILL");
  await indexer?.stop();
  await postgres?.stop();
});

interface Outcome {
  what: "post" | "read" | "artwork";
  /** The client that sent it: a writer's number, or "artworks". */
  client: number | "artworks";
  status: number | "timeout" | "connection failed";
  contentType: string | null;
  body: any;
  /** When the request was sent, against the outage (ms since the test began). */
  sentAt: number;
}

/**
 * The SDK as `user` sending each request once (no retries: every outcome is one answer of the API,
 * the 503s included), with the client's timeout.
 */
const clientOf = (user: SdkUser) => sdk(api.url, { token: user.token, retry: { maxRetries: 0 } });
const timeout = () => ({ signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });

/** One SDK call; a problem answer, a hang or a dropped connection is an outcome, not an exception. */
async function call(what: Outcome["what"], client: Outcome["client"], request: () => Promise<{ data: unknown; response: Response }>, began: number): Promise<Outcome> {
  const sentAt = Date.now() - began;
  try {
    const { data, response } = await request();
    return { what, client, status: response.status, contentType: response.headers.get("content-type"), body: data, sentAt };
  } catch (error) {
    if (error instanceof ApiError) return { what, client, status: error.status, contentType: error.response.headers.get("content-type"), body: error.body, sentAt };
    return { what, client, status: (error as Error).name === "TimeoutError" ? "timeout" : "connection failed", contentType: null, body: String(error), sentAt };
  }
}

const ok = (o: Outcome) => typeof o.status === "number" && o.status >= 200 && o.status < 300;

it("recovers from a Postgres restart by itself: no hang, failures are 503 problems, every 2xx creation is durable and counted once", async () => {
  const writers: SdkUser[] = await Promise.all(Array.from({ length: POST_CLIENTS }, () => createSdkUser(api.url, { role: "artist" })));
  const artist = await createSdkUser(api.url, { role: "artist" });
  // Ready before the fault (a new head brings the indexer's first checkpoint). Raw HTTP: the readiness probe.
  await publicClient().request({ method: "evm_mine", params: [] } as never);
  await waitFor(async () => (await fetch(`${api.url}/readyz`)).status === 200, { timeoutMs: 30_000, intervalMs: 250, what: "/readyz ready before the fault" });

  const recorded = new Recording<Outcome>();
  const outcomes = recorded.items;
  const began = Date.now();
  let running = true;
  const pause = () => new Promise((r) => setTimeout(r, PAUSE_AFTER_REFUSAL_MS));
  const postClient = async (user: SdkUser, n: number) => {
    const client: ArtPlatformClient = clientOf(user);
    for (let i = 0; running; i++) {
      const created = await call("post", n, () => client.POST("/v1/community/posts", { body: { type: "discussion", content: `client ${n}, post ${i}` }, ...timeout() }), began);
      recorded.push(created);
      if (ok(created)) recorded.push(await call("read", n, () => sdk(api.url, { retry: { maxRetries: 0 } }).GET("/v1/community/posts/{id}", { params: { path: { id: created.body.post_id } }, ...timeout() }), began));
      else await pause();
    }
  };
  const artworkClient = async () => {
    const client = clientOf(artist);
    while (running) {
      const created = await call("artwork", "artworks", () => client.POST("/v1/artworks", { body: artworkForm(), ...timeout() }), began);
      recorded.push(created);
      if (!ok(created)) await pause();
    }
  };
  const clients: Outcome["client"][] = [...writers.map((_, n) => n), "artworks"];
  /** Every client has `count` creations that `pass`. */
  const everyClient = (count: number, pass: (o: Outcome) => boolean) => (items: readonly Outcome[]) =>
    clients.every((client) => items.filter((o) => o.client === client && o.what !== "read" && pass(o)).length >= count);
  const traffic = Promise.all([...writers.map(postClient), artworkClient()]);

  // Steady traffic first, then Postgres down (fast shutdown: sessions are ended, open transactions
  // rolled back) until every client has been refused; then started again.
  await recorded.until(everyClient(STEADY_REQUESTS, ok), `${STEADY_REQUESTS} creations of every client before the fault`, 30_000);
  const stoppedAt = Date.now() - began;
  await postgres.stop();
  await recorded.until(everyClient(1, (o) => !ok(o) && o.sentAt >= stoppedAt), "a refused request of every client during the outage", CLIENT_TIMEOUT_MS * 2);
  // Raw HTTP: the readiness probe, with the database down.
  expect((await fetch(`${api.url}/readyz`)).status).toBe(503);
  postgres = await startEmbeddedPostgres(postgresOptions);
  const restartedAt = Date.now() - began;

  // The same processes come back to ready, and serve writes again.
  // Raw HTTP: the readiness probe (polled: the API has no signal to give a test in another process).
  const ready = await waitFor(async () => ((await fetch(`${api.url}/readyz`)).status === 200 ? Date.now() - began : null), {
    timeoutMs: 30_000,
    intervalMs: 250,
    what: "/readyz ready after the restart",
  });
  await recorded.until(everyClient(STEADY_REQUESTS, (o) => ok(o) && o.sentAt > ready), `${STEADY_REQUESTS} creations of every client after the recovery`, 15_000);
  running = false;
  await traffic;
  expect(api.http.stopping).toBe(false);
  expect(exits).toEqual([]);

  // Every request was answered in time; what failed, failed as a 503 problem (only around the outage).
  const hung = outcomes.filter((o) => typeof o.status !== "number");
  expect(hung).toEqual([]);
  const failed = outcomes.filter((o) => !ok(o));
  expect(failed.length).toBeGreaterThan(0);
  for (const o of failed) {
    expect({ status: o.status, contentType: o.contentType, code: o.body?.code }).toEqual({ status: 503, contentType: expect.stringMatching(/^application\/problem\+json/), code: "service_unavailable" });
    expect(o.sentAt).toBeGreaterThanOrEqual(stoppedAt - CLIENT_TIMEOUT_MS);
    expect(o.sentAt).toBeLessThanOrEqual(ready);
  }
  expect(outcomes.filter((o) => ok(o) && o.sentAt > restartedAt).length).toBeGreaterThan(0);

  // Durable: each creation answered 2xx is readable, and the tables hold exactly those.
  const db = createDb(database.databaseUrl, 2);
  try {
    const posts = outcomes.filter((o) => o.what === "post" && ok(o)).map((o) => o.body);
    const stored = await db.selectFrom("community_posts").select(["id", "content"]).where("author_id", "in", writers.map((w) => w.id)).execute();
    expect(stored.map((p) => p.id).sort()).toEqual(posts.map((p) => p.post_id).sort());
    for (const post of posts) {
      const { data: read, response } = await sdk(api.url).GET("/v1/community/posts/{id}", { params: { path: { id: post.post_id } } });
      expect(response.status).toBe(200);
      expect(read.content).toBe(post.content);
    }
    const artworks = outcomes.filter((o) => o.what === "artwork" && ok(o)).map((o) => o.body.id as string);
    expect(artworks.length).toBeGreaterThan(0);
    const storedArtworks = await db.selectFrom("artworks").select("id").where("artist_id", "=", artist.id).execute();
    expect(storedArtworks.map((a) => a.id).sort()).toEqual([...artworks].sort());
    // The worker came back too: every artwork, created before, around or after the outage, is certified once.
    await waitFor(
      async () => {
        const rows = await db.selectFrom("artworks").select("status").where("id", "in", artworks).execute();
        return rows.every((r) => r.status === "certified");
      },
      { timeoutMs: 60_000, intervalMs: 250, what: `certification of ${artworks.length} artworks after the restart` },
    );
    const certified = await db.selectFrom("artwork_provenance").select("artwork_id").where("artwork_id", "in", artworks).where("event", "=", "certified").execute();
    expect(certified.map((c) => c.artwork_id).sort()).toEqual([...artworks].sort());
  } finally {
    await db.destroy();
  }
}, 150_000);
