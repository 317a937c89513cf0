import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, truncateSync, writeSync } from "node:fs";
import path from "node:path";
import {
  type Hex,
  keccak256,
  recoverTransactionAddress,
  serializeTransaction,
  type Transaction,
  type TransactionSerializable,
} from "viem";

/**
 * The local chain's journal, DATA_DIR/chain/blocks.jsonl: what `npm start` needs to bring a Hardhat
 * node back to where it stopped, since its engine (EDR) keeps the state in memory and cannot dump
 * it. One JSON object a line, appended and fsynced as the chain moves:
 *
 *   {"type":"genesis","chainId":31337,"hash":"0x…","timestamp":1795751918}         the first line
 *   {"type":"block","number":7,"hash":"0x…","parentHash":"0x…","timestamp":…,"transactions":["0x02f8…"]}
 *   {"type":"call","method":"hardhat_setBalance","params":[…]}     the stack's own state changes, in place
 *   {"type":"rewind","to":5}                   the chain went back (evm_revert): what followed block 5 is void
 *
 * Transactions are kept signed (eth_sendRawTransaction's input), so a wallet's own transfer comes
 * back as it was. A block whose transactions cannot be sent again carries `unreplayable`: why.
 */
export interface GenesisEntry {
  type: "genesis";
  chainId: number;
  hash: Hex;
  /** Seconds: the node is started again with this as its initial date, which gives the same genesis. */
  timestamp: number;
}

export interface BlockEntry {
  type: "block";
  number: number;
  hash: Hex;
  parentHash: Hex;
  timestamp: number;
  transactions: Hex[];
  unreplayable?: string;
}

export interface CallEntry {
  type: "call";
  method: string;
  params: unknown[];
}

export interface RewindEntry {
  type: "rewind";
  to: number;
}

export type JournalEntry = GenesisEntry | BlockEntry | CallEntry | RewindEntry;

export interface ChainJournal {
  file: string;
  genesis: GenesisEntry;
  /** The blocks and calls that stand (rewinds applied), in the order they happened. */
  entries: Array<BlockEntry | CallEntry>;
  /** The standing blocks' hashes by number, the genesis first. */
  hashes: Hex[];
  /** Why the journal cannot be replayed as it is (a line unreadable, a block that does not follow its parent), else null. */
  problem: string | null;
}

export function chainJournalFile(dataDir: string): string {
  return path.join(dataDir, "chain", "blocks.jsonl");
}

/**
 * The journal in DATA_DIR, or null when there is none. A last line cut short (a stack killed while
 * writing it) is dropped from the file, so that the next append starts on a line of its own.
 */
export function readChainJournal(dataDir: string): ChainJournal | null {
  const file = chainJournalFile(dataDir);
  if (!existsSync(file)) return null;
  const text = readFileSync(file, "utf8");
  const complete = text.lastIndexOf("\n") + 1;
  if (complete < text.length) truncateSync(file, Buffer.byteLength(text.slice(0, complete)));
  const lines = text.slice(0, complete).split("\n").slice(0, -1);

  const parsed: JournalEntry[] = [];
  for (const [index, line] of lines.entries()) {
    try {
      parsed.push(JSON.parse(line) as JournalEntry);
    } catch {
      return unreadable(file, `line ${index + 1} of ${file} is not JSON`);
    }
  }
  const genesis = parsed[0];
  if (genesis?.type !== "genesis") return unreadable(file, `${file} does not start with the genesis block`);

  const entries: Array<BlockEntry | CallEntry> = [];
  const hashes: Hex[] = [genesis.hash];
  /** Where each standing block is in `entries` (-1: the genesis, before them all). */
  const positions: number[] = [-1];
  for (const [index, entry] of parsed.slice(1).entries()) {
    const where = `line ${index + 2} of ${file}`;
    if (entry.type === "block") {
      if (entry.number !== hashes.length || entry.parentHash !== hashes.at(-1)) {
        return { file, genesis, entries, hashes, problem: `block ${entry.number} (${where}) does not follow block ${hashes.length - 1} ${hashes.at(-1)}` };
      }
      positions.push(entries.length);
      entries.push(entry);
      hashes.push(entry.hash);
    } else if (entry.type === "call") {
      entries.push(entry);
    } else if (entry.type === "rewind" && Number.isInteger(entry.to) && entry.to >= 0 && entry.to < hashes.length) {
      entries.length = positions[entry.to]! + 1;
      hashes.length = entry.to + 1;
      positions.length = entry.to + 1;
    } else {
      return { file, genesis, entries, hashes, problem: `${where} is not a block, a call or a rewind within the chain` };
    }
  }
  return { file, genesis, entries, hashes, problem: null };
}

