/**
 * Exactly one token per artwork across a crash between send and receipt: the API runs as a child
 * process that SIGKILLs itself right after its certify transaction is sent (and its hash stored),
 * then restarts. The restarted pipeline resumes from the stored hash without sending again, and the
 * indexer's event certifies the artwork once, with one event.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import path from "node:path";
import { sql } from "kysely";
import { english, generateMnemonic, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDb } from "../../api/src/db/connection.ts";
import { binPath, childEnv, freePort, type ManagedProcess, spawnManaged, waitUntil } from "../../tools/stack/processes.ts";
import { ADMIN_API_KEY } from "../support/api.ts";
import { certifyOperationOf, createPlatformDatabase, freshRelayerKey, tokenIdOfArtwork, transactionCount } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { startIndexerForTest, type TestIndexer } from "../support/indexer.ts";
import { artworkForm, createSdkUser, sdk } from "../support/sdk.ts";
import { waitFor } from "../support/wait.ts";

const env = testEnvironment();
let database: Awaited<ReturnType<typeof createPlatformDatabase>>;
let indexer: TestIndexer;
let relayerKey: `0x${string}`;
let db: ReturnType<typeof createDb>;
let storageDir: string;
const custodyMnemonic = generateMnemonic(english);
const children: ManagedProcess[] = [];

beforeAll(async () => {
  database = await createPlatformDatabase();
  [indexer, relayerKey] = await Promise.all([startIndexerForTest({ target: { databaseUrl: database.databaseUrl } }), freshRelayerKey()]);
  db = createDb(database.databaseUrl, 2);
  storageDir = mkdtempSync(path.join(env.tempDir, "crash-storage-"));
});

afterAll(async () => {
  for (const child of children) await child.stop("SIGKILL", 5_000);
  await db?.destroy();
  await indexer?.stop();
  await database?.drop().catch(() => {});
});

/**
 * The API as an operator runs it: its HTTP process and its worker process (`node --import tsx
 * api/src/server.ts` and `api/src/worker.ts`); `process` is the worker, which certifies.
 */
async function startApiProcess(name: string, settings: Record<string, string>): Promise<{ url: string; process: ManagedProcess }> {
  const port = await freePort();
  const spawnOne = (script: string, suffix: string) => spawnManaged({
    name: `${name}-${suffix}`,
    command: binPath("node"),
    args: ["--import", "tsx", script],
    logFile: path.join(env.tempDir, `${name}-${suffix}.log`),
    detached: false,
    env: childEnv({
      NODE_ENV: "test",
      PORT: String(port),
      LOG_LEVEL: "info",
      DATABASE_URL: database.databaseUrl,
      DATABASE_POOL_SIZE: "8",
      CHAIN_RPC_URL: env.rpcUrl,
      CHAIN_ID: String(env.chainId),
      ART_CERTIFICATE_ADDRESS: env.artCertificateAddress,
      ART_SHARES_ADDRESS: env.artSharesAddress,
      ART_MARKET_ADDRESS: env.artMarketAddress,
      AUDIT_ANCHOR_ADDRESS: env.auditAnchorAddress,
      RELAYER_PRIVATE_KEY: relayerKey,
      CUSTODY_MNEMONIC: custodyMnemonic,
      BOOTSTRAP_ADMIN_API_KEY: ADMIN_API_KEY,
      INDEXER_URL: indexer.url,
      INDEXER_VIEWS_SCHEMA: indexer.viewsSchema,
      STORAGE_DIR: storageDir,
      CERTIFICATION_LEASE_MS: "1000",
      CERTIFICATION_SWEEP_INTERVAL_MS: "250",
      REDIS_URL: "",
      ...settings,
    }),
  });
  const http = spawnOne("api/src/server.ts", "http");
  children.push(http);
  const url = `http://127.0.0.1:${port}`;
  // Raw HTTP: the liveness probe, before the API is used.
  await waitUntil(async () => (await fetch(`${url}/healthz`)).ok, { timeoutMs: 60_000, what: `${name} on ${url}`, abort: http.exited });
  const worker = spawnOne("api/src/worker.ts", "worker");
  children.push(worker);
  await waitUntil(async () => /^Worker running/m.test(readFileSync(path.join(env.tempDir, `${name}-worker.log`), "utf8")), {
    timeoutMs: 60_000,
    what: `${name}'s worker`,
    abort: worker.exited,
  });
  return { url, process: worker };
}

