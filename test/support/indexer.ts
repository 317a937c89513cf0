import { randomBytes } from "node:crypto";
import path from "node:path";
import { type Indexer, type IndexerOptions, type IndexerTarget, startIndexer } from "../../tools/stack/indexer.ts";
import { type ExitStatus, freePort } from "../../tools/stack/processes.ts";
import { testEnvironment } from "./environment.ts";

export interface TestIndexer {
  /** Ponder's HTTP server (/ready, /status): the API's INDEXER_URL. */
  url: string;
  /** The build schema Ponder writes. */
  schema: string;
  /** The views schema this indexer publishes (the API's INDEXER_VIEWS_SCHEMA); unique per indexer. */
  viewsSchema: string;
  logFile: string;
  databaseUrl: string;
  /** Ends the Ponder process with `signal` (SIGKILL: a crash, its schema lock left behind) and waits for its exit. */
  kill(signal: NodeJS.Signals): Promise<ExitStatus>;
  /** Starts Ponder again after kill(), on the same schemas, port and log; resolves once it is ready (caught up). */
  restart(options?: { readyTimeoutMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

const running = new Set<Indexer>();

/**
 * A Ponder process indexing the run's chain into the run's database, under schemas of its own so
 * that several test files can each run one. Returns once its backfill is done (/ready). It is
 * stopped (SIGINT) after the test file (setup-file.ts), or earlier with stop().
 */
export async function startIndexerForTest(
  options: {
    pollingIntervalMs?: number;
    /**
     * New heads over the node's websocket, or polling it every 100 ms (the default; Ponder's least). A websocket
     * subscription can fall silent while the node mines bursts of blocks for three files at once (the
     * stack's watchdog then restarts its indexer on polling; a test's has none, and stalled): a file
     * that tests the websocket path says so, or names a websocket in `target`.
     */
    websocket?: boolean;
    /** Another database or chain than the run's (a chain of its own must come with a database of its own). */
    target?: Partial<IndexerTarget>;
  } = {},
): Promise<TestIndexer> {
  const env = testEnvironment();
  const id = randomBytes(4).toString("hex");
  const logFile = path.join(env.tempDir, `ponder-${id}.log`);
  const target: IndexerTarget = {
    databaseUrl: env.databaseUrl,
    rpcUrl: env.rpcUrl,
    wsUrl: env.wsUrl,
    chainId: env.chainId,
    genesisHash: env.genesisHash,
    artCertificate: env.artCertificateAddress,
    artShares: env.artSharesAddress,
    artMarket: env.artMarketAddress,
    auditAnchor: env.auditAnchorAddress,
    artExchange: env.artExchangeAddress,
    startBlock: env.startBlock,
    ...options.target,
  };
  const launchOptions: IndexerOptions = {
    ...target,
    wsUrl: options.websocket === true || options.target?.wsUrl !== undefined ? target.wsUrl : undefined,
    schema: `ponder_test_${id}`,
    viewsSchema: `chain_test_${id}`,
    port: await freePort(),
    logFile,
    readyTimeoutMs: 60_000,
    pollingIntervalMs: options.pollingIntervalMs,
    detached: false,
  };
  let indexer = await launch(launchOptions);
  return {
    url: indexer.url,
    schema: indexer.schema,
    viewsSchema: indexer.viewsSchema,
    logFile,
    databaseUrl: target.databaseUrl,
    kill: async (signal) => {
      running.delete(indexer);
      return indexer.process.stop(signal);
    },
    restart: async ({ readyTimeoutMs } = {}) => {
      indexer = await launch({ ...launchOptions, readyTimeoutMs: readyTimeoutMs ?? launchOptions.readyTimeoutMs });
    },
    stop: () => stop(indexer),
  };
}

/** Starts Ponder and waits for its backfill (/ready); stopped with the test file unless stopped earlier. */
async function launch(options: IndexerOptions): Promise<Indexer> {
  const indexer = await startIndexer(options);
  running.add(indexer);
  if (!indexer.ready) {
    await stop(indexer);
    throw new Error(`The test indexer was not ready within ${options.readyTimeoutMs} ms; see ${options.logFile}`);
  }
  return indexer;
}

async function stop(indexer: Indexer): Promise<void> {
  running.delete(indexer);
  await indexer.stop();
}

/** Stops every indexer this test file started. */
export async function stopTestIndexers(): Promise<void> {
  await Promise.all([...running].map(stop));
}
