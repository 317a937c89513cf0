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
   * The same, for work that is one statement (atomic on its own): run without BEGIN and COMMIT
   * (two round trips) when nothing else must commit with it, else in the transaction (the request's,
   * which stores an Idempotency-Key's answer with it). `alone` says which: when true the statement
   * commits by itself, so it may as well be written by a statement shared with other requests'
   * writes (GroupedWrites). Absent: use the transaction.
   */
  oneStatement?<T>(work: (db: Db, how: { alone: boolean }) => Promise<T>): Promise<T>;
}

/** A unit of work that is only a transaction (or, for one statement, not even that). */
export function transactOn(db: Kysely<Database>): Transact {
  const transact: Transact = (work) => db.transaction().execute(work);
  transact.oneStatement = (work) => work(db, { alone: true });
  return transact;
}
