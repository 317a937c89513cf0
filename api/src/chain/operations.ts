import { EventEmitter } from "node:events";
import { type Kysely, sql, type Transaction } from "kysely";
import type { Logger } from "pino";
import { type Abi, type Hash, type PublicClient, TransactionNotFoundError } from "viem";
import type { ChainOperation, Database, Db } from "../db/database.ts";
import { NotificationListener } from "../db/notifications.ts";
import type { Task } from "../jobs/queue.ts";
import { IndexerNotReadyError, readIndexerStatus } from "./indexer-views.ts";
import { classifyChainError, PermanentChainError } from "./errors.ts";
import type { IndexerLagState } from "./indexer-lag.ts";
import { IndexerListener } from "./indexer-listener.ts";
import type { Relayer } from "./relayer.ts";

/**
 * The job an earlier version queued per operation (payload `{ key }`): such jobs still run it once.
 * Operations are now claimed from their table (see ChainOperations).
 */
export const CHAIN_OPERATION_TASK = "chain_operation_send";

/** The channel the table's trigger NOTIFYs when an operation becomes due (migration 2026_11_25_0040). */
export const CHAIN_OPERATIONS_DUE_CHANNEL = "chain_operations_due";

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

export interface ChainOperationsDeps {
  db: Kysely<Database>;
  logger: Logger;
  relayer: Relayer;
  publicClient: PublicClient;
  databaseUrl: string;
  viewsSchema: string;
  chainId: number;
  /** The first block of the contracts: where a new cursor starts. */
  startBlock: number;
  /** How long an attempt may run before the sweep takes it for lost. */
  leaseMs: number;
  sweepIntervalMs: number;
  /** Attempts of one kind this process runs at once (they mostly wait on the chain), unless the kind says otherwise; default 32. */
  concurrency?: number | undefined;
  /** How often a worker looks for operations whose backoff ended (new ones are announced by NOTIFY); default 1 s. */
  duePollMs?: number | undefined;
  /** The indexer's last indexed block (default: its checkpoint in the views schema); null when unknown. */
  indexedBlock?: (() => Promise<bigint | null>) | undefined;
}

/** An expired lease counts as lost only after this much more (a re-enqueued live attempt is harmless anyway). */
const LEASE_GRACE_MS = 2_000;
const MAX_RETRY_DELAY_MS = 3_600_000;
/**
 * Blocks come in bursts (one per transaction on a local chain): a pass asked for while another ran
 * waits this long first, so that one pass takes several. The first pass after a quiet spell runs at
 * once: a lone certification is not delayed.
 */
const CONFIRM_PAUSE_MS = 15;
/** Blocks read per cursor step (one transaction each). */
const CURSOR_SPAN = 5_000n;
/** Operations per sweep or chain-confirmation page. */
const PAGE = 200;
/** How long stop() waits for attempts under way (each waits for its transaction's receipt). */
const STOP_WAIT_MS = 10_000;

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
 */
export class ChainOperations {
  private readonly log: Logger;
  private readonly kinds = new Map<string, ChainOperationKind<any>>();
  private readonly projections = new Map<string, IndexedProjection<any>>();
  /** The block each projection has been read up to in this process. */
  private readonly projectionRead = new Map<string, bigint>();
  /** Emits an operation's key once this process confirmed it. */
  readonly confirmations = new EventEmitter();
  private listener: IndexerListener | null = null;
  private dueListener: NotificationListener | null = null;
  private dueTimer: NodeJS.Timeout | null = null;
  /** Claims of due operations, one at a time. */
  private readonly claims = new CoalescedPasses(() => !this.stopped, async () => {
    await this.releaseInterrupted()
      .then(() => this.claimDue())
      .catch((err: Error) => {
        if (isUndefinedTable(err)) return;
        this.log.warn({ err: err.message }, "could not claim due chain operations; trying again at the next notification or poll");
      });
  });
  /** Attempts under way in this process. */
  private readonly attempts = new Set<Promise<void>>();
  /** How many of them per kind. */
  private readonly attemptsOfKind = new Map<string, number>();
  /**
   * Operations whose attempt here ended on a database error (so neither its outcome nor a retry
   * could be recorded), with the lease they took: made due again as soon as the database answers,
   * rather than when the lease runs out (unless another process has claimed them since).
   */
  private readonly interrupted = new Map<string, Date>();
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> | null = null;
  /** Cursor passes, one at a time; one asked for during another runs after a short pause (CONFIRM_PAUSE_MS). */
  private readonly cursorPasses = new CoalescedPasses(() => !this.stopped, async (again) => {
    if (again) await new Promise((resolve) => setTimeout(resolve, CONFIRM_PAUSE_MS));
    await this.advanceCursors().catch((err: Error) => {
      if (err instanceof IndexerNotReadyError || isUndefinedTable(err)) this.log.debug("indexer views not published yet");
      else this.log.error({ err }, "confirmation pass failed");
    });
  });
  private chainConfirming: Promise<void> | null = null;
  /** Kinds whose cursor row this process has made sure exists. */
  private readonly cursorsEnsured = new Set<string>();
  /** Operations whose last attempt here found the node unreachable: retried as soon as it answers again. */
  private readonly waitingForNode = new Set<string>();
  private stopped = true;

