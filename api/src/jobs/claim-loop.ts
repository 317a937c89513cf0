import type { Logger } from "pino";
import { NotificationListener } from "../db/notifications.ts";

export interface ClaimLoopOptions {
  /** Names the LISTEN connection and the log lines. */
  name: string;
  /** Told by every transaction that makes work due (NOTIFY, delivered on commit). */
  channel: string;
  /** How often it claims untold: work whose time came, a notification lost while reconnecting. */
  pollMs: number;
  logger: Logger;
  /** One claim and what it starts; true when more may be due at once (a full batch). A throw is logged, and the next wake tries again. */
  claim: () => Promise<boolean>;
}

/**
 * Claims work from a table whenever there may be some: told by NOTIFY on its channel (and after
 * every reconnect of that listener, to catch up), every `pollMs`, and by its owner (`wake`). One
 * claim runs at a time; a wake during a claim makes another claim after it, and so does a full batch.
 */
export class ClaimLoop {
  private listener: NotificationListener | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopping = false;

  constructor(private readonly options: ClaimLoopOptions) {}

  start(databaseUrl: string): void {
    const { name, channel, pollMs, logger } = this.options;
    this.stopping = false;
    this.listener = new NotificationListener({ databaseUrl, channel, name, onNotify: () => this.wake(), onReady: () => this.wake(), logger });
    this.listener.start();
    this.pollTimer = setInterval(() => this.wake(), pollMs);
    this.pollTimer.unref();
    this.wake();
  }

  /** Claims no more; resolves once the claim under way (if any) has ended. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    await this.listener?.stop();
    this.listener = null;
    await this.running;
  }

  wake(): void {
    if (this.stopping) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.claimWhileDue().finally(() => (this.running = null));
  }

  private async claimWhileDue(): Promise<void> {
    do {
      this.again = false;
      try {
        if (await this.options.claim()) this.again = true;
      } catch (err) {
        this.options.logger.error({ err }, `${this.options.name}: the claim failed; trying again at the next wake`);
        return;
      }
    } while (this.again && !this.stopping);
  }
}
