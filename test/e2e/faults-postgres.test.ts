/**
 * Postgres restarted under load. The API runs as an operator runs it (HTTP process and worker as
 * children) on an embedded Postgres of this file's own (the run's shared one serves the other test
 * files), with a Ponder of its own on it. A few clients keep writing (posts, artworks) and reading
 * while Postgres is stopped (fast shutdown) and started again on the same port and data directory:
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
import { createUser, type TestUser } from "../api/helpers.ts";
import { type ApiProcesses, startApiProcesses } from "../support/api-processes.ts";
import { artworkInput, createPlatformDatabase, formFields, freshRelayerKey, platformSettings, pngImage, publicClient } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { startIndexerForTest, type TestIndexer } from "../support/indexer.ts";
import { waitFor } from "../support/wait.ts";

/** How long Postgres stays down. */
const OUTAGE_MS = 4_000;
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
}, 120_000);

afterAll(async () => {
  await api?.stop("SIGKILL");
  await indexer?.stop();
  await postgres?.stop();
});

interface Outcome {
  what: "post" | "read" | "artwork";
  status: number | "timeout" | "connection failed";
  contentType: string | null;
  body: any;
  /** When the request was sent, against the outage (ms since the test began). */
  sentAt: number;
}

/** One request with the client's timeout; a hang or a dropped connection is an outcome, not an exception. */
async function call(what: Outcome["what"], url: string, init: RequestInit, began: number): Promise<Outcome> {
  const sentAt = Date.now() - began;
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    return { what, status: res.status, contentType: res.headers.get("content-type"), body, sentAt };
  } catch (error) {
    return { what, status: (error as Error).name === "TimeoutError" ? "timeout" : "connection failed", contentType: null, body: String(error), sentAt };
  }
}

const ok = (o: Outcome) => typeof o.status === "number" && o.status >= 200 && o.status < 300;

it("recovers from a Postgres restart by itself: no hang, failures are 503 problems, every 2xx creation is durable and counted once", async () => {
  const writers: TestUser[] = await Promise.all(Array.from({ length: POST_CLIENTS }, () => createUser(api.api, { role: "artist" })));
  const artist = await createUser(api.api, { role: "artist" });
  // Ready before the fault (a new head brings the indexer's first checkpoint).
  await publicClient().request({ method: "evm_mine", params: [] } as never);
  await waitFor(async () => (await fetch(`${api.url}/readyz`)).status === 200, { timeoutMs: 30_000, intervalMs: 250, what: "/readyz ready before the fault" });

  const outcomes: Outcome[] = [];
  const began = Date.now();
  let running = true;
  const postClient = async (user: TestUser, n: number) => {
    for (let i = 0; running; i++) {
      const created = await call("post", `${api.url}/v1/community/posts`, {
        method: "POST",
        headers: { authorization: `Bearer ${user.token}`, "content-type": "application/json" },
        body: JSON.stringify({ type: "discussion", content: `client ${n}, post ${i}` }),
      }, began);
      outcomes.push(created);
      if (ok(created)) outcomes.push(await call("read", `${api.url}/v1/community/posts/${created.body.post_id}`, {}, began));
      else await new Promise((r) => setTimeout(r, 100));
    }
  };
  const artworkClient = async () => {
    while (running) {
      const form = new FormData();
      for (const [k, v] of Object.entries(formFields(artworkInput()))) form.append(k, v);
      form.append("image", new Blob([pngImage()], { type: "image/png" }), "artwork.png");
      const created = await call("artwork", `${api.url}/v1/artworks`, { method: "POST", headers: { authorization: `Bearer ${artist.token}` }, body: form }, began);
      outcomes.push(created);
      if (!ok(created)) await new Promise((r) => setTimeout(r, 100));
    }
  };
  const traffic = Promise.all([...writers.map(postClient), artworkClient()]);

  // Steady traffic first, then Postgres down (fast shutdown: sessions are ended, open transactions rolled back).
  await new Promise((r) => setTimeout(r, 2_000));
  const stoppedAt = Date.now() - began;
  await postgres.stop();
  await new Promise((r) => setTimeout(r, OUTAGE_MS));
  postgres = await startEmbeddedPostgres(postgresOptions);
  const restartedAt = Date.now() - began;

  // The same processes come back to ready, and serve writes again.
  const ready = await waitFor(async () => ((await fetch(`${api.url}/readyz`)).status === 200 ? Date.now() - began : null), {
    timeoutMs: 30_000,
    intervalMs: 250,
    what: "/readyz ready after the restart",
  });
  await waitFor(() => writers.every((w, n) => outcomes.some((o) => o.what === "post" && ok(o) && o.sentAt > ready && o.body.content.startsWith(`client ${n},`))), {
    timeoutMs: 15_000,
    what: "a post of every client after the recovery",
  });
  await new Promise((r) => setTimeout(r, 1_000));
  running = false;
  await traffic;
  expect(api.http.stopping).toBe(false);
  expect(await Promise.race([api.http.exited, api.worker!.exited, new Promise((r) => setTimeout(() => r("running"), 10))])).toBe("running");

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
      const read = await fetch(`${api.url}/v1/community/posts/${post.post_id}`);
      expect(read.status).toBe(200);
      expect(((await read.json()) as { content: string }).content).toBe(post.content);
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
