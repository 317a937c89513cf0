import { existsSync, mkdirSync, renameSync } from "node:fs";
import path from "node:path";
import type { Kysely } from "kysely";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type ChainDeployment, type ExchangeContracts, type PlatformContracts, readChainDeployment, recordChainDeployment } from "../../api/src/chain/chain-identity.ts";
import { createDb } from "../../api/src/db/connection.ts";
import type { Database } from "../../api/src/db/database.ts";
import { fundLocalAccount, type HardhatNode, isLocalChainId, readChainIdentity } from "./chain.ts";
import { chainJournalFile } from "./chain-journal.ts";
import { dropPonderSyncCache, type Indexer, type IndexerOptions } from "./indexer.ts";
import { type JournaledRpc, startJournaledRpc } from "./journaled-rpc.ts";
import { type LocalChain, restoreLocalChain, startLocalNode } from "./local-chain.ts";
import { type EmbeddedPostgres, ensureDatabase, startEmbeddedPostgres } from "./postgres.ts";
import { freePort, type ManagedProcess, portInUse } from "./processes.ts";
import { reapLeftoverProcesses, StartArchive } from "./runtime-files.ts";
import { HARDHAT_ACCOUNT_0_KEY, type StackSettings } from "./settings.ts";
import { type StackApi, startApi } from "./stack-api.ts";
import { exchangeContracts, platformContracts } from "./stack-contracts.ts";
import { chainConflict, deploymentChanged, firstAdminKey } from "./stack-database.ts";
import { startStackIndexer, watchIndexer } from "./stack-indexer.ts";
import { type StackLogs, stackLogs, StackRun, StackStartupError } from "./stack-run.ts";

