import { type Kysely, sql } from "kysely";

/**
 * Takes the transaction-scoped advisory lock named `name` (released at commit or rollback): the
 * one way this codebase serializes work on something that has no row to lock (a user's cap, a
 * relayer account's nonces), across processes. Call it inside a transaction.
 */
export async function lockNamed(trx: Kysely<any>, name: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${name}, 0))`.execute(trx);
}
