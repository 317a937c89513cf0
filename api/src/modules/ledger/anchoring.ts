import type { Kysely, Transaction } from "kysely";
import type { Logger } from "pino";
import { type Address, decodeEventLog, type Hash, type Hex, type PublicClient, TransactionReceiptNotFoundError } from "viem";
import { auditAnchorAbi } from "../../../../contracts/abi/AuditAnchor.ts";
import { isRevertWith } from "../../chain/errors.ts";
import { type IndexedAnchors, type IndexedLedgerAnchor, IndexerNotReadyError } from "../../chain/indexer-views.ts";
import { type ChainOperationKind, type ChainOperations, type KeyedFacts, type SendContext, transactionOf } from "../../chain/operations.ts";
import type { Relayer } from "../../chain/relayer.ts";
import type { Config } from "../../config.ts";
import type { ChainOperation, Database, Db } from "../../db/database.ts";
import * as merkle from "./merkle.ts";
import * as repo from "./ledger.repository.ts";
import type { LedgerAnchorRow } from "./ledger.tables.ts";
import type { IndexedAnchor } from "./ledger.service.ts";

/** The chain operation kind; its key is `ledger_anchor:<first_seq>-<last_seq>`. */
export const LEDGER_ANCHOR_OPERATION = "ledger_anchor";
/** Most entries in one anchor: the proofs' reads stay small (a proof is ~14 hashes at this size). */
export const MAX_ANCHOR_ENTRIES = 10_000;

interface AnchorPayload {
  first_seq: number;
  last_seq: number;
  merkle_root: Hex;
  head_hash: Hex;
  contract_address: Address;
}

/** An anchor as the chain holds it (the LedgerAnchored event). */
export type ChainAnchor = IndexedLedgerAnchor;

export interface LedgerAnchoringDeps {
  db: Kysely<Database>;
  config: Config;
  logger: Logger;
  relayer: Relayer;
  publicClient: PublicClient;
  operations: ChainOperations;
  /** The indexer's LedgerAnchored rows. */
  anchors: IndexedAnchors;
}

/**
 * Anchors the audit ledger on the AuditAnchor contract, as a kind of chain operation
 * (api/src/chain/operations.ts): every LEDGER_ANCHOR_INTERVAL_MS a worker takes the entries after
 * the last pending or confirmed anchor (at most MAX_ANCHOR_ENTRIES), records the range with its
 * Merkle root (merkle.ts) and head hash in `ledger_anchors`, and requests the operation
 * `ledger_anchor:<first>-<last>` in the same transaction. One range is in flight at a time (the
 * contract takes them in order only). The component sends `anchor(first, last, root, head)` through
 * the relayer, resumes it after a crash, and confirms it from the indexer's `ledger_anchor` view
 * (or the receipt while the indexer lags); the row then holds the anchor's index and block, its
 * operation the transaction (`transactionOfRange`). A range the contract has already anchored
 * (AuditAnchorOutOfOrder with an earlier first seq: an earlier attempt got through) is settled, and
 * confirmed from the indexer. A failed range is requested again at the next tick.
 */
export class LedgerAnchoring implements ChainOperationKind<ChainAnchor> {
  readonly kind = LEDGER_ANCHOR_OPERATION;
  readonly abi = auditAnchorAbi;
  readonly maxAttempts: number;
  readonly retryBaseMs: number;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<unknown> | null = null;
  private stopped = true;
  private warnedUnconfigured = false;

  constructor(private readonly deps: LedgerAnchoringDeps) {
    this.log = deps.logger.child({ component: "ledger-anchoring" });
    // The chain operations' retry settings, shared with certification.
    this.maxAttempts = deps.config.certification.maxAttempts;
    this.retryBaseMs = deps.config.certification.retryBaseMs;
  }

  // ---- the periodic loop ----

  start(): void {
    if (this.deps.config.ledger.anchorIntervalMs === 0) {
      this.log.info("LEDGER_ANCHOR_INTERVAL_MS=0: this process does not anchor the ledger");
      return;
    }
    this.stopped = false;
    const schedule = () => {
      this.timer = setTimeout(() => {
        this.ticking = this.anchorNext()
          .catch((err: Error) => this.log.error({ err }, "ledger anchoring failed"))
          .finally(() => {
            this.ticking = null;
            if (!this.stopped) schedule();
          });
      }, this.deps.config.ledger.anchorIntervalMs);
    };
    schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking;
  }

