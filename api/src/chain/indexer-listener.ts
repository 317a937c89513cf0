import pg from "pg";
import type { Logger } from "pino";
import { indexerNotifyChannel } from "./indexer-schema.ts";

/**
 * Tells the API as soon as the indexer has projected a new block: `LISTEN` on the channel Ponder
 * NOTIFYs after each block, on a connection of its own (a pooled one would drop the LISTEN when
 * released). A lost connection is reopened with backoff; `onReady` runs after every (re)connect,
 * so the caller can catch up on what it may have missed meanwhile.
 */
export class IndexerListener {
  private client: pg.Client | null = null;
  private stopped = false;
  private retryMs = MIN_RETRY_MS;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly options: {
      databaseUrl: string;
      viewsSchema: string;
      onNotify: () => void;
      onReady: () => void;
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
    const client = new pg.Client({ connectionString: this.options.databaseUrl, application_name: "art-platform-api indexer-listener" });
    let failed = false;
    const lost = (err?: Error) => {
      if (failed) return;
      failed = true;
      if (this.client === client) this.client = null;
      void client.end().catch(() => {});
      if (this.stopped) return;
      this.options.logger.warn({ err: err?.message, retry_ms: this.retryMs }, "indexer notification connection lost; reconnecting");
      this.timer = setTimeout(() => void this.connect(), this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
    };
    client.on("error", lost);
    client.on("end", () => lost());
    client.on("notification", () => this.options.onNotify());
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(indexerNotifyChannel(this.options.viewsSchema))}`);
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
    this.options.onReady();
  }
}

const MIN_RETRY_MS = 250;
const MAX_RETRY_MS = 10_000;
