import type { Transaction } from "kysely";
import type { Database } from "../db/database.ts";
import { IndexerNotReadyError } from "./indexer-views.ts";
import type { IndexerLagState } from "./indexer-lag.ts";
import { IndexerListener } from "./indexer-listener.ts";
import { readIndexerStatus } from "./indexer-views.ts";
import { CoalescedPasses, type OperationsContext, PAGE } from "./operations.context.ts";
import type { ChainOperationKind, IndexedProjection, KeyedFacts } from "./operations.kind.ts";
import * as repo from "./operations.repository.ts";
import type { ConfirmationWaiters } from "./operations.waiters.ts";

/**
 * Blocks come in bursts (one per transaction on a local chain): a pass asked for while another ran
 * waits this long first, so that one pass takes several. The first pass after a quiet spell runs at
 * once: a lone certification is not delayed.
 */
const CONFIRM_PAUSE_MS = 15;
/** Blocks read per cursor step (one transaction each). */
const CURSOR_SPAN = 5_000n;

/**
 * Confirmation of sent operations: per kind a cursor (the last indexed block read) advanced over
 * the indexer whenever it notifies, so each pass reads only the newly indexed rows; the modules'
 * projections advanced in the same passes; and, while the indexer lags, confirmation from the chain
 * itself, reconciled when the cursor reaches those blocks. Confirmations are handed to the kind in
 * the transaction that records them.
 */
export class OperationConfirmation {
  private readonly projections = new Map<string, IndexedProjection<any>>();
  /** The block each projection has been read up to in this process. */
  private readonly projectionRead = new Map<string, bigint>();
  /** Kinds whose cursor row this process has made sure exists. */
  private readonly cursorsEnsured = new Set<string>();
  private listener: IndexerListener | null = null;
  /** Cursor passes, one at a time; one asked for during another runs after a short pause (CONFIRM_PAUSE_MS). */
  private readonly cursorPasses = new CoalescedPasses(
    () => this.ctx.running(),
    async (again) => {
      if (again) await new Promise((resolve) => setTimeout(resolve, CONFIRM_PAUSE_MS));
      await this.advanceCursors().catch((err: Error) => {
        if (err instanceof IndexerNotReadyError || repo.isUndefinedTable(err)) this.ctx.log.debug("indexer views not published yet");
        else this.ctx.log.error({ err }, "confirmation pass failed");
      });
    },
  );
  private chainConfirming: Promise<void> | null = null;

  constructor(
    private readonly ctx: OperationsContext,
    private readonly waiters: ConfirmationWaiters,
  ) {}

  registerProjection<F>(projection: IndexedProjection<F>): void {
    if (this.ctx.kinds.has(projection.consumer) || this.projections.has(projection.consumer)) throw new Error(`chain cursor ${projection.consumer} is registered twice`);
    this.projections.set(projection.consumer, projection);
  }

  /** See ChainOperations.failingProjections. */
  async failingProjections(): Promise<{ consumer: string; block: bigint; failingSince: Date; error: string | null }[]> {
    const rows = await repo.failingCursors(this.ctx.deps.db, [...this.projections.keys(), ""]);
    return rows.map((r) => ({ consumer: r.consumer, block: r.block_number, failingSince: r.failing_since!, error: r.last_error }));
  }

  /** Listens to the indexer: each notification (and each reconnect) asks for a cursor pass. */
  start(): void {
    const { deps, log } = this.ctx;
    this.listener = new IndexerListener({ databaseUrl: deps.databaseUrl, viewsSchema: deps.viewsSchema, onNotify: () => this.poke(), onReady: () => this.poke(), logger: log });
    this.listener.start();
  }

  async stopListening(): Promise<void> {
    await this.listener?.stop();
  }

  /** The cursor pass and the chain confirmation under way, if any. */
  async underWay(): Promise<void> {
    await Promise.all([this.cursorPasses.running, this.chainConfirming]);
  }

  /** Asks for a cursor pass; passes never overlap, and a request during one runs another after it. */
  poke(): void {
    void this.cursorPasses.request();
  }

