import pg from "pg";
import type { Logger } from "pino";

const MIN_RETRY_MS = 250;
const MAX_RETRY_MS = 10_000;

/**
 * A Postgres session of its own that a process keeps open for what lives as long as the session does
 * (a LISTEN, a session-level advisory lock), where a pooled connection would drop it when released.
 * `setup` runs on every (re)connect; a lost connection is reopened with backoff: `onLost` runs when
 * it drops, `onReady` after every setup, so the caller can catch up on what it missed meanwhile.
 */
export class HeldSession {
  private client: pg.Client | null = null;
  private stopped = false;
  private retryMs = MIN_RETRY_MS;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly options: {
      databaseUrl: string;
      /** Names the connection (`application_name`) and the log lines. */
      name: string;
      /** What the session holds, set up again on every connection. */
      setup: (client: pg.Client) => Promise<void>;
      onNotify?: (message: pg.Notification) => void;
      onReady?: () => void;
      onLost?: () => void;
      logger: Logger;
    },
  ) {}

  start(): void {
    this.stopped = false;
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.options.databaseUrl, application_name: `art-platform-api ${this.options.name}` });
    let failed = false;
    const lost = (err?: Error) => {
      if (failed) return;
      failed = true;
      if (this.client === client) this.client = null;
      void client.end().catch(() => {});
      this.options.onLost?.();
      if (this.stopped) return;
      this.options.logger.warn({ err: err?.message, retry_ms: this.retryMs }, `${this.options.name}: its database session was lost; reconnecting`);
      this.timer = setTimeout(() => void this.connect(), this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
    };
    client.on("error", lost);
    client.on("end", () => lost());
    const onNotify = this.options.onNotify;
    if (onNotify) client.on("notification", onNotify);
    try {
      await client.connect();
      await this.options.setup(client);
    } catch (err) {
      lost(err as Error);
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.retryMs = MIN_RETRY_MS;
    this.options.onReady?.();
  }
}
