import { type Hash, TransactionNotFoundError } from "viem";
import type { ChainOperation } from "../db/database.ts";
import { NotificationListener } from "../db/notifications.ts";
import { classifyChainError, PermanentChainError } from "./errors.ts";
import { CoalescedPasses, type OperationsContext } from "./operations.context.ts";
import type { OperationConfirmation } from "./operations.confirmation.ts";
import { ChainOperationFailure, type ChainOperationKind } from "./operations.kind.ts";
import * as repo from "./operations.repository.ts";
import type { InterruptedAttempts } from "./operations.sweep.ts";

/** The channel the table's trigger NOTIFYs when an operation becomes due (migration 2026_11_25_0040). */
export const CHAIN_OPERATIONS_DUE_CHANNEL = "chain_operations_due";

const MAX_RETRY_DELAY_MS = 3_600_000;

/**
 * The attempts: a worker claims due operations from their table (FOR UPDATE SKIP LOCKED, each kind
 * up to its concurrency, woken by the table's NOTIFY and a poll), leases each, sends it through its
 * kind (which stores the hash as soon as it is sent), resumes from that hash after a crash, and
 * records a failure: for good when permanent or the last attempt, else a retry with backoff.
 */
export class OperationAttempts {
  /** Claims of due operations, one at a time. */
  private readonly claims = new CoalescedPasses(
    () => this.ctx.running(),
    async () => {
      await this.interrupted
        .release()
        .then(() => this.claimDue())
        .catch((err: Error) => {
          if (repo.isUndefinedTable(err)) return;
          this.ctx.log.warn({ err: err.message }, "could not claim due chain operations; trying again at the next notification or poll");
        });
    },
  );
  /** Attempts under way in this process. */
  private readonly attempts = new Set<Promise<void>>();
  /** How many of them per kind. */
  private readonly attemptsOfKind = new Map<string, number>();
  /** Operations whose last attempt here found the node unreachable: retried as soon as it answers again. */
  private readonly waitingForNode = new Set<string>();
  private dueListener: NotificationListener | null = null;
  private dueTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ctx: OperationsContext,
    private readonly confirmation: OperationConfirmation,
    private readonly interrupted: InterruptedAttempts,
  ) {}

  /** Due operations: announced by the table's NOTIFY; a poll finds those whose backoff ended. */
  start(): void {
    const { deps, log } = this.ctx;
    this.dueListener = new NotificationListener({
      databaseUrl: deps.databaseUrl,
      channel: CHAIN_OPERATIONS_DUE_CHANNEL,
      name: "chain-operations-due",
      onNotify: () => this.wakeClaims(),
      onReady: () => this.wakeClaims(),
      logger: log,
    });
    this.dueListener.start();
    const poll = () => {
      this.dueTimer = setTimeout(() => {
        this.wakeClaims();
        if (this.ctx.running()) poll();
      }, deps.duePollMs ?? 1_000);
    };
    poll();
  }

  /** Stops the poll and the listener; claims and attempts under way run on. */
  async stopListening(): Promise<void> {
    if (this.dueTimer) clearTimeout(this.dueTimer);
    await this.dueListener?.stop();
  }

  /** The claim under way, if any. */
  async claimUnderWay(): Promise<void> {
    await this.claims.running;
  }

  /** Waits for the attempts under way (each waits for its receipt), at most `waitMs`. */
  async drain(waitMs: number): Promise<void> {
    if (this.attempts.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(this.attempts), new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }

  /** See ChainOperations.run. */
  async run(key: string): Promise<void> {
    const [op] = await this.lease(repo.openOfKey(key));
    if (op) await this.attempt(op);
  }

  /** Leases the operations `picked` selects for an attempt each. */
  private lease(picked: ReturnType<typeof repo.openOfKey>): Promise<ChainOperation[]> {
    return repo.lease(this.ctx.deps.db, picked, this.ctx.deps.leaseMs, this.ctx.deps.presence?.id ?? null);
  }

  /** The attempt of a leased operation. */
  private async attempt(op: ChainOperation): Promise<void> {
    const { db } = this.ctx.deps;
    this.waitingForNode.delete(op.key);
    const kind = this.kindOf(op);
    try {
      const started = await kind.onAttempt?.(db, op);
      // Sent and mined: the indexer's notification confirms it. Should it never come, the sweep
      // looks again once the lease has run out, and a lagging indexer makes the chain confirm it.
      if (!(op.tx_hash && (await this.resume(kind, op, op.tx_hash as Hash)))) {
        await kind.send(op, { recordSent: (keys, hash) => this.recordSent(keys, hash), started });
      }
      if (kind.confirmedBySend) await this.confirmMined(kind, op.key);
    } catch (err) {
      if (kind.settled?.(err)) return;
      await this.recordFailure(kind, op, err);
    }
  }

  /** Asks for a claim of due operations; claims never overlap, and a request during one runs another after it. */
  private wakeClaims(): void {
    void this.claims.request();
  }

  /** See ChainOperations.claimNow. */
  claimNow(): Promise<void> {
    return this.claims.request();
  }

  /** See ChainOperations.idle. */
  async idle(): Promise<void> {
    await this.claimNow();
    while (this.attempts.size > 0 || this.claims.running) await Promise.all([...this.attempts, this.claims.running]);
  }

  /** Claims due operations of this process's kinds while they have free slots, and starts their attempts. */
  private async claimDue(): Promise<void> {
    const { deps, log, kinds } = this.ctx;
    while (this.ctx.running()) {
      const slots = [...kinds.values()]
        .map((kind) => ({ kind: kind.kind, free: (kind.concurrency ?? deps.concurrency ?? 32) - (this.attemptsOfKind.get(kind.kind) ?? 0) }))
        .filter((slot) => slot.free > 0);
      if (slots.length === 0) return;
      const ops = await this.lease(repo.duePerKind(slots));
      for (const op of ops) {
        this.attemptsOfKind.set(op.kind, (this.attemptsOfKind.get(op.kind) ?? 0) + 1);
        const attempt: Promise<void> = this.attempt(op)
          .catch((err: Error) => {
            this.interrupted.add(op.key, op.lease_until!);
            log.error({ key: op.key, err }, "chain operation attempt failed on the database; it is due again once the database answers");
          })
          .finally(() => {
            this.attempts.delete(attempt);
            this.attemptsOfKind.set(op.kind, this.attemptsOfKind.get(op.kind)! - 1);
            this.wakeClaims();
          });
        this.attempts.add(attempt);
      }
      if (ops.length < slots.reduce((sum, slot) => sum + slot.free, 0)) return;
    }
  }

  /** Waits for the transaction of an earlier attempt; false when the node does not know it (send again). */
  private async resume(kind: ChainOperationKind, op: ChainOperation, hash: Hash): Promise<boolean> {
    try {
      await this.ctx.deps.publicClient.getTransaction({ hash });
    } catch (err) {
      if (!(err instanceof TransactionNotFoundError)) throw classifyChainError(err, kind.abi, { hash });
      this.ctx.log.warn({ key: op.key, hash }, "the earlier transaction is unknown to the node; sending again");
      return false;
    }
    await this.ctx.deps.relayer.waitForReceipt(hash, { abi: kind.abi, label: op.key });
    return true;
  }

  /** See ChainOperations.recordSent. */
  async recordSent(keys: readonly string[], hash: Hash): Promise<void> {
    if (keys.length === 0) return;
    await repo.markSent(this.ctx.deps.db, keys, hash);
  }

  /** A sent operation of a kind `confirmedBySend`, confirmed from the chain once its transaction is mined. */
  private async confirmMined(kind: ChainOperationKind, key: string): Promise<void> {
    const op = await repo.find(this.ctx.deps.db, key);
    if (op?.status === "sent") await this.confirmation.confirmFacts(kind, await kind.readFromChain([op]), "chain");
  }

  /** A permanent failure or the last attempt fails the operation; anything else is retried with backoff. */
  private async recordFailure(kind: ChainOperationKind, op: ChainOperation, err: unknown): Promise<void> {
    const { deps, log } = this.ctx;
    const permanent = (err instanceof ChainOperationFailure && err.kind === "permanent") || err instanceof PermanentChainError;
    const reason = describe(err);
    if (permanent || op.attempts >= kind.maxAttempts) {
      const final = permanent ? reason : `${reason} (gave up after ${op.attempts} attempts)`;
      log.warn({ key: op.key, attempts: op.attempts, err: final }, "chain operation failed");
      await this.fail(kind, op.key, final);
      return;
    }
    const base = Math.min(kind.retryBaseMs * 2 ** (op.attempts - 1), MAX_RETRY_DELAY_MS);
    const delayMs = Math.round(base * (0.8 + Math.random() * 0.4));
    log.info({ key: op.key, attempts: op.attempts, retry_in_ms: delayMs, err: reason }, "chain operation attempt failed; retrying");
    await deps.db.transaction().execute(async (trx) => {
      const scheduled = await repo.scheduleRetry(trx, op.key, delayMs, reason);
      if (scheduled) await kind.onRetry?.(trx, scheduled, reason, delayMs);
    });
    if (nodeUnreachable(err)) this.waitingForNode.add(op.key);
  }

  /**
   * The node answered (the worker's indexer-lag sampler read its head): the operations whose last
   * attempt found it unreachable are retried now rather than when their backoff ends, which after
   * an outage of a minute can be another minute away.
   */
  retryWaitingForNode(): void {
    if (this.waitingForNode.size === 0 || !this.ctx.running()) return;
    const keys = [...this.waitingForNode];
    this.waitingForNode.clear();
    void (async () => {
      const due = await repo.dueNowIfWaiting(this.ctx.deps.db, keys);
      if (due.length > 0) this.ctx.log.info({ keys: due }, "the chain node answers again: retrying the operations that waited for it");
    })().catch((err: Error) => {
      for (const key of keys) this.waitingForNode.add(key);
      this.ctx.log.warn({ err: err.message }, "could not retry the operations that waited for the node; their backoff still runs");
    });
  }

  /** See ChainOperations.fail. */
  async fail(kind: ChainOperationKind, key: string, reason: string): Promise<void> {
    await this.ctx.deps.db.transaction().execute(async (trx) => {
      const failed = await repo.markFailed(trx, key, reason);
      if (failed) await kind.onFailed(trx, failed, reason);
    });
  }

  private kindOf(op: ChainOperation): ChainOperationKind {
    const kind = this.ctx.kinds.get(op.kind);
    if (!kind) throw new Error(`chain operation ${op.key}: kind ${op.kind} is not registered in this process`);
    return kind;
  }
}

/** Whether `err` (or a cause of it) says the node did not answer: down, unreachable or timing out. */
function nodeUnreachable(err: unknown): boolean {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    const code = classifyChainError(e).code;
    if (code === "rpc_unavailable" || code === "timeout") return true;
  }
  return false;
}

function describe(err: unknown): string {
  if (err instanceof PermanentChainError) return `the transaction was refused: ${err.message}`;
  if (err instanceof Error) return err.message;
  return String(err);
}