  /** See ChainOperations.advanceCursors. */
  async advanceCursors(): Promise<number> {
    const { deps, log, kinds: registered } = this.ctx;
    const indexedBlock = deps.indexedBlock ? await deps.indexedBlock() : (await readIndexerStatus({ db: deps.db, viewsSchema: deps.viewsSchema, chainId: deps.chainId })).indexedBlock;
    if (indexedBlock === null) return 0;
    const kinds = [...registered.keys()];
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
          log.error({ err, consumer: projection.consumer }, "projection of indexed facts failed; retried at the next pass");
          await repo
            .recordCursorFailure(deps.db, projection.consumer, String((err as Error)?.message ?? err).slice(0, 500))
            .catch((recordErr: unknown) => log.error({ err: recordErr, consumer: projection.consumer }, "could not record the projection's failure"));
          break;
        }
      }
    }
    if (kinds.length === 0) return 0;
    const settledKeys: string[] = [];
    for (;;) {
      const step = await deps.db.transaction().execute(async (trx) => {
        const open = await repo.kindsWithOpen(trx, kinds);
        const cursors = await repo.lockCursorsBehind(trx, kinds, indexedBlock);
        if (cursors.length === 0) return null;
        const keys: string[] = [];
        const moves: { consumer: string; to: bigint }[] = [];
        for (const cursor of cursors) {
          const to = cursor.block_number + CURSOR_SPAN < indexedBlock ? cursor.block_number + CURSOR_SPAN : indexedBlock;
          const kind = registered.get(cursor.consumer)!;
          if (open.has(kind.kind)) keys.push(...(await this.applyFacts(trx, kind, await kind.readIndexed(cursor.block_number, to), "indexer")));
          moves.push({ consumer: cursor.consumer, to });
        }
        await repo.moveCursors(trx, moves);
        return { keys, done: moves.every((m) => m.to >= indexedBlock) };
      });
      if (!step) break;
      settledKeys.push(...step.keys);
      if (step.done) break;
    }
    this.waiters.announce(settledKeys);
    return settledKeys.length;
  }

  /**
   * Reads a projection's facts past the block this process has read up to (from its cursor row at
   * first), a span at a time, outside any transaction: most blocks hold none, and cost one read.
   * Facts are applied in a transaction holding the cursor's row, which then moves past them; another
   * process, or this one after a restart, may apply them again (apply is idempotent).
   */
  private async advanceProjection(projection: IndexedProjection, indexedBlock: bigint): Promise<void> {
    const { db } = this.ctx.deps;
    let from: bigint = this.projectionRead.get(projection.consumer) ?? (await repo.cursorBlock(db, projection.consumer));
    while (from < indexedBlock) {
      const to: bigint = from + CURSOR_SPAN < indexedBlock ? from + CURSOR_SPAN : indexedBlock;
      const facts = await projection.read(from, to);
      if (facts.length > 0) {
        await db.transaction().execute(async (trx) => {
          await repo.cursorBlock(trx, projection.consumer, true);
          await projection.apply(trx, facts);
          await repo.advanceProjectionCursor(trx, projection.consumer, to);
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
    await repo.ensureCursors(this.ctx.deps.db, missing, this.ctx.deps.startBlock - 1);
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
    const ops = await repo.lockOfKind(trx, kind.kind, [...byKey.keys()]);
    const toConfirm = ops.filter((op) => op.status !== "confirmed");
    const toIndex = source === "indexer" ? ops.filter((op) => op.status === "confirmed" && op.indexed_at === null) : [];
    const resultsOf = (keys: string[]) => keys.map((key) => ({ key, result: byKey.get(key) }));
    if (toConfirm.length > 0) {
      await repo.markConfirmed(trx, resultsOf(toConfirm.map((op) => op.key)), source, source === "indexer" || !!kind.confirmedBySend);
      await kind.onConfirmed(trx, toConfirm.map((op) => ({ op, facts: byKey.get(op.key), source })));
    }
    if (toIndex.length > 0) {
      await repo.markIndexed(trx, resultsOf(toIndex.map((op) => op.key)));
      await kind.onIndexed?.(trx, toIndex.map((op) => ({ op, facts: byKey.get(op.key) })));
    }
    return toConfirm.map((op) => op.key);
  }

  /** Records `facts` of `kind` (applyFacts) in a transaction of their own and wakes their waiters; how many were confirmed now. */
  async confirmFacts(kind: ChainOperationKind, facts: KeyedFacts<unknown>[], source: "indexer" | "chain"): Promise<number> {
    if (facts.length === 0) return 0;
    const keys = await this.ctx.deps.db.transaction().execute((trx) => this.applyFacts(trx, kind, facts, source));
    this.waiters.announce(keys);
    return keys.length;
  }

  /** While the indexer lags (the lag monitor's verdict), the chain confirms: one pass at a time. */
  confirmWhileLagging(state: IndexerLagState): void {
    if (!state.lagging || !this.ctx.running() || this.chainConfirming) return;
    this.chainConfirming = this.confirmFromChain()
      .then(() => undefined)
      .catch((err: Error) => this.ctx.log.warn({ err: err.message }, "confirmation from the chain failed; trying again at the next sample"))
      .finally(() => {
        this.chainConfirming = null;
      });
  }

  /** See ChainOperations.confirmFromChain. */
  async confirmFromChain(): Promise<number> {
    let total = 0;
    for (const kind of this.ctx.kinds.values()) {
      let after = 0n;
      for (;;) {
        const ops = await repo.sentPage(this.ctx.deps.db, kind.kind, after, PAGE);
        if (ops.length > 0) total += await this.confirmFacts(kind, await kind.readFromChain(ops), "chain");
        if (ops.length < PAGE) break;
        after = ops.at(-1)!.id;
      }
    }
    return total;
  }
}
