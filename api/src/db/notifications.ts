import { EventEmitter } from "node:events";
import { type Kysely, sql } from "kysely";
import pg from "pg";
import type { Logger } from "pino";

/**
 * `LISTEN` on one Postgres channel, on a connection of its own (a pooled one would drop the LISTEN
 * when released). A lost connection is reopened with backoff: `onLost` runs when it drops (what
 * was learnt from notifications can no longer be trusted to be current) and `onReady` after every
 * (re)connect, so the caller can catch up on what it may have missed meanwhile.
 */
export class NotificationListener {
  private client: pg.Client | null = null;
  private stopped = false;
  private retryMs = MIN_RETRY_MS;
  private timer: NodeJS.Timeout | null = null;
  private readonly local = (payload: string) => this.options.onNotify(payload);

  constructor(
    private readonly options: {
      databaseUrl: string;
      channel: string;
      /** Names the connection (`application_name`) and the log lines. */
      name: string;
      onNotify: (payload: string) => void;
      onReady: () => void;
      onLost?: () => void;
      logger: Logger;
    },
  ) {}

  start(): void {
    this.stopped = false;
    localNotifications.on(this.options.channel, this.local);
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    localNotifications.off(this.options.channel, this.local);
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
      this.options.logger.warn({ err: err?.message, retry_ms: this.retryMs, channel: this.options.channel }, `${this.options.name}: notification connection lost; reconnecting`);
      this.timer = setTimeout(() => void this.connect(), this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
    };
    client.on("error", lost);
    client.on("end", () => lost());
    client.on("notification", (message) => this.options.onNotify(message.payload ?? ""));
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.options.channel)}`);
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

/** NOTIFYs `channel` (the other processes' listeners hear it once the caller's transaction commits). */
export async function notifyOnCommit(db: Kysely<any>, channel: string, payload = ""): Promise<void> {
  await sql`select pg_notify(${channel}, ${payload})`.execute(db);
}

/** This process's listeners of each channel, told synchronously by `notifyLocally`. */
const localNotifications = new EventEmitter().setMaxListeners(0);

/**
 * Tells this process's listeners of `channel` at once, beside the database's NOTIFY (which the
 * other processes receive shortly after the commit): the change's own process never acts on what
 * it just changed, not even for the moment the notification takes.
 */
export function notifyLocally(channel: string, payload: string): void {
  localNotifications.emit(channel, payload);
}

/**
 * The channel on which a user's credentials changed (a role, a status, a key; the payload is the
 * user's id): the tables' triggers NOTIFY it (migration 2026_11_25_0019), and the auth module's
 * credential cache forgets the user on it. Here, below both the users and the auth modules, which
 * both say it.
 */
export const CREDENTIALS_CHANGED = "credentials_changed";

/** Tells every process that `userId`'s credentials changed (this one at once; others by the triggers' NOTIFY). */
export function credentialsChanged(userId: string): void {
  notifyLocally(CREDENTIALS_CHANGED, userId);
}

const MIN_RETRY_MS = 250;
const MAX_RETRY_MS = 10_000;
