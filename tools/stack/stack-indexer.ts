import { readIndexerStatus } from "../../api/src/chain/indexer-views.ts";
import { chainClient, untypedRequest } from "./chain.ts";
import { dropOldIndexerSchemas, type Indexer, type IndexerOptions, startIndexer } from "./indexer.ts";
import { IndexerWatchdog } from "./indexer-watchdog.ts";
import type { StackSettings } from "./settings.ts";
import type { StackRun } from "./stack-run.ts";

/**
 * Starts the indexer (Ponder) and waits for its backfill up to `readyTimeoutMs`; once it is ready,
 * the schemas of earlier indexer builds are dropped. On a local node one empty block is mined for it.
 */
export async function startStackIndexer(run: StackRun, options: IndexerOptions, context: { localNode: boolean; log: (line: string) => void }): Promise<Indexer & { ready: boolean }> {
  const { log } = context;
  log("Starting the indexer (Ponder)...");
  const indexer = await run.step("Starting the indexer", options.logFile, () => startIndexer(options));
  run.onStop(() => indexer.stop());
  run.track(indexer.process, true);
  void whenReady(indexer, async () => {
    const dropped = await dropOldIndexerSchemas(options.databaseUrl, indexer.schema);
    if (dropped.length > 0) log(`Dropped the schemas of earlier indexer builds: ${dropped.join(", ")}`);
  }).catch((error: Error) => log(`Could not drop old indexer schemas: ${error.message}`));
  // Over a websocket Ponder learns of blocks as they are mined: the deployment's blocks came
  // before it subscribed, so one empty block brings its checkpoint to the head (local node only).
  if (context.localNode && options.wsUrl !== undefined && indexer.ready) await untypedRequest(chainClient(options.rpcUrl))("evm_mine").catch(() => {});
  if (!indexer.ready) log(`The indexer is still backfilling; the API starts anyway (GET /readyz shows the lag). Log: ${options.logFile}`);
  return indexer;
}

/**
 * Ponder's websocket feed can stay open and deliver nothing while its /ready answers 200: the
 * watchdog compares its block with the chain head and replaces a stalled indexer (in place:
 * `indexer` is the new one's afterwards), stopped with the stack.
 */
export function watchIndexer(run: StackRun, indexer: Indexer & { ready: boolean }, options: IndexerOptions, context: { settings: StackSettings; log: (line: string) => void }): IndexerWatchdog {
  const { log } = context;
  const chain = chainClient(options.rpcUrl);
  const watchdog = new IndexerWatchdog({
    maxLagBlocks: context.settings.indexerMaxLagBlocks,
    stallMs: context.settings.indexerStallTimeoutMs,
    probe: async () => {
      const head = await chain.getBlockNumber({ cacheTime: 0 }).catch(() => null);
      if (head === null) return null; // the chain's own trouble is not the indexer's
      const status = await readIndexerStatus({ url: indexer.url, chainId: options.chainId }).catch(() => null);
      return { indexedBlock: status?.indexedBlock ?? null, headBlock: head };
    },
    restart: async () => {
      // On polling from then on: a websocket that went silent once is not trusted again (polling
      // costs ~50 ms more per block on a local chain and cannot go silent without erroring).
      const wasWebsocket = options.wsUrl !== undefined;
      options.wsUrl = undefined;
      log(`Restarting the indexer${wasWebsocket ? " on polling (its websocket feed stopped delivering blocks)" : ""}; log: ${options.logFile}`);
      const stalled = indexer.process;
      await indexer.stop();
      run.track(stalled, false);
      const restarted = await startIndexer(options);
      Object.assign(indexer, restarted);
      run.track(restarted.process, true);
      log(`The indexer runs again (pid ${restarted.process.pid}, polling${restarted.ready ? "" : ", still catching up"}).`);
    },
    log,
  });
  watchdog.start();
  run.onStop(() => watchdog.stop());
  return watchdog;
}

async function whenReady(indexer: Indexer & { ready: boolean }, then: () => Promise<void>): Promise<void> {
  while (!indexer.ready && !indexer.process.stopping) {
    await new Promise((r) => setTimeout(r, 2_000));
    indexer.ready = await readIndexerStatus({ url: indexer.url }).then((s) => s.ready, () => false);
  }
  if (indexer.ready) await then();
}
