/**
 * A platform of its own for artwork/certification tests: a fresh database (so the job queue, the
 * sweep and the confirmation see only this file's artworks), a Ponder indexer on it, a relayer
 * account of its own holding the relayer's roles (so nonces are not shared with other files), and a
 * storage directory. The chain and the contracts are the run's.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import type { Kysely } from "kysely";
import { type Abi, type Address, createPublicClient, createWalletClient, type Hex, http, keccak256, parseEther, toBytes, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artExchangeAbi } from "../../contracts/abi/ArtExchange.ts";
import { artMarketAbi } from "../../contracts/abi/ArtMarket.ts";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import { auditAnchorAbi } from "../../contracts/abi/AuditAnchor.ts";
import { type IndexerViews } from "../../api/src/chain/indexer-schema.ts";
import { createDb, createDbHandle, type DbHandle } from "../../api/src/db/connection.ts";
import { migrateJobQueue } from "../../api/src/jobs/queue.ts";
import { migrateToLatest } from "../../api/src/db/migrate.ts";
import { moduleMigrations } from "../../api/src/modules/index.ts";
import type { ChainOperation, Database } from "../../api/src/db/database.ts";
import type { IndexerTarget } from "../../tools/stack/indexer.ts";
import { dropDatabase, ensureDatabase, withDatabase } from "../../tools/stack/postgres.ts";
import { freePort } from "../../tools/stack/processes.ts";
import { standIn, startTestApi, type TestApi, type TestResponse, type TestUser } from "./api.ts";
import { testEnvironment } from "./environment.ts";
import { startIndexerForTest, type TestIndexer } from "./indexer.ts";
import { waitFor } from "./wait.ts";

export interface ArtworkPlatform {
  api: TestApi;
  /** This platform's database (not the run's shared one). */
  db: Kysely<Database>;
  views: Kysely<IndexerViews>;
  indexer: TestIndexer;
  databaseUrl: string;
  storageDir: string;
  relayerKey: Hex;
  /** Settings every API of this platform gets (for child processes). */
  env: Record<string, string>;
}

const env = () => testEnvironment();
export const publicClient = () => createPublicClient({ transport: http(env().rpcUrl) });

/**
 * The deployer (account #0, the contracts' admin) as an account the run's Hardhat node holds
 * unlocked: its transactions go as eth_sendTransaction, and the node gives each its nonce as it
 * takes it. Test files send from this account at the same time (and test servers relay from it with
 * nonces of their own): a nonce read beforehand and signed here could lose that race, one the node
 * assigns cannot.
 */
const deployerWallet = () => createWalletClient({ account: privateKeyToAccount(env().relayerPrivateKey).address, transport: http(env().rpcUrl) });
export type DeployerWallet = ReturnType<typeof deployerWallet>;

/** Sends from the deployer (see deployerWallet: the node assigns the nonce, so no send loses a nonce race). */
export async function sendAsDeployer(send: (deployer: DeployerWallet) => Promise<Hex>): Promise<Hex> {
  return send(deployerWallet());
}

/** Grants (or revokes) `role` of the contract at `address` to `account` as the deployer, once mined. */
export async function setRoleAsDeployer(contract: { address: Address; abi: Abi }, role: Hex, account: Address, granted = true): Promise<void> {
  const hash = await sendAsDeployer((admin) => admin.writeContract({ chain: null, address: contract.address, abi: contract.abi, functionName: granted ? "grantRole" : "revokeRole", args: [role, account] }));
  expect((await publicClient().waitForTransactionReceipt({ hash })).status).toBe("success");
}

/**
 * A fresh relayer key, funded, holding the roles the API's relayer needs: CERTIFIER_ROLE
 * (ArtCertificate), SHARE_ISSUER_ROLE (ArtShares), SETTLER_ROLE (ArtMarket), ANCHORER_ROLE (AuditAnchor) and
 * ORDER_SIGNER_ROLE (ArtExchange: the platform's order key), granted by the
 * deployer (account #0).
 */
export async function freshRelayerKey(): Promise<Hex> {
  const key = generatePrivateKey();
  const address = privateKeyToAccount(key).address;
  const client = publicClient();
  await client.request({ method: "hardhat_setBalance", params: [address, toHex(parseEther("1000"))] } as never);
  const grants = [
    { address: env().artCertificateAddress, abi: artCertificateAbi, role: "CERTIFIER_ROLE" },
    { address: env().artSharesAddress, abi: artSharesAbi, role: "SHARE_ISSUER_ROLE" },
    { address: env().artMarketAddress, abi: artMarketAbi, role: "SETTLER_ROLE" },
    { address: env().auditAnchorAddress, abi: auditAnchorAbi, role: "ANCHORER_ROLE" },
    { address: env().artExchangeAddress, abi: artExchangeAbi, role: "ORDER_SIGNER_ROLE" },
  ] as const;
  for (const grant of grants) {
    const role = (await client.readContract({ address: grant.address, abi: grant.abi as Abi, functionName: grant.role })) as Hex;
    await setRoleAsDeployer({ address: grant.address, abi: grant.abi as Abi }, role, address);
  }
  return key;
}