it("mints once and certifies once when the API is killed between sending certify and its receipt", async () => {
  const relayer = privateKeyToAccount(relayerKey).address;
  expect(await transactionCount(relayer)).toBe(0);

  // 1. An API that dies right after its certify transaction is sent.
  const doomed = await startApiProcess("api-crashing", { CERTIFICATION_CRASH_AFTER_SUBMIT: "true" });
  const artist = await createSdkUser(doomed.url, { role: "artist" });
  // The answer may or may not make it out before the process dies: the database says what was registered.
  await artist.api.POST("/v1/artworks", { body: artworkForm() }).catch(() => undefined);
  const exit = await doomed.process.exited;
  expect(exit.signal).toBe("SIGKILL");

  const [registered] = await db.selectFrom("artworks").selectAll().where("artist_id", "=", artist.id).execute();
  expect(registered).toMatchObject({ status: "pending_certification" });
  const id = registered!.id;
  // The chain operation holds the attempt and the transaction sent.
  const sent = (await certifyOperationOf(db, id))!;
  expect(sent).toMatchObject({ status: "sent", attempts: 1 });
  const txHash = sent.tx_hash!;
  expect(txHash).toMatch(/^0x[0-9a-f]{64}$/);
  // The transaction was sent (and mined: the local chain mines on arrival); nothing was recorded as certified.
  expect(await transactionCount(relayer)).toBe(1);
  const tokenId = await tokenIdOfArtwork(id);
  expect(tokenId).toBeGreaterThan(0n);

  // 2. Restarted without the indexer's views: the sweep finds the lost attempt (lease expired) and
  //    resumes it from the stored transaction hash, sending nothing. With no confirmation coming, it
  //    keeps looking each time the lease runs out: a third attempt means the second one finished.
  const blind = await startApiProcess("api-resuming", { INDEXER_VIEWS_SCHEMA: `absent_${indexer.viewsSchema}` });
  const resumed = await waitFor(
    async () => {
      const op = (await certifyOperationOf(db, id))!;
      return op.attempts >= 3 ? op : null;
    },
    { timeoutMs: 30_000, what: "the resumed attempts" },
  );
  expect(resumed).toMatchObject({ status: "sent", tx_hash: txHash, last_error: null });
  expect((await db.selectFrom("artworks").select("status").where("id", "=", id).executeTakeFirstOrThrow()).status).toBe("pending_certification");
  expect(await transactionCount(relayer)).toBe(1);
  await blind.process.stop("SIGTERM");

  // 3. Restarted normally: the indexer's event certifies it, once.
  const healthy = await startApiProcess("api-restarted", {});
  const detail = await waitFor(
    async () => {
      const { data } = await sdk(healthy.url).GET("/v1/artworks/{id}", { params: { path: { id } } });
      return data.status === "certified" ? data : null;
    },
    { timeoutMs: 20_000, what: "certification after the restart" },
  );
  expect(detail.token_id).toBe(Number(tokenId));
  expect(await transactionCount(relayer)).toBe(1);
  expect(await tokenIdOfArtwork(id)).toBe(tokenId);

  const views = db.withSchema(indexer.viewsSchema) as unknown as typeof db;
  const onChain = await sql<{ token_id: bigint; tx_hash: string }>`select token_id, tx_hash from ${sql.id(indexer.viewsSchema, "certificate")} where artwork_id = ${id}`.execute(views);
  expect(onChain.rows).toHaveLength(1);
  expect(onChain.rows[0]!.tx_hash).toBe(txHash);
  const events = await db.selectFrom("outbox_events").select("payload").where("event_type", "=", "artwork.certified").where(sql`payload->>'artwork_id'`, "=", id).execute();
  expect(events).toHaveLength(1);
  expect(events[0]!.payload).toMatchObject({ artwork_id: id, token_id: Number(tokenId), tx_hash: txHash });
  const certifiedEntries = await db.selectFrom("artwork_provenance").select("tx_hash").where("artwork_id", "=", id).where("event", "=", "certified").execute();
  expect(certifiedEntries).toEqual([{ tx_hash: txHash }]);
  expect(await certifyOperationOf(db, id)).toMatchObject({ status: "confirmed", tx_hash: txHash });
  await healthy.process.stop("SIGTERM");
}, 120_000);
