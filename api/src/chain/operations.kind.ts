import type { Transaction } from "kysely";
import type { Abi, Hash } from "viem";
import type { ChainOperation, Database, Db } from "../db/database.ts";

/**
 * What a module writes to have the chain operations component run its chain writes: a kind (its
 * contract calls and how the indexer or the chain shows them done), and projections of what the
 * indexer shows that nobody requested. The component itself is ChainOperations (operations.ts).
 */

/** A step of an operation that failed: `permanent` fails the operation, `transient` is retried with backoff. */
export class ChainOperationFailure extends Error {
  override name = "ChainOperationFailure";
  constructor(
    readonly kind: "permanent" | "transient",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Facts of the chain that settle an operation, keyed by the operation's business key. */
export interface KeyedFacts<F> {
  key: string;
  facts: F;
}

export interface SendContext {
  /**
   * Records the transaction of these operations (one, or a batch's) as sent, before its receipt is
   * awaited: a crash after it resumes from the hash instead of sending again.
   */
  recordSent(keys: readonly string[], hash: Hash): Promise<void>;
  /** What the kind's `onAttempt` returned for this attempt (e.g. the row it updated), so `send` need not read it again. */
  started: unknown;
}

/**
 * What a module registers for one kind of chain write. The component owns the row's lifecycle
 * (lease, send job, stored hash, resume, retries, sweep, cursor); the kind knows the contract.
 */
export interface ChainOperationKind<F = unknown> {
  readonly kind: string;
  /** Decodes reverts of a resumed transaction. */
  readonly abi: Abi;
  readonly maxAttempts: number;
  /**
   * Attempts of this kind one process runs at once (default: the component's `concurrency`). A kind
   * that gathers its attempts into batched transactions wants enough to fill the batches on their
   * way and the next one.
   */
  readonly concurrency?: number | undefined;
  /** Backoff of the n-th retry: retryBaseMs * 2^(n-1), capped at one hour, jittered. */
  readonly retryBaseMs: number;
  /** Sends the operation's transaction (alone or batched) and resolves once it is mined; calls `ctx.recordSent` when it is in the pool. */
  send(op: ChainOperation, ctx: SendContext): Promise<void>;
  /** An error that means the effect is on the chain already (e.g. ArtCertificateAlreadyCertified): done, not failed. */
  settled?(err: unknown): boolean;
  /**
   * The chain's receipt is the operation's last fact: nothing the indexer projects settles it (a
   * payment-token transfer on a token it does not index). Confirmed from `readFromChain` once its
   * transaction is mined, and counted as indexed then.
   */
  readonly confirmedBySend?: boolean;
  /** What the indexer projected in blocks (fromBlock, toBlock]: the cursor's read. */
  readIndexed(fromBlock: bigint, toBlock: bigint): Promise<KeyedFacts<F>[]>;
  /** The indexer's facts of these operations whatever their block (the sweep's safety net). */
  lookupIndexed(ops: ChainOperation[]): Promise<KeyedFacts<F>[]>;
  /** The chain's facts of these sent operations (receipts, contract reads), while the indexer lags. */
  readFromChain(ops: ChainOperation[]): Promise<KeyedFacts<F>[]>;
  /** Hands the confirmed operations to the module, in the confirming transaction (its outbox events go here). */
  onConfirmed(trx: Transaction<Database>, confirmed: { op: ChainOperation; facts: F; source: "indexer" | "chain" }[]): Promise<void>;
  /** Operations confirmed from the chain that the indexer now shows, with its facts. */
  onIndexed?(trx: Transaction<Database>, indexed: { op: ChainOperation; facts: F }[]): Promise<void>;
  /** The operation failed for good, in the transaction that records it. */
  onFailed(trx: Transaction<Database>, op: ChainOperation, reason: string): Promise<void>;
  /** An attempt begins (the module may keep its own record of attempts); its result reaches `send` as `ctx.started`. */
  onAttempt?(db: Db, op: ChainOperation): Promise<unknown>;
  /** An attempt failed and is retried in `delayMs`, in the transaction that schedules it. */
  onRetry?(trx: Transaction<Database>, op: ChainOperation, reason: string, delayMs: number): Promise<void>;
}

/**
 * A module's projection of what the indexer shows that nobody here requested (a wallet's fill of an
 * order): read past its own cursor in the same passes as the operations' cursors, in order, once.
 */
export interface IndexedProjection<F = unknown> {
  /** Its cursor's name in chain_cursors (never a kind's). */
  readonly consumer: string;
  /** What the indexer projected in blocks (fromBlock, toBlock], in chain order. */
  read(fromBlock: bigint, toBlock: bigint): Promise<F[]>;
  /**
   * Records `facts` in the transaction that moves the cursor past them (its outbox events go here).
   * Idempotent: facts already recorded (by another process, or before a restart) change nothing.
   */
  apply(trx: Transaction<Database>, facts: F[]): Promise<void>;
}
