import path from "node:path";
import { bringClockToPresent, chainClient, type HardhatNode, startHardhatNode } from "./chain.ts";
import { type ChainJournal, chainJournalFile, ChainJournalWriter, readChainJournal } from "./chain-journal.ts";
import { ChainRecorder } from "./chain-recorder.ts";
import { ChainReplayError, replayChainJournal } from "./chain-replay.ts";

/**
 * The stack's own Hardhat node, kept from one start to the next: started at the genesis time its
 * journal recorded, the journal replayed onto it, and from then on each block recorded as it is
 * mined (chain-journal.ts). What the journal cannot bring back is moved aside, never mixed.
 */
export interface LocalNodeOptions {
  dataDir: string;
  port: number;
  logFile: string;
}

/** Reads the journal and starts the node at its genesis time (now, for a new chain). */
export async function startLocalNode(options: LocalNodeOptions): Promise<{ node: HardhatNode; journal: ChainJournal | null }> {
  const journal = readChainJournal(options.dataDir);
  const genesisTime = journal && !journal.problem ? new Date(journal.genesis.timestamp * 1000) : undefined;
  const node = await startHardhatNode({ port: options.port, logFile: options.logFile, genesisTime });
  return { node, journal };
}

export interface LocalChain {
  node: HardhatNode;
  recorder: ChainRecorder;
  /** Blocks brought back from the journal (0 for a new chain). */
  replayedBlocks: number;
  /** Why the journal did not bring its chain back (it was moved aside and a new chain started), else null. */
  discarded: string | null;
}

export interface RestoreOptions extends LocalNodeOptions {
  node: HardhatNode;
  journal: ChainJournal | null;
  /** Moves a directory of DATA_DIR into this start's archive; answers where it went. */
  moveAside: (dir: string) => string;
  /** The node was replaced by a new one (the old one is stopped). */
  onNodeReplaced: (stopped: HardhatNode, started: HardhatNode) => void;
  log: (line: string) => void;
}

/**
 * Replays the journal onto the node. A journal that does not give the same chain back (a block
 * hash differs, a transaction is refused) goes to the archive, and a new node starts a new chain.
 * Then the node's clock is brought to the present and the recorder starts.
 */
export async function restoreLocalChain(options: RestoreOptions): Promise<LocalChain> {
  let { node, journal } = options;
  let replayedBlocks = 0;
  let discarded: string | null = null;
  if (journal) {
    try {
      replayedBlocks = await replayChainJournal(node.rpcUrl, journal);
    } catch (error) {
      if (!(error instanceof ChainReplayError)) {
        throw new Error(`${(error as Error).message.split("\n")[0]} (npm start -- --fresh starts a new chain, the old one archived)`, { cause: error });
      }
      discarded = error.message;
      const movedTo = options.moveAside(path.dirname(journal.file));
      options.log(`The local chain could not be brought back from its journal: ${error.message}.`);
      options.log(`Moved the journal aside to ${movedTo}; starting a new chain (the database of the old one follows it).`);
      // A node started at the journal's genesis time (and perhaps part replayed) makes way for a new one.
      if (!journal.problem) {
        const stopped = node;
        await stopped.stop();
        node = await startHardhatNode({ port: options.port, logFile: options.logFile });
        options.onNodeReplaced(stopped, node);
      }
      journal = null;
    }
  }
  await bringClockToPresent(node.rpcUrl);

  let writer: ChainJournalWriter;
  let hashes: ChainJournal["hashes"];
  if (journal) {
    writer = ChainJournalWriter.open(journal.file);
    hashes = journal.hashes;
  } else {
    const client = chainClient(node.rpcUrl);
    const [chainId, genesis] = await Promise.all([client.getChainId(), client.getBlock({ blockNumber: 0n })]);
    writer = ChainJournalWriter.create(chainJournalFile(options.dataDir), { type: "genesis", chainId, hash: genesis.hash, timestamp: Number(genesis.timestamp) });
    hashes = [genesis.hash];
  }
  const recorder = new ChainRecorder({ rpcUrl: node.rpcUrl, wsUrl: node.wsUrl, writer, hashes, log: options.log });
  recorder.start();
  return { node, recorder, replayedBlocks, discarded };
}