  /**
   * Requests the anchor of the unanchored entries unless one is in flight; the range recorded, or
   * null (nothing to anchor, one in flight, no contract configured). Any worker may call it: a lock
   * makes them decide one at a time.
   */
  async anchorNext(): Promise<LedgerAnchorRow | null> {
    const { db, config, operations } = this.deps;
    const address = config.chain.auditAnchorAddress;
    if (!address) {
      if (!this.warnedUnconfigured) this.log.warn("no AuditAnchor address is configured (AUDIT_ANCHOR_ADDRESS): the ledger is not anchored");
      this.warnedUnconfigured = true;
      return null;
    }
    return db.transaction().execute(async (trx) => {
      await repo.lockAnchoring(trx);
      if (await repo.pendingAnchor(trx)) return null;
      const first = (await repo.anchoredThrough(trx)) + 1n;
      const head = await repo.headSeq(trx);
      if (head < first) return null;
      const last = head - first + 1n > BigInt(MAX_ANCHOR_ENTRIES) ? first + BigInt(MAX_ANCHOR_ENTRIES) - 1n : head;
      const leaves = (await repo.entryHashes(trx, first, last)) as Hex[];
      if (BigInt(leaves.length) !== last - first + 1n) throw new Error(`ledger entries ${first}..${last} are not all there (${leaves.length} found)`);
      const payload: AnchorPayload = {
        first_seq: Number(first),
        last_seq: Number(last),
        merkle_root: merkle.root(leaves),
        head_hash: leaves.at(-1)!,
        contract_address: address.toLowerCase() as Address,
      };
      const row = await repo.upsertPendingAnchor(trx, {
        first_seq: first,
        last_seq: last,
        merkle_root: payload.merkle_root,
        head_hash: payload.head_hash,
        chain_id: config.chain.id,
        contract_address: payload.contract_address,
        status: "pending",
      });
      await operations.request(trx, { key: keyOf(first, last), kind: LEDGER_ANCHOR_OPERATION, payload: { ...payload } });
      this.log.info({ first_seq: payload.first_seq, last_seq: payload.last_seq, root: payload.merkle_root }, "anchoring ledger entries");
      return row;
    });
  }

  // ---- the operation kind ----

  async send(op: ChainOperation, ctx: SendContext): Promise<void> {
    const p = payloadOf(op);
    await this.deps.relayer.write({
      address: p.contract_address,
      abi: auditAnchorAbi,
      functionName: "anchor",
      args: [BigInt(p.first_seq), BigInt(p.last_seq), p.merkle_root, p.head_hash],
      label: op.key,
      onSubmitted: ({ hash }) => ctx.recordSent([op.key], hash),
    });
  }

  /** The contract has anchored past this range's start already: an earlier attempt of it got through. */
  settled(err: unknown): boolean {
    if (!isRevertWith(err, "AuditAnchorOutOfOrder")) return false;
    const [expectedFirstSeq, firstSeq] = err.args as [bigint, bigint];
    return firstSeq < expectedFirstSeq;
  }

  async readIndexed(fromBlock: bigint, toBlock: bigint): Promise<KeyedFacts<ChainAnchor>[]> {
    return (await this.deps.anchors.inBlocks(fromBlock, toBlock)).map(keyed);
  }

  async lookupIndexed(ops: ChainOperation[]): Promise<KeyedFacts<ChainAnchor>[]> {
    const anchors = await this.deps.anchors.byFirstSeqs(ops.map((op) => BigInt(payloadOf(op).first_seq)));
    const wanted = new Set(ops.map((op) => op.key));
    return anchors.map(keyed).filter((f) => wanted.has(f.key));
  }