function unreadable(file: string, problem: string): ChainJournal {
  return { file, genesis: { type: "genesis", chainId: 0, hash: "0x", timestamp: 0 }, entries: [], hashes: [], problem };
}

/** Appends entries to a journal, each batch flushed to the disk before append() returns. */
export class ChainJournalWriter {
  private constructor(private fd: number | null) {}

  /** A new journal that starts with `genesis` (an earlier one at the same place is replaced). */
  static create(file: string, genesis: GenesisEntry): ChainJournalWriter {
    mkdirSync(path.dirname(file), { recursive: true });
    const writer = new ChainJournalWriter(openSync(file, "w"));
    writer.append([genesis]);
    return writer;
  }

  static open(file: string): ChainJournalWriter {
    return new ChainJournalWriter(openSync(file, "a"));
  }

  append(entries: JournalEntry[]): void {
    if (this.fd === null) throw new Error("the chain journal is closed");
    writeSync(this.fd, entries.map((entry) => `${JSON.stringify(entry)}\n`).join(""));
    fsyncSync(this.fd);
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

/** A mined block as the journal keeps it: each transaction as the signed bytes it was sent as. */
export async function blockEntryOf(block: {
  number: bigint | null;
  hash: Hex | null;
  parentHash: Hex;
  timestamp: bigint;
  transactions: Transaction[];
}): Promise<BlockEntry> {
  const entry: BlockEntry = {
    type: "block",
    number: Number(block.number),
    hash: block.hash!,
    parentHash: block.parentHash,
    timestamp: Number(block.timestamp),
    transactions: [],
  };
  for (const tx of block.transactions) {
    const raw = await signedBytesOf(tx);
    if (typeof raw !== "string") {
      entry.unreplayable = raw.problem;
      break;
    }
    entry.transactions.push(raw);
  }
  return entry;
}

/**
 * The signed bytes of a mined transaction, rebuilt from its fields and signature: they must hash to
 * its hash and recover to its sender (an impersonated account's transaction carries no real
 * signature and could not be sent again).
 */
async function signedBytesOf(tx: Transaction): Promise<Hex | { problem: string }> {
  // A fee-market transaction reports the price it paid as gasPrice, which is no field of its own.
  const fields = { ...tx, data: tx.input, ...(tx.type === "legacy" || tx.type === "eip2930" ? {} : { gasPrice: undefined }) };
  let raw: Hex;
  try {
    raw = serializeTransaction(fields as TransactionSerializable, { r: tx.r, s: tx.s, v: tx.v, yParity: tx.yParity });
  } catch (error) {
    return { problem: `transaction ${tx.hash} (type ${tx.type}) cannot be rebuilt: ${(error as Error).message.split("\n")[0]}` };
  }
  if (keccak256(raw) !== tx.hash) return { problem: `transaction ${tx.hash} (type ${tx.type}) does not rebuild to its hash` };
  const sender = await recoverTransactionAddress({ serializedTransaction: raw as never }).catch(() => null);
  if (sender?.toLowerCase() !== tx.from.toLowerCase()) {
    return { problem: `transaction ${tx.hash} was not signed by its sender ${tx.from} (an impersonated account, hardhat_impersonateAccount)` };
  }
  return raw;
}