  constructor(private readonly deps: ChainOperationsDeps) {
    this.log = deps.logger.child({ component: "chain-operations" });
    this.confirmations.setMaxListeners(0);
  }

  register<F>(kind: ChainOperationKind<F>): void {
    if (this.kinds.has(kind.kind)) throw new Error(`chain operation kind ${kind.kind} is registered twice`);
    this.kinds.set(kind.kind, kind);
  }

  /**
   * The projections that fail to record the facts past their block (any process's), oldest failure
   * first: what /readyz reports as degraded.
   */
  async failingProjections(): Promise<{ consumer: string; block: bigint; failingSince: Date; error: string | null }[]> {
    const rows = await this.deps.db
      .selectFrom("chain_cursors")
      .select(["consumer", "block_number", "failing_since", "last_error"])
      .where("consumer", "in", [...this.projections.keys(), ""])
      .where("failing_since", "is not", null)
      .orderBy("failing_since")
      .execute();
    return rows.map((r) => ({ consumer: r.consumer, block: r.block_number, failingSince: r.failing_since!, error: r.last_error }));
  }

  /** Adds a projection of indexed facts (IndexedProjection), advanced with the kinds' cursors. */
  registerProjection<F>(projection: IndexedProjection<F>): void {
    if (this.kinds.has(projection.consumer) || this.projections.has(projection.consumer)) throw new Error(`chain cursor ${projection.consumer} is registered twice`);
    this.projections.set(projection.consumer, projection);
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
    const rows = JSON.stringify(keys.map((key) => ({ key, kind: byKey.get(key)!.kind, payload: byKey.get(key)!.payload })));
    const dueAt = options.runAt ?? sql<Date>`now()`;
    const priority = options.priority ?? 0;
    const { rows: stored } = await sql<ChainOperation>`
      insert into chain_operations as o (key, kind, payload, status, due_at, priority)
      select r.key, r.kind, r.payload, 'pending', ${dueAt}, ${priority}
      from jsonb_to_recordset(${rows}::jsonb) as r(key text, kind text, payload jsonb)
      order by r.key
      on conflict (key) do update set
        status = 'pending', attempts = 0, tx_hash = null, last_error = null, lease_until = null,
        due_at = excluded.due_at, priority = excluded.priority, updated_at = now()
      where o.status = 'failed'
      returning *`.execute(db);
    const found = new Map(stored.map((op) => [op.key, op]));
    const existing = keys.filter((key) => !found.has(key));
    if (existing.length > 0) {
      const { rows: moved } = await sql<ChainOperation>`
        update chain_operations set due_at = least(due_at, ${dueAt}), priority = least(priority, ${priority}), updated_at = now()
        where key = any(${existing}::text[]) and status in ('pending', 'sent') and due_at is not null
        returning *`.execute(db);
      for (const op of moved) found.set(op.key, op);
      const rest = existing.filter((key) => !found.has(key));
      if (rest.length > 0) for (const op of await db.selectFrom("chain_operations").selectAll().where("key", "in", rest).execute()) found.set(op.key, op);
    }
    return inputs.map((input) => found.get(input.key)!);
  }

