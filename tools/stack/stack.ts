import { existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import path from "node:path";
import type { Kysely } from "kysely";
import { type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { readIndexerStatus } from "../../api/src/chain/indexer-views.ts";
import { createDb } from "../../api/src/db/connection.ts";
import type { Database } from "../../api/src/db/database.ts";
import { chainClient, chainReader, fundLocalAccount, type HardhatNode, hasCode, isLocalChainId, readChainIdentity, untypedRequest } from "./chain.ts";
import { chainJournalFile } from "./chain-journal.ts";
import {
  type ChainDeployment,
  chainMismatch,
  contractsIncomplete,
  contractsMismatch,
  databaseAheadOfChain,
  type ExchangeContracts,
  exchangeOf,
  type PlatformContracts,
  readChainDeployment,
  recordChainDeployment,
} from "../../api/src/chain/chain-identity.ts";
import { deployExchange, deployPlatform, localDeploymentId } from "./deploy.ts";
import { dropOldIndexerSchemas, dropPonderSyncCache, type Indexer, type IndexerOptions, startIndexer } from "./indexer.ts";
import { IndexerWatchdog } from "./indexer-watchdog.ts";
import { type LocalChain, restoreLocalChain, startLocalNode } from "./local-chain.ts";
import { type EmbeddedPostgres, ensureDatabase, startEmbeddedPostgres } from "./postgres.ts";
import { newSecret } from "../../api/src/lib/secrets.ts";
import { binPath, childEnv, type ManagedProcess, portInUse, spawnManaged, waitUntil } from "./processes.ts";
import {
  clearProcessRecords,
  localCustodyMnemonic,
  reapLeftoverProcesses,
  StartArchive,
  writeProcessRecords,
} from "./runtime-files.ts";
import { HARDHAT_ACCOUNT_0_KEY, type StackSettings } from "./settings.ts";

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

export interface RunningStack {
  settings: StackSettings;
  databaseUrl: string;
  postgres: EmbeddedPostgres | null;
  chain: {
    rpcUrl: string;
    wsUrl: string | null;
    chainId: number;
    genesisHash: Hex;
    node: HardhatNode | null;
    /** The local node's journal (DATA_DIR/chain/blocks.jsonl) and the blocks replayed from it at this start. */
    journal: { file: string; replayedBlocks: number } | null;
  };
  contracts: PlatformContracts & { startBlock: number; deployedNow: boolean };
  /** ArtExchange and its payment token; `deployedNow` also when added to a platform deployed before it. */
  exchange: ExchangeContracts & { deployedNow: boolean };
  relayer: Address;
  indexer: Indexer & { ready: boolean };
  api: StackApi | null;
  /** Where this start moved the earlier database and chain journal (DATA_DIR/archive/<time>), and why; null when it kept them. */
  archived: { dir: string; why: string } | null;
  logs: { postgres: string; hardhatNode: string; ignition: string; ponder: string; api: string; worker: string };
  /** How long each startup step took, in ms (Postgres and the Hardhat node start in parallel). */
  timings: Record<string, number>;
  /** The child processes, for crash monitoring. */
  children(): ManagedProcess[];
  /** Stops everything in reverse order: API, indexer (SIGINT), the chain recorder's last blocks, Hardhat node, Postgres. */
  stop(): Promise<void>;
}

/** A startup step that failed: names the step and the log to read. */
export class StackStartupError extends Error {
  override name = "StackStartupError";
  constructor(
    readonly step: string,
    readonly logFile: string | null,
    cause: unknown,
  ) {
    const message = cause instanceof Error ? cause.message : String(cause);
    super(`${step} failed: ${message}${logFile && !message.includes(logFile) ? ` (log: ${logFile})` : ""}`, { cause });
  }
}

export interface StartStackOptions {
  log?: (line: string) => void;
  /** Also start the API: its HTTP process and its worker process (default: everything but the API). */
  startApi?: boolean;
  /** Called as each child process starts (the stack's own records are written too). */
  onChild?: (child: ManagedProcess) => void;
  /** Seconds to wait for the indexer's backfill before starting the API anyway (default 60). */
  indexerReadyTimeoutMs?: number;
  /** Start with an empty database and a new chain, the earlier ones archived (`npm start -- --fresh`). */
  fresh?: boolean;
}

const ARCHIVES_KEPT = 5;

/**
 * Brings up the local platform: Postgres (embedded unless DATABASE_URL), a chain (a Hardhat node
 * unless CHAIN_RPC_URL, brought back from its journal), the contracts (Ignition, unless their
 * addresses are given or already on the chain), the indexer (Ponder) and the API. On failure, whatever started is stopped again and a StackStartupError
 * names the step.
 */
export async function startStack(settings: StackSettings, options: StartStackOptions = {}): Promise<RunningStack> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const logs = {
    postgres: path.join(settings.logDir, "postgres.log"),
    hardhatNode: path.join(settings.logDir, "hardhat-node.log"),
    ignition: path.join(settings.logDir, "ignition.log"),
    ponder: path.join(settings.logDir, "ponder.log"),
    api: path.join(settings.logDir, "api.log"),
    worker: path.join(settings.logDir, "worker.log"),
  };
  const cleanups: Array<() => Promise<void>> = [];
  const children = new Set<ManagedProcess>();
  // DATA_DIR/run/processes.json lists what runs, so a later start can stop the leftovers of a
  // stack that was killed outright.
  let ownsRecords = false;
  const track = (child: ManagedProcess, added: boolean) => {
    ownsRecords = true;
    if (added) {
      children.add(child);
      options.onChild?.(child);
    } else {
      children.delete(child);
    }
    writeProcessRecords(settings.dataDir, [
      { name: "stack", pid: process.pid, marker: "stack/start" },
      ...[...children].map((c) => ({ name: c.name, pid: c.pid, marker: markerOf(c.name) })),
    ]);
  };
  const timings: Record<string, number> = {};
  const step = async <T>(name: string, logFile: string | null, fn: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await fn();
    } catch (error) {
      throw error instanceof StackStartupError ? error : new StackStartupError(name, logFile, error);
    } finally {
      timings[name] = (timings[name] ?? 0) + Math.round(performance.now() - started);
    }
  };
  let db: Kysely<Database> | null = null;

  try {
    mkdirSync(settings.logDir, { recursive: true });
    await step("Checking for leftovers of an earlier run", null, () => reapLeftoverProcesses(settings.dataDir, log));
    // Each start writes fresh logs; the previous run's stay beside them (a crash report survives one restart).
    for (const file of Object.values(logs)) {
      if (existsSync(file)) renameSync(file, file.replace(/\.log$/, ".previous.log"));
    }

    await step("Checking the ports", null, async () => {
      const wanted: Array<[number, string]> = [
        ...(settings.databaseUrl ? [] : [[settings.embeddedPostgresPort, "EMBEDDED_POSTGRES_PORT"] as [number, string]]),
        ...(settings.chainRpcUrl ? [] : [[settings.hardhatNodePort, "HARDHAT_NODE_PORT"] as [number, string]]),
        [settings.ponderPort, "PONDER_PORT"],
        [settings.apiPort, "PORT"],
      ];
      const taken: string[] = [];
      for (const [port, name] of wanted) if (port !== 0 && (await portInUse(port))) taken.push(`${port} (${name})`);
      if (taken.length > 0) throw new Error(`port ${taken.join(", ")} already in use: stop what holds it or choose another port`);
    });

    const embeddedDir = path.join(settings.dataDir, "postgres");
    const archive = new StartArchive(settings.dataDir, ARCHIVES_KEPT, log);
    let archivedWhy: string | null = null;
    if (options.fresh) {
      const kept = [...(settings.databaseUrl ? [] : [embeddedDir]), ...(settings.chainRpcUrl ? [] : [path.dirname(chainJournalFile(settings.dataDir))])];
      const moved = kept.filter((dir) => existsSync(dir)).map((dir) => archive.moveAside(dir));
      if (moved.length > 0) {
        archivedWhy = "npm start -- --fresh";
        log(`Starting empty (--fresh): moved the earlier ${moved.map((dir) => (path.basename(dir) === "chain" ? "chain journal" : "database")).join(" and ")} aside to ${archive.path}.`);
      }
    }

    // Postgres and the chain come up in parallel; both take about a second.
    const startPostgres = () =>
      step("Starting the embedded Postgres", logs.postgres, async () => {
        const pg = await startEmbeddedPostgres({ dataDir: embeddedDir, port: settings.embeddedPostgresPort, logFile: logs.postgres });
        await ensureDatabase(pg.url("postgres"), settings.embeddedDatabaseName);
        return pg;
      });
    const postgresPromise = settings.databaseUrl ? Promise.resolve(null) : startPostgres();
    const localNode = { dataDir: settings.dataDir, port: settings.hardhatNodePort, logFile: logs.hardhatNode };
    const nodePromise = settings.chainRpcUrl
      ? Promise.resolve(null)
      : step("Starting the Hardhat node", logs.hardhatNode, () => startLocalNode(localNode));
    // The migrations are every module's (the module list imports the whole API, about a second): loaded while the children start.
    const migrations = Promise.all([import("../../api/src/db/migrate.ts"), import("../../api/src/modules/index.ts")]);
    migrations.catch(() => {});
    const [pgResult, nodeResult] = await Promise.allSettled([postgresPromise, nodePromise]);
    let postgres = pgResult.status === "fulfilled" ? pgResult.value : null;
    const startedNode = nodeResult.status === "fulfilled" ? nodeResult.value : null;
    let node = startedNode?.node ?? null;
    const stopPostgres = async () => {
      await postgres?.stop();
    };
    cleanups.push(stopPostgres);
    if (node) cleanups.push(() => node!.stop());
    if (pgResult.status === "rejected") throw pgResult.reason;
    if (nodeResult.status === "rejected") throw nodeResult.reason;
    if (postgres) track(postgres.process, true);
    if (node) track(node.process, true);

    let localChain: LocalChain | null = null;
    if (startedNode) {
      localChain = await step("Replaying the chain", logs.hardhatNode, () =>
        restoreLocalChain({
          ...localNode,
          ...startedNode,
          moveAside: (dir) => archive.moveAside(dir),
          onNodeReplaced: (stopped, started) => {
            track(stopped.process, false);
            track(started.process, true);
            node = started;
          },
          log,
        }),
      );
      // Stopped after the API and the indexer, before the node: the last blocks reach the journal.
      cleanups.push(() => localChain!.recorder.stop());
      if (localChain.discarded) archivedWhy = `the chain's journal did not replay: ${localChain.discarded}`;
    }

    let databaseUrl = settings.databaseUrl ?? postgres!.url(settings.embeddedDatabaseName);
    const rpcUrl = settings.chainRpcUrl ?? node!.rpcUrl;
    const wsUrl = settings.chainWsUrl ?? node?.wsUrl ?? null;
    const chainLog = node ? logs.hardhatNode : null;

    const identity = await step("Reading the chain", chainLog, async () => {
      const id = await readChainIdentity(rpcUrl);
      if (settings.chainId !== null && settings.chainId !== id.chainId) {
        throw new Error(`CHAIN_ID is ${settings.chainId} but ${rpcUrl} serves chain id ${id.chainId}`);
      }
      return id;
    });
    const local = isLocalChainId(identity.chainId) && !settings.production;
    if (!local && !settings.relayerPrivateKey) {
      throw new StackStartupError(
        "Reading the chain",
        null,
        new Error(`chain id ${identity.chainId} is not a local chain: set RELAYER_PRIVATE_KEY (the Hardhat dev key is public)`),
      );
    }

    const migrate = () =>
      step("Migrating the database", settings.databaseUrl ? null : logs.postgres, async () => {
        db = createDb(databaseUrl, 3);
        const [{ migrateToLatest }, { moduleMigrations }] = await migrations;
        await migrateToLatest(db, moduleMigrations);
        return db;
      });
    db = await migrate();

    // Never mix two chains' data in one database.
    let recorded = await readChainDeployment(db);
    const mismatch =
      recorded &&
      (chainMismatch(recorded, identity) ?? (settings.contracts ? contractsMismatch(recorded, { ...settings.contracts, ...settings.exchange }) : null));
    // A journal that lost its last blocks (a stack killed outright) gives back a shorter chain than the database saw.
    const lost =
      recorded && !mismatch && localChain && localChain.replayedBlocks > 0
        ? await databaseAheadOfChain(db, chainReader(rpcUrl), {
            block: (await readIndexerStatus({ db, viewsSchema: settings.viewsSchema, chainId: identity.chainId }).catch(() => null))?.indexedBlock ?? null,
          })
        : null;
    if (mismatch || lost) {
      if (settings.databaseUrl || settings.production) {
        throw new StackStartupError(
          "Checking the chain against the database",
          null,
          new Error(`refusing to start: ${mismatch ?? lost}. Point DATABASE_URL at this chain's database, or CHAIN_RPC_URL/the contract addresses at the database's chain`),
        );
      }
      log(mismatch ? `The local database belongs to another chain (${mismatch}).` : `The local database has seen more of the chain than its journal brought back (${lost}).`);
      await db.destroy();
      db = null;
      await postgres!.stop();
      track(postgres!.process, false);
      log(`Moved it aside to ${archive.moveAside(embeddedDir)} and starting with an empty database.`);
      archivedWhy ??= mismatch ? `the database belonged to another chain: ${mismatch}` : `the database had seen blocks the chain's journal lost: ${lost}`;
      postgres = await startPostgres();
      track(postgres!.process, true);
      databaseUrl = postgres!.url(settings.embeddedDatabaseName);
      db = await migrate();
      recorded = null;
    }

    const relayerKey = settings.relayerPrivateKey ?? HARDHAT_ACCOUNT_0_KEY;
    const relayer = privateKeyToAccount(relayerKey).address;

    const contracts = await step("Deploying the contracts", logs.ignition, async () => {
      if (settings.contracts) {
        if (!(await hasCode(rpcUrl, Object.values(settings.contracts)))) {
          throw new Error(
            `no contract code at ART_CERTIFICATE_ADDRESS/ART_SHARES_ADDRESS/ART_MARKET_ADDRESS/AUDIT_ANCHOR_ADDRESS on chain ${identity.chainId} (${rpcUrl})`,
          );
        }
        return { ...settings.contracts, startBlock: settings.startBlock ?? recorded?.startBlock ?? 0, deployedNow: false };
      }
      if (!local) {
        throw new Error(
          `chain id ${identity.chainId} is not a local chain: set ART_CERTIFICATE_ADDRESS, ART_SHARES_ADDRESS, ART_MARKET_ADDRESS and AUDIT_ANCHOR_ADDRESS (the stack deploys only to local chains)`,
        );
      }
      const { artCertificate, artShares, artMarket, auditAnchor } = recorded ?? {};
      if (artCertificate && artShares && artMarket && auditAnchor && (await hasCode(rpcUrl, [artCertificate, artShares, artMarket, auditAnchor]))) {
        return { artCertificate, artShares, artMarket, auditAnchor, startBlock: recorded?.startBlock ?? 0, deployedNow: false };
      }
      const base = settings.publicBaseUrl ?? `http://127.0.0.1:${settings.apiPort}`;
      log("Deploying ArtForwarder, ArtCertificate, ArtShares, ArtMarket and AuditAnchor with Hardhat Ignition...");
      const deployed = await deployPlatform({
        rpcUrl,
        relayer,
        sharesUri: `${base.replace(/\/$/, "")}/v1/fractional/metadata/{id}.json`,
        deploymentId: localDeploymentId(identity.chainId, identity.genesisHash),
        logFile: logs.ignition,
      });
      return {
        artCertificate: deployed.artCertificate,
        artShares: deployed.artShares,
        artMarket: deployed.artMarket,
        auditAnchor: deployed.auditAnchor,
        startBlock: deployed.startBlock,
        deployedNow: true,
      };
    });

    // Added to the platform, never instead of it: a chain deployed before the exchange keeps its data.
    const exchange = await step("Deploying the exchange", logs.ignition, async () => {
      if (settings.exchange) {
        if (!(await hasCode(rpcUrl, Object.values(settings.exchange)))) {
          throw new Error(`no contract code at ART_EXCHANGE_ADDRESS/PAYMENT_TOKEN_ADDRESS on chain ${identity.chainId} (${rpcUrl})`);
        }
        return { ...settings.exchange, deployedNow: false };
      }
      if (!local) {
        throw new Error(
          `chain id ${identity.chainId} is not a local chain: set ART_EXCHANGE_ADDRESS and PAYMENT_TOKEN_ADDRESS (npm run deploy:contracts deploys them; the indexer reads ArtExchange)`,
        );
      }
      const recordedExchange = recorded && !contracts.deployedNow ? exchangeOf(recorded) : null;
      if (recordedExchange && (await hasCode(rpcUrl, Object.values(recordedExchange)))) return { ...recordedExchange, deployedNow: false };
      log("Deploying MockStablecoin and ArtExchange with Hardhat Ignition...");
      const deployed = await deployExchange({
        rpcUrl,
        certificate: contracts.artCertificate,
        orderSigner: relayer,
        // Its own journal: the platform's deployment on this chain may be complete or long removed.
        deploymentId: `${localDeploymentId(identity.chainId, identity.genesisHash)}-exchange`,
        logFile: logs.ignition,
      });
      return { ...deployed, deployedNow: true };
    });

    if (local) await fundLocalAccount(rpcUrl, relayer, localChain ? (method, params) => localChain.recorder.recordCall(method, params) : undefined);

    const deployment: ChainDeployment = { ...identity, ...contracts, ...exchange };
    if (
      !recorded ||
      contractsMismatch(recorded, deployment) ||
      contractsIncomplete(recorded, deployment) ||
      recorded.startBlock !== contracts.startBlock
    ) {
      await step("Recording the chain deployment", null, async () => {
        // A database new to this chain may hold Ponder's RPC cache of another chain with the same id.
        if (!recorded) await dropPonderSyncCache(databaseUrl);
        await recordChainDeployment(db!, deployment);
      });
    }
    // The API creates the first admin with this key; the stack shows it once in its banner.
    const generatesAdminKey = !!options.startApi && !process.env.BOOTSTRAP_ADMIN_API_KEY?.trim();
    const hasUsers = (await db.selectFrom("users").select("id").limit(1).executeTakeFirst()) !== undefined;
    const bootstrapAdminKey = generatesAdminKey && !hasUsers ? newSecret("sk") : null;
    await db.destroy();
    db = null;

    log("Starting the indexer (Ponder)...");
    const indexerOptions: IndexerOptions = {
      databaseUrl,
      rpcUrl,
      wsUrl: wsUrl ?? undefined,
      chainId: identity.chainId,
      genesisHash: identity.genesisHash,
      artCertificate: contracts.artCertificate,
      artShares: contracts.artShares,
      artMarket: contracts.artMarket,
      auditAnchor: contracts.auditAnchor,
      artExchange: exchange.artExchange,
      startBlock: contracts.startBlock,
      viewsSchema: settings.viewsSchema,
      port: settings.ponderPort,
      logFile: logs.ponder,
      readyTimeoutMs: options.indexerReadyTimeoutMs ?? 60_000,
    };
    const indexer = await step("Starting the indexer", logs.ponder, () => startIndexer(indexerOptions));
    cleanups.push(() => indexer.stop());
    track(indexer.process, true);
    void whenReady(indexer, async () => {
      const dropped = await dropOldIndexerSchemas(databaseUrl, indexer.schema);
      if (dropped.length > 0) log(`Dropped the schemas of earlier indexer builds: ${dropped.join(", ")}`);
    }).catch((error: Error) => log(`Could not drop old indexer schemas: ${error.message}`));
    // Over a websocket Ponder learns of blocks as they are mined: the deployment's blocks came
    // before it subscribed, so one empty block brings its checkpoint to the head (local node only).
    if (node && indexer.ready) await untypedRequest(chainClient(rpcUrl))("evm_mine").catch(() => {});
    if (!indexer.ready) log(`The indexer is still backfilling; the API starts anyway (GET /readyz shows the lag). Log: ${logs.ponder}`);

    let api: StackApi | null = null;
    if (options.startApi) {
      const custodyMnemonic = settings.custodyMnemonic ?? localCustodyMnemonic(settings.dataDir);
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATABASE_URL: databaseUrl,
        CHAIN_RPC_URL: rpcUrl,
        CHAIN_ID: String(identity.chainId),
        RELAYER_PRIVATE_KEY: relayerKey,
        CUSTODY_MNEMONIC: custodyMnemonic,
        ART_CERTIFICATE_ADDRESS: contracts.artCertificate,
        ART_SHARES_ADDRESS: contracts.artShares,
        ART_MARKET_ADDRESS: contracts.artMarket,
        AUDIT_ANCHOR_ADDRESS: contracts.auditAnchor,
        ART_EXCHANGE_ADDRESS: exchange.artExchange,
        PAYMENT_TOKEN_ADDRESS: exchange.paymentToken,
        CONTRACTS_START_BLOCK: String(contracts.startBlock),
        INDEXER_URL: indexer.url,
        INDEXER_VIEWS_SCHEMA: settings.viewsSchema,
        // Artwork images live beside the embedded database unless STORAGE_DIR says otherwise.
        STORAGE_DIR: process.env.STORAGE_DIR || path.join(settings.dataDir, "storage"),
        PORT: String(settings.apiPort),
        ...(bootstrapAdminKey ? { BOOTSTRAP_ADMIN_API_KEY: bootstrapAdminKey } : {}),
      };
      // The HTTP process and the worker start together (each loads the whole API, about a second
      // and a half of CPU); stopped in reverse, the worker first.
      const [httpResult, workerResult] = await Promise.allSettled([
        step("Starting the API", logs.api, () => startApiProcess("api", "api/src/server.ts", /^API listening on (\S+)$/m, env, logs.api)),
        step("Starting the worker", logs.worker, () => startApiProcess("worker", "api/src/worker.ts", /^Worker running/m, env, logs.worker)),
      ]);
      for (const result of [httpResult, workerResult]) {
        if (result.status !== "fulfilled") continue;
        const started = result.value.process;
        cleanups.push(() => started.stop("SIGTERM", 15_000).then(() => undefined));
        track(started, true);
      }
      if (httpResult.status === "rejected") throw httpResult.reason;
      if (workerResult.status === "rejected") throw workerResult.reason;
      const [http, worker] = [httpResult.value, workerResult.value];
      api = { url: http.ready[1]!, bootstrapAdminKey, adminKeyKept: generatesAdminKey && hasUsers, http: http.process, worker: worker.process };
    }

    // Ponder's websocket feed can stay open and deliver nothing while its /ready answers 200: the
    // watchdog compares its block with the chain head and replaces a stalled indexer.
    const chainForWatchdog = chainClient(rpcUrl);
    const watchdog = new IndexerWatchdog({
      maxLagBlocks: settings.indexerMaxLagBlocks,
      stallMs: settings.indexerStallTimeoutMs,
      probe: async () => {
        const head = await chainForWatchdog.getBlockNumber({ cacheTime: 0 }).catch(() => null);
        if (head === null) return null; // the chain's own trouble is not the indexer's
        const status = await readIndexerStatus({ url: indexer.url, chainId: identity.chainId }).catch(() => null);
        return { indexedBlock: status?.indexedBlock ?? null, headBlock: head };
      },
      restart: async () => {
        // On polling from then on: a websocket that went silent once is not trusted again (polling
        // costs ~50 ms more per block on a local chain and cannot go silent without erroring).
        const wasWebsocket = indexerOptions.wsUrl !== undefined;
        indexerOptions.wsUrl = undefined;
        log(`Restarting the indexer${wasWebsocket ? " on polling (its websocket feed stopped delivering blocks)" : ""}; log: ${logs.ponder}`);
        const stalled = indexer.process;
        await indexer.stop();
        track(stalled, false);
        const restarted = await startIndexer(indexerOptions);
        Object.assign(indexer, restarted);
        track(restarted.process, true);
        log(`The indexer runs again (pid ${restarted.process.pid}, polling${restarted.ready ? "" : ", still catching up"}).`);
      },
      log,
    });
    watchdog.start();
    cleanups.push(() => watchdog.stop());

    let stopping: Promise<void> | null = null;
    return {
      settings,
      databaseUrl,
      postgres,
      chain: {
        rpcUrl,
        wsUrl,
        chainId: identity.chainId,
        genesisHash: identity.genesisHash,
        node,
        journal: localChain ? { file: chainJournalFile(settings.dataDir), replayedBlocks: localChain.replayedBlocks } : null,
      },
      contracts,
      exchange,
      relayer,
      indexer,
      api,
      archived: archive.path ? { dir: archive.path, why: archivedWhy ?? "" } : null,
      logs,
      timings,
      children: () => [...children],
      stop() {
        stopping ??= runCleanups(cleanups).then(() => clearProcessRecords(settings.dataDir));
        return stopping;
      },
    };
  } catch (error) {
    await (db as Kysely<Database> | null)?.destroy().catch(() => {});
    await runCleanups(cleanups);
    if (ownsRecords) clearProcessRecords(settings.dataDir);
    throw error;
  }
}

async function runCleanups(cleanups: Array<() => Promise<void>>): Promise<void> {
  for (const cleanup of cleanups.reverse()) {
    await cleanup().catch(() => {});
  }
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

function markerOf(childName: string): string {
  if (childName === "api") return "api/src/server.ts";
  if (childName === "worker") return "api/src/worker.ts";
  if (childName.startsWith("indexer")) return "ponder";
  if (childName.startsWith("hardhat")) return "hardhat";
  return "postgres";
}

async function whenReady(indexer: Indexer & { ready: boolean }, then: () => Promise<void>): Promise<void> {
  while (!indexer.ready && !indexer.process.stopping) {
    await new Promise((r) => setTimeout(r, 2_000));
    indexer.ready = await readIndexerStatus({ url: indexer.url }).then((s) => s.ready, () => false);
  }
  if (indexer.ready) await then();
}
