import type { Kysely, Transaction } from "kysely";
import type { Database, Db } from "./database.ts";

/**
 * A unit of work: runs `work` in one database transaction and returns what it returned. A service
 * method that writes takes one (default: a plain transaction on its database) so that the HTTP
 * layer can hand it the request's, which also stores the idempotent answer in the same
 * transaction (`ctx.transaction`, see api/src/http/route.ts). What `work` returns is that answer.
 */
export interface Transact {
  <T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T>;
  /**
   * The same, for work that is atomic on its own (one statement, or a transaction it opens itself):
   * run outside the unit's transaction when nothing else must commit with it, else in it (the
   * request's, which stores an Idempotency-Key's answer with it). `alone` says which: when true the
   * work commits by itself, so it may as well be written together with other requests' writes
   * (GroupedWrites). Absent: use the transaction.
   */
  selfCommitting?<T>(work: (db: Db, how: { alone: boolean }) => Promise<T>): Promise<T>;
}

/** A unit of work that is only a transaction (or, for one statement, not even that). */
export function transactOn(db: Kysely<Database>): Transact {
  const transact: Transact = (work) => db.transaction().execute(work);
  transact.selfCommitting = (work) => work(db, { alone: true });
  return transact;
}