  /**
   * Waits until `done()` holds, at most `timeoutMs`; whether it did. Woken at once when this process
   * confirms `key`; otherwise re-checked with backoff (50 ms doubling to 500 ms), since another
   * process may confirm it. A request that answers once its chain write is done waits here.
   */
  async waitFor(key: string, done: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (let pause = 50; ; pause = Math.min(pause * 2, 500)) {
      if (await done()) return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.confirmations.off(key, wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, pause));
        this.confirmations.once(key, wake);
      });
    }
  }

  /** The operation of `key`, if requested. */
  find(db: Db, key: string): Promise<ChainOperation | undefined> {
    return db.selectFrom("chain_operations").selectAll().where("key", "=", key).executeTakeFirst();
  }

  /** Which of `keys` are confirmed (their chain write is done, as the indexer or the chain shows it). */
  async confirmedOf(db: Db, keys: readonly string[]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const rows = await db.selectFrom("chain_operations").select("key").where("key", "in", [...keys]).where("status", "=", "confirmed").execute();
    return new Set(rows.map((r) => r.key));
  }

  /** The job of an earlier version: one attempt of its operation, if it is still on its way. */
  readonly task: Task = async (payload) => {
    const key = (payload as { key?: unknown }).key;
    if (typeof key !== "string") throw new Error(`${CHAIN_OPERATION_TASK}: payload without key`);
    await this.run(key);
  };

  /**
   * One attempt of `key` now, whether due or not (if it is still on its way): leases it, then
   * waits for its stored transaction or sends it. Never throws for a chain failure (it records it),
   * only for database trouble. Waits for a concurrent lease of the same row (one statement) rather
   * than skipping it: each call makes its attempt.
   */
  async run(key: string): Promise<void> {
    const [op] = await this.lease(sql`select id from chain_operations where key = ${key} and status in ('pending', 'sent') for update`);
    if (op) await this.attempt(op);
  }

  /** Leases the operations `picked` selects (ids, locked) for an attempt each: attempts + 1, no longer due. */
  private async lease(picked: ReturnType<typeof sql>): Promise<ChainOperation[]> {
    const { rows } = await sql<ChainOperation>`
      update chain_operations as o set
        attempts = o.attempts + 1, due_at = null, updated_at = now(),
        lease_until = now() + ${this.deps.leaseMs} * interval '1 millisecond'
      from (${picked}) as c
      where o.id = c.id
      returning o.*`.execute(this.deps.db);
    return rows;
  }

  /** The attempt of a leased operation. */
  private async attempt(op: ChainOperation): Promise<void> {
    const { db } = this.deps;
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

  /**
   * Claims the operations due now, within their kinds' free slots (after the claim under way, if
   * any), and resolves once that claim has ended; the attempts it started run on. Nothing while
   * stopped.
   */
  claimNow(): Promise<void> {
    return this.claims.request();
  }

  /**
   * Resolves once no attempt runs in this process and the claim after the last one found nothing
   * due: what was due has been attempted, and so has what those attempts made due at once. An
   * operation that comes due later (a backoff, the sweep) is not waited for. Tests wait for this
   * rather than for time.
   */
  async idle(): Promise<void> {
    await this.claimNow();
    while (this.attempts.size > 0 || this.claims.running) await Promise.all([...this.attempts, this.claims.running]);
  }

  /** Makes the interrupted attempts' operations due again (those still waiting on this process's lease). */
  private async releaseInterrupted(): Promise<void> {
    for (const [key, lease] of [...this.interrupted]) {
      await this.deps.db
        .updateTable("chain_operations")
        .set({ due_at: sql<Date>`now()`, lease_until: null, updated_at: sql<Date>`now()` })
        .where("key", "=", key)
        .where("status", "in", ["pending", "sent"])
        .where("due_at", "is", null)
        // The lease this attempt took (read back to the millisecond; Postgres keeps microseconds).
        .where(sql`abs(extract(epoch from lease_until - ${lease}::timestamptz))`, "<", 0.001)
        .execute();
      this.interrupted.delete(key);
    }
  }

  /** Claims due operations of this process's kinds while they have free slots, and starts their attempts. */
  private async claimDue(): Promise<void> {
    while (!this.stopped) {
      const slots = [...this.kinds.values()]
        .map((kind) => ({ kind: kind.kind, free: (kind.concurrency ?? this.deps.concurrency ?? 32) - (this.attemptsOfKind.get(kind.kind) ?? 0) }))
        .filter((slot) => slot.free > 0);
      if (slots.length === 0) return;
      const ops = await this.claimPerKind(slots);
      for (const op of ops) {
        this.attemptsOfKind.set(op.kind, (this.attemptsOfKind.get(op.kind) ?? 0) + 1);
        const attempt: Promise<void> = this.attempt(op)
          .catch((err: Error) => {
            this.interrupted.set(op.key, op.lease_until!);
            this.log.error({ key: op.key, err }, "chain operation attempt failed on the database; it is due again once the database answers");
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

  /** Leases due operations for an attempt each, at most `free` of each kind (lower priority first within a kind), in one statement. */
  private claimPerKind(slots: { kind: string; free: number }[]): Promise<ChainOperation[]> {
    return this.lease(sql`
      select d.id
      from unnest(${slots.map((s) => s.kind)}::text[], ${slots.map((s) => s.free)}::int[]) as k(kind, free)
      cross join lateral (
        select id from chain_operations
        where kind = k.kind and status in ('pending', 'sent') and due_at <= now()
        order by priority, due_at, id limit k.free for update skip locked
      ) as d`);
  }

  /** Waits for the transaction of an earlier attempt; false when the node does not know it (send again). */
  private async resume(kind: ChainOperationKind, op: ChainOperation, hash: Hash): Promise<boolean> {
    try {
      await this.deps.publicClient.getTransaction({ hash });
    } catch (err) {
      if (!(err instanceof TransactionNotFoundError)) throw classifyChainError(err, kind.abi, { hash });
      this.log.warn({ key: op.key, hash }, "the earlier transaction is unknown to the node; sending again");
      return false;
    }
    await this.deps.relayer.waitForReceipt(hash, { abi: kind.abi, label: op.key });
    return true;
  }

  /** Stores the transaction hash of operations just sent (one statement for a batch). */
  async recordSent(keys: readonly string[], hash: Hash): Promise<void> {
    if (keys.length === 0) return;
    await this.deps.db
      .updateTable("chain_operations")
      .set({ status: "sent", tx_hash: hash, updated_at: sql<Date>`now()` })
      .where("key", "in", [...keys])
      .where("status", "in", ["pending", "sent"])
      .execute();
  }

  /** A sent operation of a kind `confirmedBySend`, confirmed from the chain once its transaction is mined. */
  private async confirmMined(kind: ChainOperationKind, key: string): Promise<void> {
    const op = await this.find(this.deps.db, key);
    if (op?.status === "sent") await this.confirmFacts(kind, await kind.readFromChain([op]), "chain");
  }

  /** A permanent failure or the last attempt fails the operation; anything else is retried with backoff. */
  private async recordFailure(kind: ChainOperationKind, op: ChainOperation, err: unknown): Promise<void> {
    const permanent = (err instanceof ChainOperationFailure && err.kind === "permanent") || err instanceof PermanentChainError;
    const reason = describe(err);
    if (permanent || op.attempts >= kind.maxAttempts) {
      const final = permanent ? reason : `${reason} (gave up after ${op.attempts} attempts)`;
      this.log.warn({ key: op.key, attempts: op.attempts, err: final }, "chain operation failed");
      await this.fail(kind, op.key, final);
      return;
    }
    const base = Math.min(kind.retryBaseMs * 2 ** (op.attempts - 1), MAX_RETRY_DELAY_MS);
    const delayMs = Math.round(base * (0.8 + Math.random() * 0.4));
    this.log.info({ key: op.key, attempts: op.attempts, retry_in_ms: delayMs, err: reason }, "chain operation attempt failed; retrying");
    await this.deps.db.transaction().execute(async (trx) => {
      const scheduled = await trx
        .updateTable("chain_operations")
        .set({ due_at: sql<Date>`now() + ${delayMs} * interval '1 millisecond'`, lease_until: null, last_error: reason, updated_at: sql<Date>`now()` })
        .where("key", "=", op.key)
        .where("status", "in", ["pending", "sent"])
        .returningAll()
        .executeTakeFirst();
      if (scheduled) await kind.onRetry?.(trx, scheduled, reason, delayMs);
    });
    if (nodeUnreachable(err)) this.waitingForNode.add(op.key);
  }

  /**
   * The node answered (the worker's indexer-lag sampler read its head): the operations whose last
   * attempt found it unreachable are retried now rather than when their backoff ends, which after
   * an outage of a minute can be another minute away.
   */
  private retryWaitingForNode(): void {
    if (this.waitingForNode.size === 0 || this.stopped) return;
    const keys = [...this.waitingForNode];
    this.waitingForNode.clear();
    void (async () => {
      const due = await this.deps.db
        .updateTable("chain_operations")
        .set({ due_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
        .where("key", "in", keys)
        .where("status", "in", ["pending", "sent"])
        .where("due_at", "is not", null)
        .returning("key")
        .execute();
      if (due.length > 0) this.log.info({ keys: due.map((op) => op.key) }, "the chain node answers again: retrying the operations that waited for it");
    })().catch((err: Error) => {
      for (const key of keys) this.waitingForNode.add(key);
      this.log.warn({ err: err.message }, "could not retry the operations that waited for the node; their backoff still runs");
    });
  }

  /** Fails the operation for good (unless it was confirmed or failed meanwhile) and tells its kind. */
  async fail(kind: ChainOperationKind, key: string, reason: string): Promise<void> {
    await this.deps.db.transaction().execute(async (trx) => {
      const failed = await trx
        .updateTable("chain_operations")
        .set({ status: "failed", last_error: reason, lease_until: null, due_at: null, updated_at: sql<Date>`now()` })
        .where("key", "=", key)
        .where("status", "in", ["pending", "sent"])
        .returningAll()
        .executeTakeFirst();
      if (failed) await kind.onFailed(trx, failed, reason);
    });
  }

  // ---- confirmation ----

  start(): void {
    this.stopped = false;
    this.listener = new IndexerListener({
      databaseUrl: this.deps.databaseUrl,
      viewsSchema: this.deps.viewsSchema,
      onNotify: () => this.poke(),
      onReady: () => this.poke(),
      logger: this.log,
    });
    this.listener.start();
    // Due operations: announced by the table's NOTIFY; a poll finds those whose backoff ended.
    this.dueListener = new NotificationListener({
      databaseUrl: this.deps.databaseUrl,
      channel: CHAIN_OPERATIONS_DUE_CHANNEL,
      name: "chain-operations-due",
      onNotify: () => this.wakeClaims(),
      onReady: () => this.wakeClaims(),
      logger: this.log,
    });
    this.dueListener.start();
    const poll = () => {
      this.dueTimer = setTimeout(() => {
        this.wakeClaims();
        if (!this.stopped) poll();
      }, this.deps.duePollMs ?? 1_000);
    };
    poll();
    const sweep = () => {
      this.sweepTimer = setTimeout(() => {
        this.sweeping = this.sweep().finally(() => {
          this.sweeping = null;
          if (!this.stopped) sweep();
        });
      }, this.deps.sweepIntervalMs);
    };
    sweep();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    if (this.dueTimer) clearTimeout(this.dueTimer);
    await Promise.all([this.listener?.stop(), this.dueListener?.stop()]);
    await Promise.all([this.cursorPasses.running, this.sweeping, this.chainConfirming, this.claims.running]);
    // Attempts under way finish (each waits for its receipt); one that outlasts the wait keeps its
    // lease, and the sweep of another process takes it up once the lease has run out.
    if (this.attempts.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(this.attempts), new Promise((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS)))]);
      clearTimeout(timer);
    }
  }

  /** Asks for a cursor pass; passes never overlap, and a request during one runs another after it. */
  poke(): void {
    void this.cursorPasses.request();
  }

  /**
   * Reads the kinds' newly indexed rows up to the indexer's block; confirms and reconciles what they
   * settle. How many were confirmed. One transaction a step for all kinds: the cursors' rows locked
   * (one process at a time reads a kind's blocks; the others skip it), and only the kinds with
   * operations still open (pending, sent, or confirmed from the chain and not yet indexed) read the
   * indexer; the others' cursors just move on (nothing in those blocks can settle an operation
   * requested later: it is sent after this read, so mined in a later block). Projections read
   * every block first, each on its own (advanceProjection).
   */
  async advanceCursors(): Promise<number> {
    const indexedBlock = this.deps.indexedBlock
      ? await this.deps.indexedBlock()
      : (await readIndexerStatus({ db: this.deps.db, viewsSchema: this.deps.viewsSchema, chainId: this.deps.chainId })).indexedBlock;
    if (indexedBlock === null) return 0;
    const kinds = [...this.kinds.keys()];
    await this.ensureCursors([...kinds, ...this.projections.keys()]);
    // Each projection in transactions of its own: one that fails waits for the next pass alone.
    for (const projection of this.projections.values()) {
      // A deadlock with a transaction of another path (PostgreSQL aborts one), or a row that path
      // added meanwhile, is tried again at once: the next pass may be a block or a sweep away.
      for (let attempt = 1; ; attempt++) {
        try {
          await this.advanceProjection(projection, indexedBlock);
          break;
        } catch (err) {
          const code = (err as { code?: string }).code;
          if (attempt < 3 && (code === "40P01" || code === "40001" || code === "23505")) continue;
          this.log.error({ err, consumer: projection.consumer }, "projection of indexed facts failed; retried at the next pass");
          await this.deps.db
            .updateTable("chain_cursors")
            .set({ failing_since: sql<Date>`coalesce(failing_since, now())`, last_error: String((err as Error)?.message ?? err).slice(0, 500) })
            .where("consumer", "=", projection.consumer)
            .execute()
            .catch((recordErr: unknown) => this.log.error({ err: recordErr, consumer: projection.consumer }, "could not record the projection's failure"));
          break;
        }
      }
    }
    if (kinds.length === 0) return 0;
    const settledKeys: string[] = [];
    for (;;) {
      const step = await this.deps.db.transaction().execute(async (trx) => {
        const open = new Set(
          (
            await sql<{ kind: string }>`
              select distinct kind from chain_operations
              where kind = any(${kinds}::text[]) and (status in ('pending', 'sent') or (status = 'confirmed' and indexed_at is null))`.execute(trx)
          ).rows.map((r) => r.kind),
        );
        const cursors = await trx
          .selectFrom("chain_cursors")
          .select(["consumer", "block_number"])
          .where("consumer", "in", kinds)
          .where("block_number", "<", indexedBlock)
          .orderBy("consumer")
          .forUpdate()
          .skipLocked()
          .execute();
        if (cursors.length === 0) return null;
        const keys: string[] = [];
        const moves: { consumer: string; to: bigint }[] = [];
        for (const cursor of cursors) {
          const to = cursor.block_number + CURSOR_SPAN < indexedBlock ? cursor.block_number + CURSOR_SPAN : indexedBlock;
          const kind = this.kinds.get(cursor.consumer)!;
          if (open.has(kind.kind)) keys.push(...(await this.applyFacts(trx, kind, await kind.readIndexed(cursor.block_number, to), "indexer")));
          moves.push({ consumer: cursor.consumer, to });
        }
        await sql`
          update chain_cursors as c set block_number = m.to::bigint, updated_at = now()
          from jsonb_to_recordset(${JSON.stringify(moves.map((m) => ({ consumer: m.consumer, to: m.to.toString() })))}::jsonb) as m(consumer text, "to" text)
          where c.consumer = m.consumer`.execute(trx);
        return { keys, done: moves.every((m) => m.to >= indexedBlock) };
      });
      if (!step) break;
      settledKeys.push(...step.keys);
      if (step.done) break;
    }
    this.announce(settledKeys);
    return settledKeys.length;
  }

  /**
   * Reads a projection's facts past the block this process has read up to (from its cursor row at
   * first), a span at a time, outside any transaction: most blocks hold none, and cost one read.
   * Facts are applied in a transaction holding the cursor's row, which then moves past them; another
   * process, or this one after a restart, may apply them again (apply is idempotent).
   */
  private async advanceProjection(projection: IndexedProjection, indexedBlock: bigint): Promise<void> {
    const { db } = this.deps;
    let from: bigint =
      this.projectionRead.get(projection.consumer) ??
      (await db.selectFrom("chain_cursors").select("block_number").where("consumer", "=", projection.consumer).executeTakeFirstOrThrow()).block_number;
    while (from < indexedBlock) {
      const to: bigint = from + CURSOR_SPAN < indexedBlock ? from + CURSOR_SPAN : indexedBlock;
      const facts = await projection.read(from, to);
      if (facts.length > 0) {
        await db.transaction().execute(async (trx) => {
          await trx.selectFrom("chain_cursors").select("block_number").where("consumer", "=", projection.consumer).forUpdate().executeTakeFirstOrThrow();
          await projection.apply(trx, facts);
          await trx.updateTable("chain_cursors").set({ block_number: String(to), updated_at: sql<Date>`now()` }).where("consumer", "=", projection.consumer).where("block_number", "<", to).execute();
          await trx.updateTable("chain_cursors").set({ failing_since: null, last_error: null }).where("consumer", "=", projection.consumer).where("failing_since", "is not", null).execute();
        });
      }
      from = to;
      this.projectionRead.set(projection.consumer, to);
    }
  }

  /** Creates the cursors of `kinds` that do not exist yet (a new kind starts at the contracts' first block); once per process. */
  private async ensureCursors(kinds: string[]): Promise<void> {
    const missing = kinds.filter((kind) => !this.cursorsEnsured.has(kind));
    if (missing.length === 0) return;
    await this.deps.db
      .insertInto("chain_cursors")
      .values(missing.map((consumer) => ({ consumer, block_number: String(this.deps.startBlock - 1) })))
      .onConflict((oc) => oc.column("consumer").doNothing())
      .execute();
    for (const kind of missing) this.cursorsEnsured.add(kind);
  }

  /**
   * Records `facts` in `trx`: operations not yet confirmed become confirmed (from `source`) and go to
   * the kind's onConfirmed; with the indexer as source, operations confirmed from the chain become
   * indexed (onIndexed). Rows are locked, so concurrent sources and processes record each once.
   * The keys confirmed now.
   */
  private async applyFacts(trx: Transaction<Database>, kind: ChainOperationKind, facts: KeyedFacts<unknown>[], source: "indexer" | "chain"): Promise<string[]> {
    if (facts.length === 0) return [];
    const byKey = new Map(facts.map((f) => [f.key, f.facts]));
    const ops = await trx
      .selectFrom("chain_operations")
      .selectAll()
      .where("key", "in", [...byKey.keys()])
      .where("kind", "=", kind.kind)
      .orderBy("id")
      .forUpdate()
      .execute();
    const toConfirm = ops.filter((op) => op.status !== "confirmed");
    const toIndex = source === "indexer" ? ops.filter((op) => op.status === "confirmed" && op.indexed_at === null) : [];
    if (toConfirm.length > 0) {
      const keys = toConfirm.map((op) => op.key);
      await sql`
        update chain_operations as o set
          status = 'confirmed', result = r.result, confirmed_from = ${source}, confirmed_at = now(),
          indexed_at = ${source === "indexer" || kind.confirmedBySend ? sql`now()` : null}, lease_until = null, due_at = null, last_error = null, updated_at = now()
        from jsonb_to_recordset(${resultsJson(keys, byKey)}::jsonb) as r(key text, result jsonb)
        where o.key = r.key`.execute(trx);
      await kind.onConfirmed(trx, toConfirm.map((op) => ({ op, facts: byKey.get(op.key), source })));
    }
    if (toIndex.length > 0) {
      const keys = toIndex.map((op) => op.key);
      await sql`
        update chain_operations as o set result = r.result, indexed_at = now(), updated_at = now()
        from jsonb_to_recordset(${resultsJson(keys, byKey)}::jsonb) as r(key text, result jsonb)
        where o.key = r.key`.execute(trx);
      await kind.onIndexed?.(trx, toIndex.map((op) => ({ op, facts: byKey.get(op.key) })));
    }
    return toConfirm.map((op) => op.key);
  }

  private async confirmFacts(kind: ChainOperationKind, facts: KeyedFacts<unknown>[], source: "indexer" | "chain"): Promise<number> {
    if (facts.length === 0) return 0;
    const keys = await this.deps.db.transaction().execute((trx) => this.applyFacts(trx, kind, facts, source));
    this.announce(keys);
    return keys.length;
  }

  private announce(keys: string[]): void {
    for (const key of keys) this.confirmations.emit(key);
  }

  /**
   * Each verdict of the IndexerLagMonitor (it gives one only when it could read the chain head): what
   * waited for the node is retried, and while the indexer lags, the chain confirms (one pass at a time).
   */
  onIndexerLag(state: IndexerLagState): void {
    this.retryWaitingForNode();
    if (!state.lagging || this.stopped || this.chainConfirming) return;
    this.chainConfirming = this.confirmFromChain()
      .then(() => undefined)
      .catch((err: Error) => this.log.warn({ err: err.message }, "confirmation from the chain failed; trying again at the next sample"))
      .finally(() => {
        this.chainConfirming = null;
      });
  }

  /** Confirms sent operations from the chain itself (the kind reads receipts or the contract); how many. */
  async confirmFromChain(): Promise<number> {
    let total = 0;
    for (const kind of this.kinds.values()) {
      let after = 0n;
      for (;;) {
        const ops = await this.deps.db
          .selectFrom("chain_operations")
          .selectAll()
          .where("kind", "=", kind.kind)
          .where("status", "=", "sent")
          .where("id", ">", after)
          .orderBy("id")
          .limit(PAGE)
          .execute();
        if (ops.length > 0) total += await this.confirmFacts(kind, await kind.readFromChain(ops), "chain");
        if (ops.length < PAGE) break;
        after = ops.at(-1)!.id;
      }
    }
    return total;
  }

  /**
   * The safety net: a cursor pass (what a lost notification missed), then the operations whose
   * attempt's lease ran out: those the indexer shows are confirmed (their block was read before
   * they were watched), the others made due again (their process died between send and receipt).
   */
  async sweep(): Promise<void> {
    this.poke();
    try {
      const reclaimed = await this.deps.db
        .updateTable("chain_operations")
        .set({ lease_until: sql<Date>`now() + ${this.deps.leaseMs} * interval '1 millisecond'` })
        .where("id", "in", (eb) =>
          eb
            .selectFrom("chain_operations")
            .select("id")
            .where("status", "in", ["pending", "sent"])
            .where("due_at", "is", null)
            .where("lease_until", "<", sql<Date>`now() - ${LEASE_GRACE_MS} * interval '1 millisecond'`)
            .orderBy("lease_until")
            .limit(PAGE)
            .forUpdate()
            .skipLocked(),
        )
        .returningAll()
        .execute();
      if (reclaimed.length === 0) return;
      for (const [kindName, ops] of groupBy(reclaimed, (op) => op.kind)) {
        const kind = this.kinds.get(kindName);
        if (!kind) continue; // a kind of another deployment: its processes sweep it
        const found = await kind.lookupIndexed(ops).catch((err: Error) => {
          if (err instanceof IndexerNotReadyError) return [];
          throw err;
        });
        await this.confirmFacts(kind, found, "indexer");
        const confirmed = new Set(found.map((f) => f.key));
        const lost = ops.filter((op) => !confirmed.has(op.key));
        if (lost.length === 0) continue;
        await this.deps.db
          .updateTable("chain_operations")
          .set({ due_at: sql<Date>`now()`, lease_until: null, updated_at: sql<Date>`now()` })
          .where("key", "in", lost.map((op) => op.key))
          .where("status", "in", ["pending", "sent"])
          .where("due_at", "is", null)
          .execute();
        this.log.warn({ keys: lost.map((op) => op.key) }, "chain operations whose attempt was lost are due again");
      }
    } catch (err) {
      this.log.error({ err }, "chain operations sweep failed");
    }
  }

  private kindOf(op: ChainOperation): ChainOperationKind {
    const kind = this.kinds.get(op.kind);
    if (!kind) throw new Error(`chain operation ${op.key}: kind ${op.kind} is not registered in this process`);
    return kind;
  }
}

function resultsJson(keys: string[], byKey: Map<string, unknown>): string {
  return JSON.stringify(
    keys.map((key) => ({ key, result: byKey.get(key) })),
    (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v),
  );
}

function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
  return groups;
}

function isUndefinedTable(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === "42P01" || code === "3F000";
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

/**
 * Runs passes of `pass` one at a time while `active()`: a request during a pass runs one more after
 * it (`again` true for that one).
 */
class CoalescedPasses {
  running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly active: () => boolean,
    private readonly pass: (again: boolean) => Promise<void>,
  ) {}

  /** Resolves once a pass begun after this request has ended (at once while inactive). */
  request(): Promise<void> {
    if (!this.active()) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      let again = false;
      do {
        this.again = false;
        await this.pass(again);
        again = true;
      } while (this.again && this.active());
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }
}
