import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { readIndexerStatus } from "../../api/src/chain/indexer-views.ts";
import { withClient } from "./postgres.ts";
import { binPath, childEnv, type ManagedProcess, portInUse, repoRoot, spawnManaged, waitUntil } from "./processes.ts";

const INDEXER_ROOT = path.join(repoRoot, "indexer");
/** Files besides indexer/ that change what the indexer writes. */
const INDEXER_INPUTS = [
  "contracts/abi/ArtCertificate.ts",
  "contracts/abi/ArtShares.ts",
  "contracts/abi/ArtMarket.ts",
  "contracts/abi/AuditAnchor.ts",
  "contracts/abi/ArtExchange.ts",
  "node_modules/ponder/package.json",
];
const BUILD_SCHEMA_PREFIX = "indexer_";

export interface IndexerTarget {
  databaseUrl: string;
  rpcUrl: string;
  /** Websocket endpoint for new heads (lower lag); omitted, Ponder polls every INDEXER_POLLING_INTERVAL_MS. */
  wsUrl?: string | undefined;
  chainId: number;
  genesisHash: string;
  artCertificate: string;
  artShares: string;
  artMarket: string;
  auditAnchor: string;
  artExchange: string;
  startBlock: number;
}

/**
 * Ponder refuses to reuse a schema for a different build, so every build gets its own schema,
 * named after a hash of the indexer's source and of the chain and contracts it reads; readers
 * see the current build's tables through the stable views schema.
 */
export function indexerSchemaName(target: Omit<IndexerTarget, "databaseUrl" | "rpcUrl" | "wsUrl">): string {
  const hash = createHash("sha256");
  for (const file of [...listFiles(INDEXER_ROOT), ...INDEXER_INPUTS.map((f) => path.join(repoRoot, f))]) {
    hash.update(path.relative(repoRoot, file)).update("\0").update(readFileSync(file)).update("\0");
  }
  hash.update(
    JSON.stringify([
      target.chainId,
      target.genesisHash.toLowerCase(),
      target.artCertificate.toLowerCase(),
      target.artShares.toLowerCase(),
      target.artMarket.toLowerCase(),
      target.auditAnchor.toLowerCase(),
      target.artExchange.toLowerCase(),
      target.startBlock,
    ]),
  );
  return `${BUILD_SCHEMA_PREFIX}${hash.digest("hex").slice(0, 16)}`;
}

function listFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    if (entry === "node_modules" || entry.startsWith(".") || entry === "generated") continue;
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) files.push(...listFiles(full));
    else if (/\.(ts|mts|js|mjs|json)$/.test(entry) && entry !== "ponder-env.d.ts") files.push(full);
  }
  return files;
}

export interface Indexer {
  /** Ponder's HTTP server: /health, /ready, /status, /metrics. */
  url: string;
  schema: string;
  viewsSchema: string;
  process: ManagedProcess;
  /** SIGINT (Ponder releases its schema lock; after SIGTERM the next start waits 15–25 s). */
  stop(): Promise<void>;
}

export interface IndexerOptions extends IndexerTarget {
  schema?: string;
  viewsSchema: string;
  port: number;
  logFile: string;
  /** How long to wait for the backfill to finish (GET /ready); past it the indexer keeps going. */
  readyTimeoutMs?: number;
  pollingIntervalMs?: number;
  detached?: boolean;
}

/** Starts `ponder start` for `target` and waits for its HTTP server, then (up to readyTimeoutMs) /ready. */
export async function startIndexer(options: IndexerOptions): Promise<Indexer & { ready: boolean }> {
  const schema = options.schema ?? indexerSchemaName(options);
  if (await portInUse(options.port)) {
    throw new Error(`Port ${options.port} is taken, so the indexer cannot start (set PONDER_PORT)`);
  }
  const child = spawnManaged({
    name: "indexer (ponder)",
    command: binPath("ponder"),
    args: [
      "start",
      "--root", INDEXER_ROOT,
      "--schema", schema,
      "--views-schema", options.viewsSchema,
      "--hostname", "127.0.0.1",
      "--port", String(options.port),
    ],
    logFile: options.logFile,
    env: childEnv({
      DATABASE_URL: options.databaseUrl,
      DATABASE_PRIVATE_URL: undefined,
      DATABASE_SCHEMA: undefined,
      DATABASE_VIEWS_SCHEMA: undefined,
      CHAIN_ID: String(options.chainId),
      CHAIN_RPC_URL: options.rpcUrl,
      CHAIN_WS_URL: options.wsUrl,
      ART_CERTIFICATE_ADDRESS: options.artCertificate,
      ART_SHARES_ADDRESS: options.artShares,
      ART_MARKET_ADDRESS: options.artMarket,
      AUDIT_ANCHOR_ADDRESS: options.auditAnchor,
      ART_EXCHANGE_ADDRESS: options.artExchange,
      CONTRACTS_START_BLOCK: String(options.startBlock),
      INDEXER_POLLING_INTERVAL_MS: options.pollingIntervalMs?.toString(),
      // Ponder prefers $PORT over --port.
      PORT: String(options.port),
      NO_COLOR: "1",
    }),
    detached: options.detached,
  });
  const url = `http://127.0.0.1:${options.port}`;
  const indexer: Indexer = {
    url,
    schema,
    viewsSchema: options.viewsSchema,
    process: child,
    async stop() {
      await child.stop("SIGINT", 20_000);
    },
  };
  try {
    await waitUntil(async () => (await fetch(`${url}/health`)).ok, {
      timeoutMs: 90_000,
      what: `Indexer HTTP server on port ${options.port}`,
      abort: child.exited,
    });
  } catch (error) {
    await indexer.stop();
    throw new Error(`${(error as Error).message}; see ${options.logFile}`);
  }
  let exited = false;
  void child.exited.then(() => {
    exited = true;
  });
  const ready = await waitUntil(async () => (await readIndexerStatus({ url })).ready, {
    timeoutMs: options.readyTimeoutMs ?? 60_000,
    intervalMs: 100,
    what: "Indexer backfill",
    abort: child.exited,
  }).then(
    () => true,
    () => {
      if (exited) throw new Error(`The indexer exited during its backfill; see ${options.logFile}`);
      return false;
    },
  );
  return { ...indexer, ready };
}

/**
 * Drops the schemas of earlier indexer builds. Call it once the current build is ready: until then
 * the views schema still points at the previous build, and dropping that would drop the views.
 */
export async function dropOldIndexerSchemas(databaseUrl: string, current: string): Promise<string[]> {
  return withClient(databaseUrl, async (client) => {
    const { rows } = await client.query<{ nspname: string }>(
      "select nspname from pg_namespace where nspname like $1 and nspname <> $2",
      [`${BUILD_SCHEMA_PREFIX}%`, current],
    );
    for (const { nspname } of rows) {
      await client.query(`drop schema ${client.escapeIdentifier(nspname)} cascade`);
    }
    return rows.map((r) => r.nspname);
  });
}

/** Ponder caches RPC results per chain id in `ponder_sync`: stale once a local chain is reset. */
export async function dropPonderSyncCache(databaseUrl: string): Promise<void> {
  await withClient(databaseUrl, (client) => client.query("drop schema if exists ponder_sync cascade"));
}