export type { StackApi } from "./stack-api.ts";
export { StackStartupError } from "./stack-run.ts";

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
  logs: StackLogs;
  /** How long each startup step took, in ms (Postgres and the Hardhat node start in parallel). */
  timings: Record<string, number>;
  /** The child processes, for crash monitoring. */
  children(): ManagedProcess[];
  /** Stops everything in reverse order: API, indexer (SIGINT), the chain recorder's last blocks, Hardhat node, Postgres. */
  stop(): Promise<void>;
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
  const logs = stackLogs(settings.logDir);
  const run = new StackRun(settings.dataDir, options.onChild);
  let db: Kysely<Database> | null = null;

  try {
    mkdirSync(settings.logDir, { recursive: true });
    await run.step("Checking for leftovers of an earlier run", null, () => reapLeftoverProcesses(settings.dataDir, log));
    // Each start writes fresh logs; the previous run's stay beside them (a crash report survives one restart).
    for (const file of Object.values(logs)) {
      if (existsSync(file)) renameSync(file, file.replace(/\.log$/, ".previous.log"));
    }

    await run.step("Checking the ports", null, async () => {
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
      run.step("Starting the embedded Postgres", logs.postgres, async () => {
        const pg = await startEmbeddedPostgres({ dataDir: embeddedDir, port: settings.embeddedPostgresPort, logFile: logs.postgres });
        await ensureDatabase(pg.url("postgres"), settings.embeddedDatabaseName);
        return pg;
      });
    const postgresPromise = settings.databaseUrl ? Promise.resolve(null) : startPostgres();
    // The node itself listens on a port of its own: HARDHAT_NODE_PORT is its journaled RPC (below).
    const localNode = { dataDir: settings.dataDir, port: settings.chainRpcUrl ? 0 : await freePort(), logFile: logs.hardhatNode };
    const nodePromise = settings.chainRpcUrl
      ? Promise.resolve(null)
      : run.step("Starting the Hardhat node", logs.hardhatNode, () => startLocalNode(localNode));
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
    run.onStop(stopPostgres);
    if (node) run.onStop(() => node!.stop());
    if (pgResult.status === "rejected") throw pgResult.reason;
    if (nodeResult.status === "rejected") throw nodeResult.reason;
    if (postgres) run.track(postgres.process, true);
    if (node) run.track(node.process, true);

    let localChain: LocalChain | null = null;
    let journaledRpc: JournaledRpc | null = null;
    if (startedNode) {
      localChain = await run.step("Replaying the chain", logs.hardhatNode, () =>
        restoreLocalChain({
          ...localNode,
          ...startedNode,
          moveAside: (dir) => archive.moveAside(dir),
          onNodeReplaced: (stopped, started) => {
            run.track(stopped.process, false);
            run.track(started.process, true);
            node = started;
          },
          log,
        }),
      );
      // Stopped after the API and the indexer, before the node: the last blocks reach the journal.
      run.onStop(() => localChain!.recorder.stop());
      if (localChain.discarded) archivedWhy = `the chain's journal did not replay: ${localChain.discarded}`;
      // Everyone reaches the node through it: no answer tells of a block the journal does not hold.
      const recorder = localChain.recorder;
      journaledRpc = await run.step("Starting the chain RPC", logs.hardhatNode, () =>
        startJournaledRpc({ nodeUrl: node!.rpcUrl, port: settings.hardhatNodePort, recorder, log }),
      );
      run.onStop(() => journaledRpc!.stop());
    }

    let databaseUrl = settings.databaseUrl ?? postgres!.url(settings.embeddedDatabaseName);
    const rpcUrl = settings.chainRpcUrl ?? journaledRpc!.url;
    const wsUrl = settings.chainWsUrl ?? journaledRpc?.wsUrl ?? null;
    const chainLog = node ? logs.hardhatNode : null;

    const identity = await run.step("Reading the chain", chainLog, async () => {
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
      run.step("Migrating the database", settings.databaseUrl ? null : logs.postgres, async () => {
        db = createDb(databaseUrl, 3);
        const [{ migrateToLatest }, { moduleMigrations }] = await migrations;
        await migrateToLatest(db, moduleMigrations);
        return db;
      });
    db = await migrate();

    let recorded = await readChainDeployment(db);
    const conflict = await chainConflict(db, recorded, { settings, identity, rpcUrl, localChain });
    if (conflict) {
      if (settings.databaseUrl || settings.production) {
        throw new StackStartupError(
          "Checking the chain against the database",
          null,
          new Error(`refusing to start: ${conflict.detail}. Point DATABASE_URL at this chain's database, or CHAIN_RPC_URL/the contract addresses at the database's chain`),
        );
      }
      log(conflict.kind === "mismatch" ? `The local database belongs to another chain (${conflict.detail}).` : `The local database has seen more of the chain than its journal brought back (${conflict.detail}).`);
      await db.destroy();
      db = null;
      await postgres!.stop();
      run.track(postgres!.process, false);
      log(`Moved it aside to ${archive.moveAside(embeddedDir)} and starting with an empty database.`);
      archivedWhy ??= conflict.kind === "mismatch" ? `the database belonged to another chain: ${conflict.detail}` : `the database had seen blocks the chain's journal lost: ${conflict.detail}`;
      postgres = await startPostgres();
      run.track(postgres!.process, true);
      databaseUrl = postgres!.url(settings.embeddedDatabaseName);
      db = await migrate();
      recorded = null;
    }

    const relayerKey = settings.relayerPrivateKey ?? HARDHAT_ACCOUNT_0_KEY;
    const relayer = privateKeyToAccount(relayerKey).address;

    const contractsContext = { settings, rpcUrl, identity, local, recorded, relayer, logFile: logs.ignition, log };
    const contracts = await run.step("Deploying the contracts", logs.ignition, () => platformContracts(contractsContext));
    const exchange = await run.step("Deploying the exchange", logs.ignition, () => exchangeContracts(contractsContext, contracts));

    if (local) await fundLocalAccount(rpcUrl, relayer, localChain ? (method, params) => localChain.recorder.recordCall(method, params) : undefined);

    const deployment: ChainDeployment = { ...identity, ...contracts, ...exchange };
    if (deploymentChanged(recorded, deployment)) {
      await run.step("Recording the chain deployment", null, async () => {
        // A database new to this chain may hold Ponder's RPC cache of another chain with the same id.
        if (!recorded) await dropPonderSyncCache(databaseUrl);
        await recordChainDeployment(db!, deployment);
      });
    }
    const adminKey = await firstAdminKey(db, !!options.startApi);
    await db.destroy();
    db = null;

    const indexerOptions: IndexerOptions = {
      databaseUrl,
      rpcUrl,
      // The local node's own websocket feed is not used: after half an hour idle it fell silent while
      // its socket stayed open (the watchdog then needed its stall timeout to notice). Polling every
      // 100 ms cannot go silent without erroring; an explicit CHAIN_WS_URL (a remote chain) is used.
      wsUrl: settings.chainWsUrl ?? undefined,
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
    const indexer = await startStackIndexer(run, indexerOptions, { localNode: node !== null, log });

    let api: StackApi | null = null;
    if (options.startApi) {
      const started = await startApi(run, logs, {
        settings,
        databaseUrl,
        rpcUrl,
        chainId: identity.chainId,
        relayerKey,
        contracts,
        exchange,
        indexerUrl: indexer.url,
        bootstrapAdminKey: adminKey.key,
      });
      api = { ...started, bootstrapAdminKey: adminKey.key, adminKeyKept: adminKey.kept };
    }
    watchIndexer(run, indexer, indexerOptions, { settings, log });

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
      timings: run.timings,
      children: () => run.children(),
      stop: () => run.stop(),
    };
  } catch (error) {
    await (db as Kysely<Database> | null)?.destroy().catch(() => {});
    await run.abort();
    throw error;
  }
}
