/**
 * Whether the indexer keeps up with the chain, judged from outside: Ponder's own /ready stays 200
 * when its websocket stops delivering blocks, so the only trustworthy signal is its indexed block
 * against the chain head, over time. The API uses it (/readyz, confirming certifications from the
 * chain meanwhile), and so does the `npm start` watchdog (restarting a stalled indexer).
 */
import type { Logger } from "pino";

export interface IndexerLagSample {
  /** The indexer's last indexed block; null when it cannot be read (no checkpoint yet, or the indexer does not answer). */
  indexedBlock: bigint | null;
  headBlock: bigint;
}

export interface IndexerLagState {
  indexedBlock: bigint | null;
  headBlock: bigint;
  /** head - indexed; null while the indexed block is unknown. */
  lagBlocks: number | null;
  /** Since when (the tracker's clock, ms) the indexer has been behind the head without indexing a new block; null when not. */
  stuckSince: number | null;
  /** Since when it has been more than `maxLagBlocks` behind (or unreadable); null when not. */
  farBehindSince: number | null;
  /** Behind the head with no new block indexed for `stallMs` or more: restarting it is the cure. */
  stalled: boolean;
  /** Stalled, or more than `maxLagBlocks` behind for `stallMs` or more: do not wait for it. */
  lagging: boolean;
  /** How long it has been stuck (when stalled), for reports. */
  stalledForMs: number | null;
}

/** What /readyz asks of the indexer (api/src/modules/health/health.routes.ts). */
export interface IndexerProbe {
  /** The last block the indexer has projected, or null when it has none yet. */
  indexedBlock(): Promise<bigint | null>;
  /** The lag monitor's latest verdict over time (a stall shows only over time); null before its first sample. */
  lag?(): IndexerLagState | null;
  stallTimeoutMs?: number;
}

export interface IndexerLagBounds {
  /** More blocks behind than this counts as far behind. */
  maxLagBlocks: number;
  /** How long the indexer may stay stuck or far behind before it counts as stalled / lagging. */
  stallMs: number;
}

/** The pure judgement: feed it samples with the time they were taken. */
export class IndexerLagTracker {
  private lastIndexed: bigint | null = null;
  private last: IndexerLagState | null = null;

  constructor(private readonly bounds: IndexerLagBounds) {}

  observe(sample: IndexerLagSample, now: number): IndexerLagState {
    const { indexedBlock, headBlock } = sample;
    const behind = indexedBlock === null || indexedBlock < headBlock;
    // An unreadable indexer is no progress; any other change of its block is (a reorg may lower it).
    const progressed = indexedBlock !== null && indexedBlock !== this.lastIndexed;
    if (indexedBlock !== null) this.lastIndexed = indexedBlock;
    const stuckSince = !behind ? null : progressed ? now : (this.last?.stuckSince ?? now);
    const lagBlocks = indexedBlock === null ? null : Number(headBlock - indexedBlock);
    const farBehind = lagBlocks === null || lagBlocks > this.bounds.maxLagBlocks;
    const farBehindSince = farBehind ? (this.last?.farBehindSince ?? now) : null;
    const stalled = stuckSince !== null && now - stuckSince >= this.bounds.stallMs;
    const lagging = stalled || (farBehindSince !== null && now - farBehindSince >= this.bounds.stallMs);
    this.last = {
      indexedBlock,
      headBlock,
      lagBlocks,
      stuckSince,
      farBehindSince,
      stalled,
      lagging,
      stalledForMs: stalled ? now - stuckSince! : null,
    };
    return this.last;
  }

  get state(): IndexerLagState | null {
    return this.last;
  }

  /** Forgets the history (after the indexer was restarted: a new process deserves a new clock). */
  reset(): void {
    this.lastIndexed = null;
    this.last = null;
  }
}

/** Behind the head without a new block this long, the indexer's answers are stale rather than a block late (a local chain indexes each block within tens of ms). */
export const STALE_AFTER_MS = 2_000;

/**
 * How stale the indexer's projection is now: the blocks it is behind the head when it has made no
 * progress for STALE_AFTER_MS or more, else null. Answers drawn from it (owners, transfers,
 * shareholders) say so (the `Indexer-Lag` header) and /readyz says `degraded`.
 */
export function staleness(state: IndexerLagState | null, now: number): { lagBlocks: number | null; behindForMs: number } | null {
  if (!state || state.stuckSince === null) return null;
  const behindForMs = now - state.stuckSince;
  return behindForMs >= STALE_AFTER_MS ? { lagBlocks: state.lagBlocks, behindForMs } : null;
}

/** One line for logs and /readyz: where the indexer is, how far behind, and for how long. */
export function describeLag(state: IndexerLagState, bounds: IndexerLagBounds): string {
  const at = state.indexedBlock === null ? "its indexed block is unknown (it does not answer)" : `at block ${state.indexedBlock}`;
  const behind = state.lagBlocks === null ? "" : `, ${state.lagBlocks} blocks behind the chain head ${state.headBlock}`;
  if (state.stalled) {
    return `indexer stalled: ${at}${behind}, no new block indexed for ${Math.round(state.stalledForMs! / 1000)} s (INDEXER_STALL_TIMEOUT_MS ${bounds.stallMs})`;
  }
  return `indexer lagging: ${at}${behind} (max ${bounds.maxLagBlocks}) for more than ${bounds.stallMs} ms`;
}

/** How often to sample for a given stall bound: a few samples per bound, within reason. */
export function lagSampleIntervalMs(stallMs: number): number {
  return Math.min(5_000, Math.max(200, Math.round(stallMs / 5)));
}

/**
 * Samples the indexer against the chain head on a timer and keeps the tracker's verdict; tells
 * `onSample` after each sample (the certification pipeline confirms from the chain while lagging).
 */
export class IndexerLagMonitor {
  private readonly tracker: IndexerLagTracker;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  private wasLagging = false;

  constructor(
    private readonly options: IndexerLagBounds & {
      readIndexed: () => Promise<bigint | null>;
      readHead: () => Promise<bigint>;
      onSample?: (state: IndexerLagState) => void;
      logger: Logger;
      intervalMs?: number;
      now?: () => number;
    },
  ) {
    this.tracker = new IndexerLagTracker(options);
  }

  start(): void {
    this.stopped = false;
    const tick = () => {
      this.timer = setTimeout(() => {
        this.running = this.sample()
          .then(() => undefined)
          .finally(() => {
            this.running = null;
            if (!this.stopped) tick();
          });
      }, this.options.intervalMs ?? lagSampleIntervalMs(this.options.stallMs));
      this.timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** The latest verdict; null before the first sample. */
  get state(): IndexerLagState | null {
    return this.tracker.state;
  }

  /** Takes one sample now; null when the chain head could not be read (no verdict on the indexer then). */
  async sample(): Promise<IndexerLagState | null> {
    const { options } = this;
    let head: bigint;
    try {
      head = await options.readHead();
    } catch {
      return this.tracker.state;
    }
    const indexed = await options.readIndexed().catch(() => null);
    const state = this.tracker.observe({ indexedBlock: indexed, headBlock: head }, (options.now ?? Date.now)());
    if (state.lagging && !this.wasLagging) options.logger.warn({ indexed_block: indexed?.toString(), head_block: head.toString() }, describeLag(state, options));
    if (!state.lagging && this.wasLagging) options.logger.info({ indexed_block: indexed?.toString(), head_block: head.toString() }, "the indexer caught up");
    this.wasLagging = state.lagging;
    options.onSample?.(state);
    return state;
  }
}