/**
 * A migrated database of its own (on the run's server, or on the server of `serverUrl`). Migrated
 * before Ponder touches it: Ponder keeps Kysely migration tables of its own (in `ponder_sync`),
 * which Kysely's migrator would take for the API's.
 */
export async function createPlatformDatabase(serverUrl = env().serverUrl): Promise<{ databaseUrl: string; drop(): Promise<void> }> {
  const name = `art_${randomBytes(5).toString("hex")}`;
  await ensureDatabase(serverUrl, name);
  const databaseUrl = withDatabase(serverUrl, name);
  const db = createDb(databaseUrl, 1);
  try {
    await migrateToLatest(db, moduleMigrations);
  } finally {
    await db.destroy();
  }
  return { databaseUrl, drop: () => dropDatabase(serverUrl, name) };
}

/** The settings of an API on a platform of its own: its database, indexer, relayer and image storage. */
export function platformSettings(p: { databaseUrl: string; indexer: Pick<TestIndexer, "url" | "viewsSchema">; relayerKey: Hex; storageDir: string }): Record<string, string> {
  return {
    DATABASE_URL: p.databaseUrl,
    INDEXER_URL: p.indexer.url,
    INDEXER_VIEWS_SCHEMA: p.indexer.viewsSchema,
    STORAGE_DIR: p.storageDir,
    RELAYER_PRIVATE_KEY: p.relayerKey,
  };
}

/**
 * Starts a platform (its database, indexer, relayer and API); close() stops it and drops its database.
 * `indexerTarget` changes what the indexer reads (e.g. a websocket behind a proxy the test controls).
 */
export async function startArtworkPlatform(
  overrides: Record<string, string> = {},
  options: { indexerTarget?: Partial<IndexerTarget> } = {},
): Promise<ArtworkPlatform & { close(): Promise<void> }> {
  const database = await createPlatformDatabase();
  const [indexer, relayerKey] = await Promise.all([
    startIndexerForTest({ target: { ...options.indexerTarget, databaseUrl: database.databaseUrl } }),
    freshRelayerKey(),
  ]);
  const storageDir = mkdtempSync(path.join(env().tempDir, "storage-"));
  const settings = {
    ...platformSettings({ databaseUrl: database.databaseUrl, indexer, relayerKey, storageDir }),
    CERTIFICATION_SWEEP_INTERVAL_MS: "1000",
    CERTIFICATION_RETRY_BASE_MS: "200",
    CERTIFICATION_CONCURRENCY: "8",
    IMAGE_FETCH_CONCURRENCY: "4",
    // Eight: with its worker, listeners, indexer and the test's own, a file takes about 35 connections,
    // and a run of three files at a time stays within a default Postgres's 100 (CI's pg15 step).
    DATABASE_POOL_SIZE: "8",
    ...overrides,
  };
  const api = await startTestApi(settings);
  const db = createDb(database.databaseUrl, 4);
  const views = db.withTables<IndexerViews>().withSchema(indexer.viewsSchema) as unknown as Kysely<IndexerViews>;
  return {
    api,
    db,
    views,
    indexer,
    databaseUrl: database.databaseUrl,
    storageDir,
    relayerKey,
    env: settings,
    async close() {
      await api.close();
      await indexer.stop();
      await db.destroy();
      await database.drop().catch(() => {});
    },
  };
}

/** startArtworkPlatform for the calling test file (beforeAll), stopped after it (afterAll). */
export function useArtworkPlatform(
  overrides: Record<string, string> | (() => Record<string, string>) = {},
  options: { indexerTarget?: () => Partial<IndexerTarget> } = {},
): ArtworkPlatform {
  let current: Awaited<ReturnType<typeof startArtworkPlatform>> | undefined;
  beforeAll(async () => {
    current = await startArtworkPlatform(typeof overrides === "function" ? overrides() : overrides, { indexerTarget: options.indexerTarget?.() });
  });
  afterAll(async () => {
    await current?.close();
  });
  return standIn<ArtworkPlatform>(() => current, "The artwork platform");
}

