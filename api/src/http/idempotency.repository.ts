import { sql } from "kysely";
import type { Db } from "../db/database.ts";
import { isPresent } from "../db/presence.ts";

/** The `idempotency_keys` rows (IdempotencyStore): claims, stored answers, freed and expired keys. */

/** Who holds a key: its `token` is the claim's `locked_at` as text (microseconds kept). */
export interface KeyHold {
  principal: string;
  key: string;
  token: string;
}

const olderThanHours = (hours: number) => sql<Date>`now() - make_interval(hours => ${hours})`;

/**
 * Inserts the key in progress for `holder` (the claiming process's presence id, or null), or takes
 * over in the same statement, so two retries cannot both win, an expired one (older than `ttlHours`)
 * or one of the same request abandoned: its holder's presence gone (the process died) or, for a key
 * without one or a holder that still looks present, in progress for `abandonedAfterSeconds`. The
 * claim's token; undefined when the key is held or answered.
 */
export async function claim(
  db: Db,
  row: { principal: string; key: string; fingerprint: string; method: string; path: string; holder: number | null },
  limits: { ttlHours: number; abandonedAfterSeconds: number },
): Promise<string | undefined> {
  const { principal, key, fingerprint, method, path, holder } = row;
  const inserted = await db
    .insertInto("idempotency_keys")
    .values({ principal, key, request_hash: fingerprint, method, path, state: "in_progress", response_status: null, response_body: null, locked_at: sql<Date>`now()`, holder })
    .onConflict((oc) =>
      oc.columns(["principal", "key"]).doUpdateSet({
        request_hash: fingerprint,
        method,
        path,
        state: "in_progress",
        response_status: null,
        response_body: null,
        created_at: sql<Date>`now()`,
        locked_at: sql<Date>`now()`,
        holder,
        completed_at: null,
      }).where((eb) =>
        eb.or([
          eb("idempotency_keys.created_at", "<", olderThanHours(limits.ttlHours)),
          eb.and([
            eb("idempotency_keys.state", "=", "in_progress"),
            eb("idempotency_keys.request_hash", "=", fingerprint),
            eb.or([
              eb("idempotency_keys.locked_at", "<", sql<Date>`now() - make_interval(secs => ${limits.abandonedAfterSeconds})`),
              eb.and([eb("idempotency_keys.holder", "is not", null), eb.not(isPresent(sql.ref("idempotency_keys.holder")))]),
            ]),
          ]),
        ]),
      ),
    )
    .returning(sql<string>`locked_at::text`.as("token"))
    .executeTakeFirst();
  return inserted?.token;
}

export function find(db: Db, principal: string, key: string) {
  return db.selectFrom("idempotency_keys").selectAll().where("principal", "=", principal).where("key", "=", key).executeTakeFirst();
}

/**
 * Stores the answer under the key while `hold` still holds it (and, with `inProgressOnly`, only while
 * no answer is stored): whether it was stored.
 */
export async function storeAnswer(db: Db, hold: KeyHold, answer: { status: number; body: unknown }, options: { inProgressOnly: boolean }): Promise<boolean> {
  let query = db
    .updateTable("idempotency_keys")
    .set({ state: "completed", response_status: answer.status, response_body: JSON.stringify(answer.body ?? null), completed_at: sql<Date>`now()` })
    .where("principal", "=", hold.principal)
    .where("key", "=", hold.key);
  if (options.inProgressOnly) query = query.where("state", "=", "in_progress");
  const updated = await query.where(heldBy(hold)).executeTakeFirst();
  return Number(updated.numUpdatedRows) > 0;
}

/** Deletes the key while it is in progress under `hold`. */
export async function release(db: Db, hold: KeyHold): Promise<void> {
  await db.deleteFrom("idempotency_keys").where("principal", "=", hold.principal).where("key", "=", hold.key).where("state", "=", "in_progress").where(heldBy(hold)).execute();
}

/** Deletes the keys older than `ttlHours`: how many. */
export async function purgeOlderThan(db: Db, ttlHours: number): Promise<number> {
  const res = await db.deleteFrom("idempotency_keys").where("created_at", "<", olderThanHours(ttlHours)).executeTakeFirst();
  return Number(res.numDeletedRows);
}

function heldBy(hold: KeyHold) {
  return sql<boolean>`locked_at = ${hold.token}::timestamptz`;
}
