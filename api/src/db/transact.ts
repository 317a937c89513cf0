import type { Kysely, Transaction } from "kysely";
import type { Database } from "./database.ts";

/**
 * A unit of work: runs `work` in one database transaction and returns what it returned. A service
 * method that writes takes one (default: a plain transaction on its database) so that the HTTP
 * layer can hand it the request's, which also stores the idempotent answer in the same
 * transaction (`ctx.transaction`, see api/src/http/route.ts). What `work` returns is that answer.
 */
export type Transact = <T>(work: (trx: Transaction<Database>) => Promise<T>) => Promise<T>;

/** A unit of work that is only a transaction. */
export function transactOn(db: Kysely<Database>): Transact {
  return (work) => db.transaction().execute(work);
}
