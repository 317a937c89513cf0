import type { EventEmitter } from "node:events";
import type { Logger } from "pino";
import type { Hash } from "viem";
import type { ChainOperation, Db } from "../db/database.ts";
import type { IndexerLagState } from "./indexer-lag.ts";
import { OperationAttempts } from "./operations.attempts.ts";
import { OperationConfirmation } from "./operations.confirmation.ts";
import type { ChainOperationsDeps, OperationsContext } from "./operations.context.ts";
import type { ChainOperationKind, IndexedProjection } from "./operations.kind.ts";
import * as repo from "./operations.repository.ts";
import { InterruptedAttempts, LeaseSweep } from "./operations.sweep.ts";
import { ConfirmationWaiters } from "./operations.waiters.ts";

export type { ChainOperationsDeps } from "./operations.context.ts";
export { ChainOperationFailure, type ChainOperationKind, type IndexedProjection, type KeyedFacts, type SendContext } from "./operations.kind.ts";

/** An operation to request: its business key, its kind and what the kind needs to send it. */
export interface OperationRequest {
  key: string;
  kind: string;
  payload: Record<string, unknown>;
}

export interface RequestOptions {
  /** Lower runs first within its kind (default 0). */
  priority?: number | undefined;
  /** Due at (default now). */
  runAt?: Date | undefined;
}

/**
 * An operation's transaction, the one place it is stored: once confirmed, the one its confirmation
 * saw mined (`result.txHash`, another than the last one sent when a send's hash was lost), else the
 * last one sent (`tx_hash`); null before anything is sent. With `confirmed`, null until the
 * operation is confirmed (what answers with the transaction of a done effect asks).
 */
export function transactionOf(op: ChainOperation | undefined, options: { confirmed?: boolean } = {}): string | null {
  if (!op || (options.confirmed && op.status !== "confirmed")) return null;
  return (op.status === "confirmed" ? (op.result as { txHash?: string | null } | null)?.txHash : null) ?? op.tx_hash;
}

/**
 * How long stop() waits for attempts under way (each waits for its transaction's receipt; a local
 * node mines at once). One that outlasts it is taken up by the next process as soon as this one is
 * gone (its presence), so a dead chain does not hold a stop up for long.
 */
const STOP_WAIT_MS = 3_000;

/**
 * Chain writes as durable operations. A module requests an operation by business key in its own
 * transaction (`request`): its row is the queue entry, due at once (or when its backoff ends). A
 * worker claims due operations from the table (FOR UPDATE SKIP LOCKED, `concurrency` at a time,
 * woken by the table's NOTIFY), sends each through the relayer, stores its hash as
 * soon as it is sent, resumes from that hash after a crash, and confirms it when the indexer shows
 * its event: one LISTEN connection, and per kind a cursor (the last indexed block read) so each
 * notification reads only the newly indexed rows. While the indexer lags, sent operations are
 * confirmed from the chain and reconciled when the cursor reaches them. A sweep makes operations
 * whose lease ran out (their process died mid-attempt) due again and looks up those the cursor
 * passed before they were watched. Confirmation and failure are handed to the kind in the transaction that
 * records them, so its outbox events are written exactly once.
 *
 * This class is the component's one entry; its parts, a file each: the attempts (claim, lease,
 * send, resume, failure: operations.attempts.ts), the confirmation (cursors, projections, the
 * chain while the indexer lags: operations.confirmation.ts), the sweep and the release of
 * interrupted attempts (operations.sweep.ts), the waiters (operations.waiters.ts), and every query
 * (operations.repository.ts).
 */
export class ChainOperations {
  private readonly log: Logger;
  private readonly kinds = new Map<string, ChainOperationKind<any>>();
  private readonly waiters = new ConfirmationWaiters();
  private readonly confirmation: OperationConfirmation;
  private readonly attempts: OperationAttempts;
  private readonly sweeper: LeaseSweep;
  private stopped = true;

