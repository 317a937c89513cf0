import type { ChainOperation } from "../db/database.ts";
import { IndexerNotReadyError } from "./indexer-views.ts";
import { type OperationsContext, PAGE } from "./operations.context.ts";
import type { OperationConfirmation } from "./operations.confirmation.ts";
import * as repo from "./operations.repository.ts";

/** An expired lease counts as lost only after this much more (a re-enqueued live attempt is harmless anyway). */
const LEASE_GRACE_MS = 2_000;

/**
 * Operations whose attempt here ended on a database error (so neither its outcome nor a retry
 * could be recorded), with the lease they took: made due again as soon as the database answers,
 * rather than when the lease runs out (unless another process has claimed them since).
 */
export class InterruptedAttempts {
  private readonly interrupted = new Map<string, Date>();

  constructor(private readonly ctx: OperationsContext) {}

  add(key: string, lease: Date): void {
    this.interrupted.set(key, lease);
  }

  /** Makes the interrupted attempts' operations due again (those still waiting on this process's lease). */
  async release(): Promise<void> {
    for (const [key, lease] of [...this.interrupted]) {
      await repo.releaseLease(this.ctx.deps.db, key, lease);
      this.interrupted.delete(key);
    }
  }
}

/**
 * The safety net, every `sweepIntervalMs`: a cursor pass (what a lost notification missed), then
 * the operations whose attempt's lease ran out: those the indexer shows are confirmed (their block
 * was read before they were watched), the others made due again (their process died between send
 * and receipt).
 */
export class LeaseSweep {
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> | null = null;

  constructor(
    private readonly ctx: OperationsContext,
    private readonly confirmation: OperationConfirmation,
  ) {}

  /** Sweeps at once (a process starting takes up what a dead one left), then every `sweepIntervalMs`. */
  start(): void {
    const next = (delayMs: number) => {
      this.timer = setTimeout(() => {
        this.sweeping = this.sweep().finally(() => {
          this.sweeping = null;
          if (this.ctx.running()) next(this.ctx.deps.sweepIntervalMs);
        });
      }, delayMs);
    };
    next(0);
  }

  /** Sweeps no more; the sweep under way, if any, runs on (see underWay). */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
  }

  async underWay(): Promise<void> {
    await this.sweeping;
  }

  async sweep(): Promise<void> {
    const { deps, log, kinds } = this.ctx;
    this.confirmation.poke();
    try {
      const reclaimed = await repo.reclaimExpired(deps.db, deps.leaseMs, LEASE_GRACE_MS, PAGE, deps.presence?.id ?? null);
      if (reclaimed.length === 0) return;
      for (const [kindName, ops] of groupBy(reclaimed, (op) => op.kind)) {
        const kind = kinds.get(kindName);
        if (!kind) continue; // a kind of another deployment: its processes sweep it
        const found = await kind.lookupIndexed(ops).catch((err: Error) => {
          if (err instanceof IndexerNotReadyError) return [];
          throw err;
        });
        await this.confirmation.confirmFacts(kind, found, "indexer");
        const confirmed = new Set(found.map((f) => f.key));
        const lost = ops.filter((op) => !confirmed.has(op.key));
        if (lost.length === 0) continue;
        await repo.dueNowIfLeased(deps.db, lost.map((op) => op.key));
        log.warn({ keys: lost.map((op) => op.key) }, "chain operations whose attempt was lost are due again");
      }
    } catch (err) {
      log.error({ err }, "chain operations sweep failed");
    }
  }
}

function groupBy(items: ChainOperation[], keyOf: (item: ChainOperation) => string): Map<string, ChainOperation[]> {
  const groups = new Map<string, ChainOperation[]>();
  for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
  return groups;
}
