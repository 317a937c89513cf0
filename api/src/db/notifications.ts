import { EventEmitter } from "node:events";
import { type Kysely, sql } from "kysely";
import type pg from "pg";
import type { Logger } from "pino";
import { HeldSession } from "./held-session.ts";

/**
 * `LISTEN` on one Postgres channel. A process's listeners share one session per database
 * (`ListeningSession`, application_name `art-platform-api notifications`) rather than a connection
 * each: `onReady` runs once the channel is LISTENed on the session's current connection (after
 * every reconnect too), so the caller can catch up on what it may have missed meanwhile; `onLost`
 * when that connection drops (what was learnt from notifications can no longer be trusted to be
 * current), and when a listener that was ready stops.
 */
export class NotificationListener {
  /** LISTENed on the session's current connection, told by `onReady` and not lost since. */
  ready = false;
  private session: ListeningSession | null = null;
  private readonly local = (payload: string) => this.options.onNotify(payload);

  constructor(
    readonly options: {
      databaseUrl: string;
      channel: string;
      /** Names the listener in the log lines. */
      name: string;
      onNotify: (payload: string) => void;
      onReady: () => void;
      onLost?: () => void;
      logger: Logger;
    },
  ) {}

  start(): void {
    if (this.session) return;
    localNotifications.on(this.options.channel, this.local);
    this.session = ListeningSession.of(this.options.databaseUrl, this.options.logger);
    this.session.join(this);
  }

  async stop(): Promise<void> {
    const session = this.session;
    if (!session) return;
    this.session = null;
    localNotifications.off(this.options.channel, this.local);
    await session.leave(this);
  }
}

/**
 * The one session on which a process LISTENs to a database's channels: a channel is LISTENed when its
 * first listener joins and UNLISTENed when its last one leaves; the session closes with its last
 * listener. On a reconnect (HeldSession's backoff) every channel is LISTENed again before its
 * listeners are ready.
 */
class ListeningSession {
  private static readonly sessions = new Map<string, ListeningSession>();

  static of(databaseUrl: string, logger: Logger): ListeningSession {
    let session = ListeningSession.sessions.get(databaseUrl);
    if (!session) {
      session = new ListeningSession(databaseUrl, logger);
      ListeningSession.sessions.set(databaseUrl, session);
    }
    return session;
  }

  private readonly listeners = new Map<string, Set<NotificationListener>>();
  /** The current connection, once its setup LISTENed the channels it found, and those LISTENed on it. */
  private client: pg.Client | null = null;
  private readonly listened = new Set<string>();
  private readonly held: HeldSession;
  private started = false;

  private constructor(
    private readonly databaseUrl: string,
    private readonly logger: Logger,
  ) {
    this.held = new HeldSession({
      databaseUrl,
      name: "notifications",
      setup: async (client) => {
        this.client = null;
        this.listened.clear();
        // A live iteration: a channel joined while this runs is LISTENed here too.
        for (const channel of this.listeners.keys()) {
          await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
          this.listened.add(channel);
        }
        this.client = client;
      },
      onNotify: (message) => {
        for (const listener of this.listeners.get(message.channel) ?? []) listener.options.onNotify(message.payload ?? "");
      },
      onReady: () => {
        for (const channel of this.listened) this.readyAll(channel);
      },
      onLost: () => {
        this.client = null;
        this.listened.clear();
        for (const listeners of this.listeners.values()) for (const listener of listeners) this.lose(listener);
      },
      logger,
    });
  }

  join(listener: NotificationListener): void {
    const { channel } = listener.options;
    let listeners = this.listeners.get(channel);
    if (!listeners) this.listeners.set(channel, (listeners = new Set()));
    listeners.add(listener);
    if (!this.started) {
      this.started = true;
      this.held.start();
      return;
    }
    if (this.listened.has(channel)) {
      // Already LISTENed: ready as a connect would make it, after start() returns.
      const client = this.client;
      if (client) queueMicrotask(() => this.client === client && listeners.has(listener) && !listener.ready && this.ready(listener));
      return;
    }
    const client = this.client;
    // Connecting: the setup LISTENs it. Connected: LISTEN now (pg runs a client's queries in turn).
    if (!client) return;
    client.query(`LISTEN ${client.escapeIdentifier(channel)}`).then(
      () => {
        if (this.client !== client || !this.listeners.has(channel)) return;
        this.listened.add(channel);
        this.readyAll(channel);
      },
      // The connection dropped: onLost runs, and the reconnect's setup LISTENs it.
      (err: Error) => this.logger.debug({ err: err.message, channel }, "notifications: LISTEN failed with its connection"),
    );
  }

  async leave(listener: NotificationListener): Promise<void> {
    const { channel } = listener.options;
    const listeners = this.listeners.get(channel);
    if (!listeners?.delete(listener)) return;
    this.lose(listener);
    if (listeners.size > 0) return;
    this.listeners.delete(channel);
    this.listened.delete(channel);
    if (this.listeners.size === 0) {
      ListeningSession.sessions.delete(this.databaseUrl);
      this.client = null;
      await this.held.stop();
      return;
    }
    await this.client?.query(`UNLISTEN ${this.client.escapeIdentifier(channel)}`).catch(() => {});
  }

  private readyAll(channel: string): void {
    for (const listener of this.listeners.get(channel) ?? []) if (!listener.ready) this.ready(listener);
  }

  private ready(listener: NotificationListener): void {
    listener.ready = true;
    listener.options.onReady();
  }

  private lose(listener: NotificationListener): void {
    if (!listener.ready) return;
    listener.ready = false;
    listener.options.onLost?.();
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