  constructor(private readonly deps: ChainOperationsDeps) {
    this.log = deps.logger.child({ component: "chain-operations" });
    const ctx: OperationsContext = { deps, log: this.log, kinds: this.kinds, running: () => !this.stopped };
    this.confirmation = new OperationConfirmation(ctx, this.waiters);
    this.attempts = new OperationAttempts(ctx, this.confirmation, new InterruptedAttempts(ctx));
    this.sweeper = new LeaseSweep(ctx, this.confirmation);
  }

  /** Emits an operation's key once this process confirmed it. */
  get confirmations(): EventEmitter {
    return this.waiters.confirmations;
  }

  register<F>(kind: ChainOperationKind<F>): void {
    if (this.kinds.has(kind.kind)) throw new Error(`chain operation kind ${kind.kind} is registered twice`);
    this.kinds.set(kind.kind, kind);
  }

  /** Adds a projection of indexed facts (IndexedProjection), advanced with the kinds' cursors. */
  registerProjection<F>(projection: IndexedProjection<F>): void {
    this.confirmation.registerProjection(projection);
  }

  /**
   * The projections that fail to record the facts past their block (any process's), oldest failure
   * first: what /readyz reports as degraded.
   */
  failingProjections(): Promise<{ consumer: string; block: bigint; failingSince: Date; error: string | null }[]> {
    return this.confirmation.failingProjections();
  }

  /**
   * Requests an operation in the caller's transaction, idempotent on `key`: a new key is stored
   * pending and due (at `runAt`, else now); a failed one starts over (attempts reset); a pending or
   * sent one waiting for its next attempt becomes due now (or at `runAt` if sooner), one whose
   * attempt is under way is left to it; a confirmed one is left as it is. The operation as it now is.
   * The table's trigger tells the workers once the transaction commits.
   */
  async request(db: Db, input: OperationRequest, options: RequestOptions = {}): Promise<ChainOperation> {
    const [op] = await this.requestMany(db, [input], options);
    return op!;
  }

  /**
   * `request` for several operations at once (the same options for all), in three statements at
   * most whatever their number: the operations as they now are, in the order of `inputs`.
   */
  async requestMany(db: Db, inputs: readonly OperationRequest[], options: RequestOptions = {}): Promise<ChainOperation[]> {
    if (inputs.length === 0) return [];
    for (const input of inputs) if (!this.kinds.has(input.kind)) throw new Error(`unknown chain operation kind ${input.kind}`);
    // One row per key, in key order: concurrent requests lock shared keys in the same order.
    const byKey = new Map(inputs.map((input) => [input.key, input]));
    const keys = [...byKey.keys()].sort();
    const rows = keys.map((key) => ({ key, kind: byKey.get(key)!.kind, payload: byKey.get(key)!.payload }));
    const priority = options.priority ?? 0;
    const found = new Map((await repo.insertOrRestart(db, rows, options.runAt, priority)).map((op) => [op.key, op]));
    const existing = keys.filter((key) => !found.has(key));
    if (existing.length > 0) {
      for (const op of await repo.expedite(db, existing, options.runAt, priority)) found.set(op.key, op);
      const rest = existing.filter((key) => !found.has(key));
      if (rest.length > 0) for (const op of await repo.findByKeys(db, rest)) found.set(op.key, op);
    }
    return inputs.map((input) => found.get(input.key)!);
  }

  /**
   * Waits until `done()` holds, at most `timeoutMs`; whether it did. Woken at once when this process
   * confirms `key`; otherwise re-checked with backoff (50 ms doubling to 500 ms), since another
   * process may confirm it. A request that answers once its chain write is done waits here.
   */
  waitFor(key: string, done: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
    return this.waiters.waitFor(key, done, timeoutMs);
  }

  /** Ends every wait now and later with what holds (a stopping server answers at once). */
  releaseWaiters(): void {
    this.waiters.release();
  }

  /** The operation of `key`, if requested. */
  find(db: Db, key: string): Promise<ChainOperation | undefined> {
    return repo.find(db, key);
  }

  /** The operations of `keys` that were requested. */
  findMany(db: Db, keys: readonly string[]): Promise<ChainOperation[]> {
    return keys.length === 0 ? Promise.resolve([]) : repo.findByKeys(db, keys);
  }

