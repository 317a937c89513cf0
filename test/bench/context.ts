import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { english, generateMnemonic, privateKeyToAccount } from "viem/accounts";
import { HARDHAT_DEV_RELAYER_KEY, loadConfig } from "../../api/src/config.ts";
import { type RunningPlatform, startPlatform } from "../../api/src/platform.ts";
import { readChainIdentity, startHardhatNode } from "../../tools/stack/chain.ts";
import { deployExchange, deployPlatform, type ExchangeDeployment, type PlatformDeployment } from "../../tools/stack/deploy.ts";
import { type Indexer, startIndexer } from "../../tools/stack/indexer.ts";
import { ensureDatabase, startEmbeddedPostgres } from "../../tools/stack/postgres.ts";
import { binPath, childEnv, freePort, type ManagedProcess, spawnManaged, waitUntil } from "../../tools/stack/processes.ts";

export const BENCH_ADMIN_KEY = "sk_bench_admin_key_000000000000000000";

/** A throwaway platform for a benchmark suite: embedded Postgres, Hardhat node, deployed contracts. */
export interface BenchContext {
  dir: string;
  databaseUrl: string;
  rpcUrl: string;
  wsUrl: string;
  chainId: number;
  genesisHash: `0x${string}`;
  deployment: PlatformDeployment;
  /** ArtExchange and the MockStablecoin it is paid in, deployed after the platform. */
  exchange: ExchangeDeployment;
  /** The API's settings on this platform (bootstrap admin key BENCH_ADMIN_KEY; rate limits off), for startApi or API processes of a suite's own. */
  apiSettings(overrides?: Record<string, string>): Record<string, string>;
  /** Starts the API in this process with apiSettings(overrides); stopped by dispose(). */
  startApi(overrides?: Record<string, string>): Promise<RunningPlatform>;
  /**
   * The API as `npm start` runs it: an HTTP process (api/src/server.ts) and a worker process
   * (api/src/worker.ts), children of this one with apiSettings(overrides); stopped by dispose().
   * The bench process is then only the load generator.
   */
  startApiProcesses(overrides?: Record<string, string>): Promise<{ url: string; http: ManagedProcess; worker: ManagedProcess }>;
  /**
   * Starts Ponder on this chain and database (views schema `chain`); stopped by dispose(). `polling`:
   * new blocks by polling instead of the node's websocket, whose feed can go silent under a long
   * burst of blocks (the stack's watchdog restarts such an indexer; a bench has none).
   */
  startIndexer(options?: { polling?: boolean }): Promise<Indexer>;
  /** Runs `fn` at dispose time (reverse order of registration). */
  onDispose(fn: () => Promise<void>): void;
  dispose(): Promise<void>;
}