/** An image URL on a loopback port where nothing listens (allowed in development, never fetched): an artwork that stays pending_certification. */
export async function unreachableImageUrl(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}/never.png`;
}

/** A valid 1x1 PNG; `salt` appended after IEND makes each image (and its hash) distinct. */
export function pngImage(salt = randomBytes(8).toString("hex")): Buffer {
  const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");
  return Buffer.concat([png, Buffer.from(salt)]);
}

export const jpegImage = () => Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(64)]);
export const gifImage = () => Buffer.concat([Buffer.from("GIF89a"), randomBytes(32)]);
export const webpImage = () => Buffer.concat([Buffer.from("RIFF"), Buffer.from([0x20, 0, 0, 0]), Buffer.from("WEBPVP8 "), randomBytes(32)]);

export function artworkInput(extra: Record<string, unknown> = {}) {
  return {
    title: `Harbour at Dawn ${randomBytes(3).toString("hex")}`,
    year: 2021,
    medium: "Oil on canvas",
    dimensions: { width: 60, height: 80, unit: "cm" },
    description: "Morning light over the harbour.",
    price_usd: 12500.5,
    ...extra,
  };
}

/** JSON fields as multipart text parts (objects as JSON text); null leaves a field out. */
export function formFields(input: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(input)
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : String(v)]),
  );
}

/** POST /v1/artworks as multipart/form-data: `fields` as text parts, `image` as the file part. */
export async function postMultipart(
  baseUrl: string,
  token: string,
  fields: Record<string, string>,
  image?: { bytes: Buffer; filename?: string; type?: string },
  headers: Record<string, string> = {},
): Promise<TestResponse> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (image) form.append("image", new Blob([image.bytes], { type: image.type ?? "image/png" }), image.filename ?? "artwork.png");
  const res = await fetch(new URL("/v1/artworks", baseUrl), { method: "POST", headers: { authorization: `Bearer ${token}`, ...headers }, body: form });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, body, text };
}

/** Every file under `dir` (the storage), to prove a refused request stored nothing. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d)) {
      const full = path.join(d, entry);
      if (statSync(full).isDirectory()) walk(full);
      else out.push(full);
    }
  };
  walk(dir);
  return out.sort();
}

/** The token id the contract holds for `artworkId` (0 when none). */
export async function tokenIdOfArtwork(artworkId: string): Promise<bigint> {
  return publicClient().readContract({
    address: env().artCertificateAddress,
    abi: artCertificateAbi,
    functionName: "tokenIdOfArtwork",
    args: [keccak256(toBytes(artworkId))],
  });
}

/** The chain operation of an artwork's certification (its transaction, attempts, errors, confirmation): the chain phase's facts, which the artwork does not copy. */
export function certifyOperationOf(db: Kysely<Database>, artworkId: string): Promise<ChainOperation | undefined> {
  return db.selectFrom("chain_operations").selectAll().where("key", "=", `certify:${artworkId}`).executeTakeFirst();
}

export async function transactionCount(address: Address): Promise<number> {
  return publicClient().getTransactionCount({ address, blockTag: "pending" });
}

/** A local HTTP server whose answer a test changes as it goes (image_url targets; loopback is allowed outside production). */
export async function startImageServer(): Promise<{
  url: (path?: string) => string;
  respond: (handler: (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) => void) => void;
  requests: () => number;
  close: () => Promise<void>;
}> {
  const { createServer } = await import("node:http");
  let handler: (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) => void = (_req, res) => {
    res.writeHead(404).end();
  };
  let count = 0;
  const server = createServer((req, res) => {
    count++;
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: (p = "/image.png") => `http://127.0.0.1:${port}${p}`,
    respond: (h) => {
      handler = h;
    },
    requests: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A migrated platform database of this file's own with the job queue's schema, and a handle on it
 * (a small pool): for tests of the database pieces without an API. Dropped after the file.
 */
export function useQueueDatabase(): { readonly databaseUrl: string; readonly handle: DbHandle } {
  let database: Awaited<ReturnType<typeof createPlatformDatabase>> | undefined;
  let handle: DbHandle | undefined;
  beforeAll(async () => {
    database = await createPlatformDatabase();
    handle = createDbHandle(database.databaseUrl, 4);
    await migrateJobQueue(handle.pool);
  });
  afterAll(async () => {
    await handle?.db.destroy();
    await database?.drop().catch(() => {});
  });
  return {
    get databaseUrl() {
      return database!.databaseUrl;
    },
    get handle() {
      return handle!;
    },
  };
}

/** startImageServer for the calling test file (beforeAll), closed after it. */
export function useImageServer(): Awaited<ReturnType<typeof startImageServer>> {
  let server: Awaited<ReturnType<typeof startImageServer>> | undefined;
  beforeAll(async () => {
    server = await startImageServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  return standIn(() => server, "The image server");
}

/** Reads and waits of the artwork tests on platform `p`. */
export function artworkReads(p: ArtworkPlatform) {

  async function artworkRow(id: string) {
    return p.db.selectFrom("artworks").selectAll().where("id", "=", id).executeTakeFirst();
  }

  /** The artist's `artworks_count` as their public profile shows it. */
  async function artworksCount(userId: string): Promise<number> {
    const res = await p.api.request("GET", `/v1/users/${userId}`);
    expect(res.status).toBe(200);
    return res.body.artworks_count as number;
  }

  async function waitCertified(id: string) {
    return waitFor(
      async () => {
        const res = await p.api.request("GET", `/v1/artworks/${id}`);
        return res.body?.status === "certified" ? res.body : null;
      },
      { timeoutMs: 20_000, what: `certification of ${id}` },
    );
  }

  async function createCertified(artist: TestUser, extra: Record<string, unknown> = {}) {
    const res = await postMultipart(p.api.url, artist.token, formFields(artworkInput(extra)), { bytes: pngImage() });
    expect(res.status).toBe(201);
    return waitCertified(res.body.id);
  }

  return { artworkRow, artworksCount, waitCertified, createCertified };
}
