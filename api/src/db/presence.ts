import { randomInt } from "node:crypto";
import { type RawBuilder, sql } from "kysely";
import type { Logger } from "pino";
import { HeldSession } from "./held-session.ts";

/** The advisory-lock class of the processes' presences (the first key of pg_advisory_lock(int, int)). */
const PRESENCE_LOCK_CLASS = 0x50524553; // "PRES"

/**
 * This process's presence in the database: a session-level advisory lock (PRESENCE_LOCK_CLASS, `id`)
 * held on a session of its own while the process lives. Postgres drops it when that session ends,
 * however the process ended (SIGKILL, a lost host, Postgres itself restarted), so another process
 * tells a dead holder of something from a slow one at once (isPresent), where a lease must wait out
 * its timeout. A lost session is opened again and takes the same lock: while it is away the process
 * looks gone, which is safe wherever a holder's claims are fenced (an idempotency key's token).
 */
export class ProcessPresence {
  /** Drawn at random: two live processes share one with odds of 1 in 2^31 (and then one looks present a little longer). */
  readonly id = randomInt(1, 2 ** 31 - 1);
  private readonly session: HeldSession;
  private readonly firstReady: Promise<void>;

  constructor(options: { databaseUrl: string; name: string; logger: Logger }) {
    let ready!: () => void;
    this.firstReady = new Promise((resolve) => (ready = resolve));
    this.session = new HeldSession({
      databaseUrl: options.databaseUrl,
      name: `${options.name} presence`,
      setup: async (client) => void (await client.query("select pg_advisory_lock($1, $2)", [PRESENCE_LOCK_CLASS, this.id])),
      onReady: () => ready(),
      logger: options.logger,
    });
  }

  /** Takes the lock; resolves once it is held. */
  start(): Promise<void> {
    this.session.start();
    return this.firstReady;
  }

  stop(): Promise<void> {
    return this.session.stop();
  }
}

/** Whether the process whose presence id is `id` (a column or a value) holds its lock in this database now. */
export function isPresent(id: RawBuilder<number> | ReturnType<typeof sql.ref>): RawBuilder<boolean> {
  return sql<boolean>`exists (
    select 1 from pg_locks
    where locktype = 'advisory' and granted and objsubid = 2
      and database = (select oid from pg_database where datname = current_database())
      and classid = ${PRESENCE_LOCK_CLASS}::oid and objid = (${id})::oid
  )`;
}