export async function createBenchContext(): Promise<BenchContext> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "art-bench-"));
  const disposers: (() => Promise<void>)[] = [];
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, "pg"), port: await freePort(), logFile: path.join(dir, "pg.log"), durable: false });
  disposers.push(() => pg.stop());
  const node = await startHardhatNode({ port: await freePort(), logFile: path.join(dir, "node.log") });
  disposers.push(() => node.stop());
  await ensureDatabase(pg.url("postgres"), "bench");
  const identity = await readChainIdentity(node.rpcUrl);
  const deployment = await deployPlatform({
    rpcUrl: node.rpcUrl,
    relayer: privateKeyToAccount(HARDHAT_DEV_RELAYER_KEY).address,
    sharesUri: "http://127.0.0.1/{id}.json",
    deploymentId: `bench-${Date.now()}`,
    logFile: path.join(dir, "deploy.log"),
  });
  const exchange = await deployExchange({
    rpcUrl: node.rpcUrl,
    certificate: deployment.artCertificate,
    orderSigner: privateKeyToAccount(HARDHAT_DEV_RELAYER_KEY).address,
    deploymentId: `${deployment.deploymentId}-exchange`,
    logFile: path.join(dir, "deploy.log"),
  });
  const databaseUrl = pg.url("bench");
  const custody = generateMnemonic(english);
  let indexerUrl: string | undefined;

  const ctx: BenchContext = {
    dir,
    databaseUrl,
    rpcUrl: node.rpcUrl,
    wsUrl: node.wsUrl,
    chainId: identity.chainId,
    genesisHash: identity.genesisHash,
    deployment,
    exchange,
    apiSettings(overrides = {}) {
      return {
        NODE_ENV: "development",
        PORT: "0",
        LOG_LEVEL: "silent",
        DATABASE_URL: databaseUrl,
        CHAIN_RPC_URL: node.rpcUrl,
        CHAIN_ID: String(identity.chainId),
        ART_CERTIFICATE_ADDRESS: deployment.artCertificate,
        ART_SHARES_ADDRESS: deployment.artShares,
        ART_MARKET_ADDRESS: deployment.artMarket,
        AUDIT_ANCHOR_ADDRESS: deployment.auditAnchor,
        ART_EXCHANGE_ADDRESS: exchange.artExchange,
        PAYMENT_TOKEN_ADDRESS: exchange.paymentToken,
        CONTRACTS_START_BLOCK: String(deployment.startBlock),
        CUSTODY_MNEMONIC: custody,
        BOOTSTRAP_ADMIN_API_KEY: BENCH_ADMIN_KEY,
        RATE_LIMIT_TOKEN_PER_MINUTE: "100000000",
        RATE_LIMIT_ANONYMOUS_PER_MINUTE: "100000000",
        ...(indexerUrl ? { INDEXER_URL: indexerUrl } : {}),
        ...overrides,
        // BENCH_API_<SETTING>=value sets the API's SETTING (BENCH_API_DATABASE_PREPARED_STATEMENTS=false).
        ...Object.fromEntries(
          Object.entries(process.env)
            .filter(([name, value]) => name.startsWith("BENCH_API_") && value !== undefined)
            .map(([name, value]) => [name.slice("BENCH_API_".length), value!]),
        ),
      };
    },
    async startApi(overrides = {}) {
      const api = await startPlatform(loadConfig(ctx.apiSettings(overrides)), { http: true, worker: true });
      disposers.push(() => api.close());
      return api;
    },
    async startApiProcesses(overrides = {}) {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const settings = ctx.apiSettings({ PORT: String(port), PUBLIC_BASE_URL: url, ...overrides });
      const http = await startApiProcess("http", "api/src/server.ts", settings, /^API listening on (\S+)$/m, path.join(dir, "http.log"));
      disposers.push(async () => void (await http.child.stop("SIGTERM", 15_000)));
      const worker = await startApiProcess("worker", "api/src/worker.ts", settings, /^Worker running/m, path.join(dir, "worker.log"));
      disposers.push(async () => void (await worker.child.stop("SIGTERM", 15_000)));
      return { url, http: http.child, worker: worker.child };
    },
    async startIndexer(options = {}) {
      const indexer = await startIndexer({
        databaseUrl,
        rpcUrl: node.rpcUrl,
        wsUrl: options.polling ? undefined : node.wsUrl,
        chainId: identity.chainId,
        genesisHash: identity.genesisHash,
        artCertificate: deployment.artCertificate,
        artShares: deployment.artShares,
        artMarket: deployment.artMarket,
        auditAnchor: deployment.auditAnchor,
        artExchange: exchange.artExchange,
        startBlock: deployment.startBlock,
        schema: "ponder_bench",
        viewsSchema: "chain",
        port: await freePort(),
        logFile: path.join(dir, "ponder.log"),
        readyTimeoutMs: 60_000,
      });
      indexerUrl = indexer.url;
      disposers.push(() => indexer.stop());
      return indexer;
    },
    onDispose(fn) {
      disposers.push(fn);
    },
    async dispose() {
      for (const fn of disposers.reverse()) await fn().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return ctx;
}

/** Starts `script` (api/src/server.ts or api/src/worker.ts) as a child on Node 22 + tsx; resolves once its log says it is ready. */
export async function startApiProcess(name: string, script: string, settings: Record<string, string>, ready: RegExp, logFile: string): Promise<{ child: ManagedProcess; match: RegExpExecArray }> {
  const child = spawnManaged({ name, command: binPath("node"), args: ["--import", "tsx", script], logFile, detached: false, env: childEnv(settings) });
  const match = await waitUntil(async () => ready.exec(readFileSync(logFile, "utf8")) ?? undefined, { timeoutMs: 90_000, intervalMs: 100, what: `${name} (log ${logFile})`, abort: child.exited });
  return { child, match };
}

/** JSON over HTTP for setting up benchmark data. */
export async function call(baseUrl: string, method: string, p: string, body?: unknown, token?: string): Promise<any> {
  const res = await fetch(new URL(p, baseUrl), {
    method,
    headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** The chain's head (on the local chain each transaction is a block of its own). */
export async function blockNumber(rpcUrl: string): Promise<number> {
  const res = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }) });
  return Number.parseInt(((await res.json()) as { result: string }).result, 16);
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export function table(headers: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [line(headers), line(headers.map((_, i) => (i === 0 ? "---" : "---:"))), ...rows.map(line)].join("\n");
}

/**
 * A local receiver of webhook deliveries, closed at dispose: when the first delivery of each key
 * (`keyOf` the parsed body) arrived (performance.now()), and a promise per key that resolves then.
 */
export async function webhookReceiver(ctx: Pick<BenchContext, "onDispose">, keyOf: (body: Record<string, unknown>) => string) {
  const delivered = new Map<string, number>();
  const waiting = new Map<string, () => void>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = performance.now();
      res.writeHead(200).end();
      const key = keyOf(JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>);
      if (!delivered.has(key)) delivered.set(key, at);
      waiting.get(key)?.();
    });
  });
  server.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  ctx.onDispose(() => new Promise((r) => server.close(() => r(undefined))));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    delivered,
    arrival: (key: string) => (delivered.has(key) ? Promise.resolve() : new Promise<void>((resolve) => waiting.set(key, resolve))),
  };
}