  /** LedgerAnchored in the sent transactions' receipts: the facts the indexer will record. */
  async readFromChain(ops: ChainOperation[]): Promise<KeyedFacts<ChainAnchor>[]> {
    const facts: KeyedFacts<ChainAnchor>[] = [];
    for (const op of ops) {
      if (!op.tx_hash) continue;
      const receipt = await this.deps.publicClient.getTransactionReceipt({ hash: op.tx_hash as Hash }).catch((err: unknown) => {
        if (err instanceof TransactionReceiptNotFoundError) return null;
        throw err;
      });
      if (!receipt || receipt.status !== "success") continue;
      const contract = payloadOf(op).contract_address.toLowerCase();
      for (const log of receipt.logs) {
        if (log.address.toLowerCase() !== contract) continue;
        const event = decodeLedgerAnchored(log);
        if (!event) continue;
        const fact = keyed({ ...event, txHash: receipt.transactionHash, blockNumber: receipt.blockNumber });
        if (fact.key === op.key) facts.push(fact);
      }
    }
    return facts;
  }

  async onConfirmed(trx: Transaction<Database>, confirmed: { op: ChainOperation; facts: ChainAnchor; source: "indexer" | "chain" }[]): Promise<void> {
    for (const { op, facts, source } of confirmed) {
      const p = payloadOf(op);
      await repo.confirmAnchor(trx, BigInt(p.first_seq), BigInt(p.last_seq), facts);
      if (facts.merkleRoot !== p.merkle_root || facts.headHash !== p.head_hash) {
        // The chain is what auditors check against: its values are recorded, and the verifier reports the difference.
        this.log.error({ key: op.key, chain: { root: facts.merkleRoot, head: facts.headHash }, requested: { root: p.merkle_root, head: p.head_hash } }, "the chain's anchor differs from the range requested");
      }
      this.log.info({ key: op.key, anchor_index: Number(facts.anchorIndex), tx: facts.txHash, source }, "ledger entries anchored");
    }
  }

  /** Anchors confirmed from a receipt, now indexed: the indexer's facts (the same, unless a reorg moved them). */
  async onIndexed(trx: Transaction<Database>, indexed: { op: ChainOperation; facts: ChainAnchor }[]): Promise<void> {
    for (const { op, facts } of indexed) {
      const p = payloadOf(op);
      await repo.confirmAnchor(trx, BigInt(p.first_seq), BigInt(p.last_seq), facts);
    }
  }

  /** The operation failed (its last_error says why): the range is requested again by the next anchoring. */
  async onFailed(trx: Transaction<Database>, op: ChainOperation): Promise<void> {
    const p = payloadOf(op);
    await repo.failAnchor(trx, BigInt(p.first_seq), BigInt(p.last_seq));
  }

  /** The transaction that anchored the range first..last (its operation's), null until one is sent. */
  async transactionOfRange(db: Db, firstSeq: bigint, lastSeq: bigint): Promise<string | null> {
    return transactionOf(await this.deps.operations.find(db, keyOf(firstSeq, lastSeq)));
  }

  /** Every anchor the indexer shows, by index; null while its views (or this one) are not there. */
  async indexedAnchors(): Promise<Map<bigint, IndexedAnchor> | null> {
    try {
      return new Map((await this.deps.anchors.all()).map((a) => [a.anchorIndex, a]));
    } catch (err) {
      if (err instanceof IndexerNotReadyError) return null;
      throw err;
    }
  }
}

export function keyOf(firstSeq: bigint | number, lastSeq: bigint | number): string {
  return `${LEDGER_ANCHOR_OPERATION}:${firstSeq}-${lastSeq}`;
}

function payloadOf(op: ChainOperation): AnchorPayload {
  return op.payload as unknown as AnchorPayload;
}

function keyed(a: ChainAnchor): KeyedFacts<ChainAnchor> {
  return { key: keyOf(a.firstSeq, a.lastSeq), facts: a };
}

function decodeLedgerAnchored(log: { data: Hex; topics: Hex[] }): IndexedAnchor | null {
  try {
    const event = decodeEventLog({ abi: auditAnchorAbi, data: log.data, topics: log.topics as [Hex, ...Hex[]] });
    if (event.eventName !== "LedgerAnchored") return null;
    const { anchorIndex, firstSeq, lastSeq, merkleRoot, headHash } = event.args;
    return { anchorIndex, firstSeq, lastSeq, merkleRoot: merkleRoot.toLowerCase(), headHash: headHash.toLowerCase() };
  } catch {
    return null; // another event of the contract (roles)
  }
}
