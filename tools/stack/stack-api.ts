import { existsSync, readFileSync, renameSync } from "node:fs";
import path from "node:path";
import type { ExchangeContracts, PlatformContracts } from "../../api/src/chain/chain-identity.ts";
import { binPath, childEnv, type ManagedProcess, spawnManaged, waitUntil } from "./processes.ts";
import { localCustodyMnemonic } from "./runtime-files.ts";
import type { StackSettings } from "./settings.ts";
import type { StackLogs, StackRun } from "./stack-run.ts";

/** The API's two processes as the stack runs them: api/src/server.ts (HTTP) and api/src/worker.ts. */
export interface StackApi {
  url: string;
  /** The admin API key the stack generated for an empty database (shown once), else null. */
  bootstrapAdminKey: string | null;
  /** The database's users came from an earlier start, and with them its admin's key (not shown again). */
  adminKeyKept: boolean;
  http: ManagedProcess;
  worker: ManagedProcess;
}

/** What the API is started against: the stack's database, chain, contracts and indexer. */
export interface ApiTarget {
  settings: StackSettings;
  databaseUrl: string;
  rpcUrl: string;
  chainId: number;
  relayerKey: string;
  contracts: PlatformContracts & { startBlock: number };
  exchange: ExchangeContracts;
  indexerUrl: string;
  /** The first admin's key, for an empty database (the API creates the admin with it). */
  bootstrapAdminKey: string | null;
}

/**
 * Starts the HTTP process and the worker together (each loads the whole API, about a second and a
 * half of CPU); each is stopped with the stack, in reverse, the worker first.
 */
export async function startApi(run: StackRun, logs: StackLogs, target: ApiTarget): Promise<Pick<StackApi, "url" | "http" | "worker">> {
  const env = apiEnvironment(target);
  const [httpResult, workerResult] = await Promise.allSettled([
    run.step("Starting the API", logs.api, () => startApiProcess("api", "api/src/server.ts", /^API listening on (\S+)$/m, env, logs.api)),
    run.step("Starting the worker", logs.worker, () => startApiProcess("worker", "api/src/worker.ts", /^Worker running/m, env, logs.worker)),
  ]);
  for (const result of [httpResult, workerResult]) {
    if (result.status !== "fulfilled") continue;
    const started = result.value.process;
    run.onStop(() => started.stop("SIGTERM", 15_000).then(() => undefined));
    run.track(started, true);
  }
  if (httpResult.status === "rejected") throw httpResult.reason;
  if (workerResult.status === "rejected") throw workerResult.reason;
  return { url: httpResult.value.ready[1]!, http: httpResult.value.process, worker: workerResult.value.process };
}

function apiEnvironment(target: ApiTarget): NodeJS.ProcessEnv {
  const { settings, contracts, exchange, bootstrapAdminKey } = target;
  return {
    ...process.env,
    DATABASE_URL: target.databaseUrl,
    CHAIN_RPC_URL: target.rpcUrl,
    CHAIN_ID: String(target.chainId),
    RELAYER_PRIVATE_KEY: target.relayerKey,
    CUSTODY_MNEMONIC: settings.custodyMnemonic ?? localCustodyMnemonic(settings.dataDir),
    ART_CERTIFICATE_ADDRESS: contracts.artCertificate,
    ART_SHARES_ADDRESS: contracts.artShares,
    ART_MARKET_ADDRESS: contracts.artMarket,
    AUDIT_ANCHOR_ADDRESS: contracts.auditAnchor,
    ART_EXCHANGE_ADDRESS: exchange.artExchange,
    PAYMENT_TOKEN_ADDRESS: exchange.paymentToken,
    CONTRACTS_START_BLOCK: String(contracts.startBlock),
    INDEXER_URL: target.indexerUrl,
    INDEXER_VIEWS_SCHEMA: settings.viewsSchema,
    // Artwork images live beside the embedded database unless STORAGE_DIR says otherwise.
    STORAGE_DIR: process.env.STORAGE_DIR || path.join(settings.dataDir, "storage"),
    PORT: String(settings.apiPort),
    ...(bootstrapAdminKey ? { BOOTSTRAP_ADMIN_API_KEY: bootstrapAdminKey } : {}),
  };
}

/** One of the API's processes on the repository's Node 22 (one PID: node --import tsx), once it says it runs. */
async function startApiProcess(name: string, script: string, readyLine: RegExp, env: NodeJS.ProcessEnv, logFile: string) {
  if (existsSync(logFile)) renameSync(logFile, logFile.replace(/\.log$/, ".previous.log"));
  const child = spawnManaged({ name, command: binPath("node"), args: ["--import", "tsx", script], logFile, env: childEnv(env) });
  try {
    const ready = await waitUntil(async () => readyLine.exec(readFileSync(logFile, "utf8")) ?? undefined, {
      timeoutMs: 60_000,
      intervalMs: 100,
      what: `${name} (${script})`,
      abort: child.exited,
    });
    return { process: child, ready };
  } catch (error) {
    await child.stop("SIGTERM", 5_000);
    const tail = readFileSync(logFile, "utf8").trim().split("\n").slice(-5).join("\n");
    throw new Error(`${error instanceof Error ? error.message : String(error)}${tail ? `:\n${tail}` : ""}`);
  }
}