  /** Which of `keys` are confirmed (their chain write is done, as the indexer or the chain shows it). */
  async confirmedOf(db: Db, keys: readonly string[]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    return new Set(await repo.confirmedKeys(db, keys));
  }

  /**
   * One attempt of `key` now, whether due or not (if it is still on its way): leases it, then
   * waits for its stored transaction or sends it. Never throws for a chain failure (it records it),
   * only for database trouble. Waits for a concurrent lease of the same row (one statement) rather
   * than skipping it: each call makes its attempt.
   */
  run(key: string): Promise<void> {
    return this.attempts.run(key);
  }

  /**
   * Claims the operations due now, within their kinds' free slots (after the claim under way, if
   * any), and resolves once that claim has ended; the attempts it started run on. Nothing while
   * stopped.
   */
  claimNow(): Promise<void> {
    return this.attempts.claimNow();
  }

  /**
   * Resolves once no attempt runs in this process and the claim after the last one found nothing
   * due: what was due has been attempted, and so has what those attempts made due at once. An
   * operation that comes due later (a backoff, the sweep) is not waited for. Tests wait for this
   * rather than for time.
   */
  idle(): Promise<void> {
    return this.attempts.idle();
  }

  /** Stores the transaction hash of operations just sent (one statement for a batch). */
  recordSent(keys: readonly string[], hash: Hash): Promise<void> {
    return this.attempts.recordSent(keys, hash);
  }

  /** Fails the operation for good (unless it was confirmed or failed meanwhile) and tells its kind. */
  fail(kind: ChainOperationKind, key: string, reason: string): Promise<void> {
    return this.attempts.fail(kind, key, reason);
  }

  /** Starts the indexer's listener (cursor passes), the claims of due operations and the sweep. */
  start(): void {
    this.stopped = false;
    this.confirmation.start();
    this.attempts.start();
    this.sweeper.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.sweeper.stop();
    await Promise.all([this.confirmation.stopListening(), this.attempts.stopListening()]);
    await Promise.all([this.confirmation.underWay(), this.sweeper.underWay(), this.attempts.claimUnderWay()]);
    // Attempts under way finish (each waits for its receipt); one that outlasts the wait keeps its
    // lease, and the sweep of another process takes it up once this process is gone.
    await this.attempts.drain(STOP_WAIT_MS);
  }

  /** Asks for a cursor pass; passes never overlap, and a request during one runs another after it. */
  poke(): void {
    this.confirmation.poke();
  }

  /**
   * Reads the kinds' newly indexed rows up to the indexer's block; confirms and reconciles what they
   * settle. How many were confirmed. One transaction a step for all kinds: the cursors' rows locked
   * (one process at a time reads a kind's blocks; the others skip it), and only the kinds with
   * operations still open (pending, sent, or confirmed from the chain and not yet indexed) read the
   * indexer; the others' cursors just move on (nothing in those blocks can settle an operation
   * requested later: it is sent after this read, so mined in a later block). Projections read
   * every block first, each on its own.
   */
  advanceCursors(): Promise<number> {
    return this.confirmation.advanceCursors();
  }

  /**
   * Each verdict of the IndexerLagMonitor (it gives one only when it could read the chain head): what
   * waited for the node is retried, and while the indexer lags, the chain confirms (one pass at a time).
   */
  onIndexerLag(state: IndexerLagState): void {
    this.attempts.retryWaitingForNode();
    this.confirmation.confirmWhileLagging(state);
  }

  /** Confirms sent operations from the chain itself (the kind reads receipts or the contract); how many. */
  confirmFromChain(): Promise<number> {
    return this.confirmation.confirmFromChain();
  }

  /**
   * The safety net: a cursor pass (what a lost notification missed), then the operations whose
   * attempt's lease ran out: those the indexer shows are confirmed (their block was read before
   * they were watched), the others made due again (their process died between send and receipt).
   */
  sweep(): Promise<void> {
    return this.sweeper.sweep();
  }
}
