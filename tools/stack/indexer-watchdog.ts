import { type IndexerLagBounds, type IndexerLagSample, type IndexerLagState, IndexerLagTracker, describeLag, lagSampleIntervalMs } from "../../api/src/chain/indexer-lag.ts";

export interface IndexerWatchdogOptions extends IndexerLagBounds {
  /** The indexer's block against the chain head; null when the chain itself cannot be read (no verdict then). */
  probe: () => Promise<IndexerLagSample | null>;
  /** Replaces the indexer process; resolves once the new one is up (or throws: tried again after the next stall). */
  restart: (reason: string) => Promise<void>;
  log: (line: string) => void;
  intervalMs?: number;
  now?: () => number;
}

/**
 * Restarts an indexer that has stopped following the chain. Ponder's websocket feed can stay open
 * and deliver nothing, while its /ready still answers 200: only its indexed block against the chain
 * head shows it. Behind the head with no new block indexed for `stallMs` counts as stalled; an
 * indexer that is behind but progressing (a backfill) is left alone, since a restart would not help.
 */
export class IndexerWatchdog {
  private readonly tracker: IndexerLagTracker;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopping = false;
  /** Restarts done, for reports and tests. */
  restarts = 0;

  constructor(private readonly options: IndexerWatchdogOptions) {
    this.tracker = new IndexerLagTracker(options);
  }

  /** One look: restarts the indexer when it is stalled. Returns the verdict (null without one). */
  async check(): Promise<IndexerLagState | null> {
    const sample = await this.options.probe().catch(() => null);
    if (!sample) return null;
    const state = this.tracker.observe(sample, (this.options.now ?? Date.now)());
    if (!state.stalled || this.stopping) return state;
    const reason = describeLag(state, this.options);
    this.options.log(`The ${reason}.`);
    try {
      await this.options.restart(reason);
      this.restarts++;
    } catch (error) {
      this.options.log(`Restarting the indexer failed: ${(error as Error).message}; trying again after the next stall.`);
    }
    // The new process (or the next attempt) gets a fresh clock.
    this.tracker.reset();
    return state;
  }

  start(): void {
    const tick = () => {
      this.timer = setTimeout(() => {
        this.running = this.check().finally(() => {
          this.running = null;
          if (!this.stopping) tick();
        });
      }, this.options.intervalMs ?? lagSampleIntervalMs(this.options.stallMs));
    };
    tick();
  }

  /** Stops looking; waits for a restart under way to finish (its new process is then the one to stop). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
