import { EventEmitter } from "node:events";
import { type Kysely, sql } from "kysely";
import type { Logger } from "pino";
import { HeldSession } from "./held-session.ts";

/**
 * `LISTEN` on one Postgres channel, on a session of its own (HeldSession): `onLost` runs when it
 * drops (what was learnt from notifications can no longer be trusted to be current) and `onReady`
 * after every (re)connect, so the caller can catch up on what it may have missed meanwhile.
 */
export class NotificationListener {
  private readonly session: HeldSession;
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
  ) {
    this.session = new HeldSession({
      databaseUrl: options.databaseUrl,
      name: options.name,
      setup: async (client) => void (await client.query(`LISTEN ${client.escapeIdentifier(options.channel)}`)),
      onNotify: (message) => options.onNotify(message.payload ?? ""),
      onReady: options.onReady,
      onLost: options.onLost,
      logger: options.logger.child({ channel: options.channel }),
    });
  }

  start(): void {
    localNotifications.on(this.options.channel, this.local);
    this.session.start();
  }

  async stop(): Promise<void> {
    localNotifications.off(this.options.channel, this.local);
    await this.session.stop();
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

