/**
 * Every query of the chain operations component: the operations' rows (table `chain_operations`,
 * their own queue) and the cursors over the indexer (`chain_cursors`). Nothing else in api/src
 * names these tables.
 */
import { type RawBuilder, sql, type Transaction } from "kysely";
import type { Hash } from "viem";
import type { ChainOperation, Database, Db } from "../db/database.ts";
import { isPresent } from "../db/presence.ts";

/** Whether `err` is a read of a table or schema that does not exist yet (migrations or the indexer's views not there). */
export function isUndefinedTable(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === "42P01" || code === "3F000";
}

const afterMs = (ms: number) => sql<Date>`now() + ${ms} * interval '1 millisecond'`;
const now = () => sql<Date>`now()`;
const OPEN = ["pending", "sent"] as const;

// ---- requests ----

/**
 * Stores new operations (one row per key, locked in key order) pending and due at `dueAt` (else
 * now), and starts failed ones over; a key that exists and has not failed is left to `expedite`.
 * The rows stored.
 */
export async function insertOrRestart(
  db: Db,
  rows: readonly { key: string; kind: string; payload: Record<string, unknown> }[],
  dueAt: Date | undefined,
  priority: number,
): Promise<ChainOperation[]> {
  const { rows: stored } = await sql<ChainOperation>`
    insert into chain_operations as o (key, kind, payload, status, due_at, priority)
    select r.key, r.kind, r.payload, 'pending', ${dueAt ?? now()}, ${priority}
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(key text, kind text, payload jsonb)
    order by r.key
    on conflict (key) do update set
      status = 'pending', attempts = 0, tx_hash = null, last_error = null, lease_until = null,
      due_at = excluded.due_at, priority = excluded.priority, updated_at = now()
    where o.status = 'failed'
    returning *`.execute(db);
  return stored;
}

/** Open operations of `keys` waiting for their next attempt become due at `dueAt` (else now) if sooner, at `priority` if lower. The rows moved. */
export async function expedite(db: Db, keys: readonly string[], dueAt: Date | undefined, priority: number): Promise<ChainOperation[]> {
  const { rows } = await sql<ChainOperation>`
    update chain_operations set due_at = least(due_at, ${dueAt ?? now()}), priority = least(priority, ${priority}), updated_at = now()
    where key = any(${keys}::text[]) and status in ('pending', 'sent') and due_at is not null
    returning *`.execute(db);
  return rows;
}

export function findByKeys(db: Db, keys: readonly string[]): Promise<ChainOperation[]> {
  return db.selectFrom("chain_operations").selectAll().where("key", "in", [...keys]).execute();
}

export function find(db: Db, key: string): Promise<ChainOperation | undefined> {
  return db.selectFrom("chain_operations").selectAll().where("key", "=", key).executeTakeFirst();
}

export async function confirmedKeys(db: Db, keys: readonly string[]): Promise<string[]> {
  const rows = await db.selectFrom("chain_operations").select("key").where("key", "in", [...keys]).where("status", "=", "confirmed").execute();
  return rows.map((r) => r.key);
}

/** The latest confirmations with a transaction (newest first): what a chain that lost its last blocks lacks first. */
export function latestConfirmedWithHash(db: Db, limit: number): Promise<{ key: string; tx_hash: string | null }[]> {
  return db
    .selectFrom("chain_operations")
    .select(["key", "tx_hash"])
    .where("status", "=", "confirmed")
    .where("tx_hash", "is not", null)
    .orderBy("confirmed_at", "desc")
    .limit(limit)
    .execute();
}

// ---- leases and attempts ----

/** The open operation of `key`, locked (a concurrent lease of the row is waited for, not skipped). */
export const openOfKey = (key: string) => sql`select id from chain_operations where key = ${key} and status in ('pending', 'sent') for update`;

/** The due operations, at most `free` of each kind (lower priority first within a kind), locked and skipping those locked elsewhere. */
export const duePerKind = (slots: readonly { kind: string; free: number }[]) => sql`
  select d.id
  from unnest(${slots.map((s) => s.kind)}::text[], ${slots.map((s) => s.free)}::int[]) as k(kind, free)
  cross join lateral (
    select id from chain_operations
    where kind = k.kind and status in ('pending', 'sent') and due_at <= now()
    order by priority, due_at, id limit k.free for update skip locked
  ) as d`;

/**
 * Leases the operations `picked` selects (ids, locked) for an attempt each: attempts + 1, no longer
 * due, leased for `leaseMs` by `holder` (the process's presence id, null without one).
 */
export async function lease(db: Db, picked: RawBuilder<unknown>, leaseMs: number, holder: number | null): Promise<ChainOperation[]> {
  const { rows } = await sql<ChainOperation>`
    update chain_operations as o set
      attempts = o.attempts + 1, due_at = null, updated_at = now(),
      lease_until = now() + ${leaseMs} * interval '1 millisecond', holder = ${holder}
    from (${picked}) as c
    where o.id = c.id
    returning o.*`.execute(db);
  return rows;
}

/** Stores the transaction hash of open operations just sent (one statement for a batch). */
export async function markSent(db: Db, keys: readonly string[], hash: Hash): Promise<void> {
  await db
    .updateTable("chain_operations")
    .set({ status: "sent", tx_hash: hash, updated_at: now() })
    .where("key", "in", [...keys])
    .where("status", "in", OPEN)
    .execute();
}

/** Schedules the next attempt of an open operation in `delayMs`, keeping `reason`; the row, unless it is no longer open. */
export function scheduleRetry(trx: Transaction<Database>, key: string, delayMs: number, reason: string): Promise<ChainOperation | undefined> {
  return trx
    .updateTable("chain_operations")
    .set({ due_at: afterMs(delayMs), lease_until: null, last_error: reason, updated_at: now() })
    .where("key", "=", key)
    .where("status", "in", OPEN)
    .returningAll()
    .executeTakeFirst();
}

/** Fails an open operation for good; the row, unless it was confirmed or failed meanwhile. */
export function markFailed(trx: Transaction<Database>, key: string, reason: string): Promise<ChainOperation | undefined> {
  return trx
    .updateTable("chain_operations")
    .set({ status: "failed", last_error: reason, lease_until: null, due_at: null, updated_at: now() })
    .where("key", "=", key)
    .where("status", "in", OPEN)
    .returningAll()
    .executeTakeFirst();
}

/** Open operations of `keys` waiting for a backoff become due now; the keys moved. */
export async function dueNowIfWaiting(db: Db, keys: readonly string[]): Promise<string[]> {
  const rows = await db
    .updateTable("chain_operations")
    .set({ due_at: now(), updated_at: now() })
    .where("key", "in", [...keys])
    .where("status", "in", OPEN)
    .where("due_at", "is not", null)
    .returning("key")
    .execute();
  return rows.map((r) => r.key);
}

/** An interrupted attempt's operation becomes due now, if it still holds the lease that attempt took. */
export async function releaseLease(db: Db, key: string, lease: Date): Promise<void> {
  await db
    .updateTable("chain_operations")
    .set({ due_at: now(), lease_until: null, updated_at: now() })
    .where("key", "=", key)
    .where("status", "in", OPEN)
    .where("due_at", "is", null)
    // The lease this attempt took (read back to the millisecond; Postgres keeps microseconds).
    .where(sql`abs(extract(epoch from lease_until - ${lease}::timestamptz))`, "<", 0.001)
    .execute();
}

// ---- the sweep ----

/**
 * Leases again (for `leaseMs`, by `holder`) up to `limit` open operations whose attempt is lost:
 * its process gone (its presence no longer held) or, for a holder without one, its lease run out
 * more than `graceMs` ago; oldest first.
 */
export function reclaimExpired(db: Db, leaseMs: number, graceMs: number, limit: number, holder: number | null): Promise<ChainOperation[]> {
  return db
    .updateTable("chain_operations")
    .set({ lease_until: afterMs(leaseMs), holder })
    .where("id", "in", (eb) =>
      eb
        .selectFrom("chain_operations")
        .select("id")
        .where("status", "in", OPEN)
        .where("due_at", "is", null)
        .where("lease_until", "is not", null)
        .where((w) =>
          w.or([
            w("lease_until", "<", sql<Date>`now() - ${graceMs} * interval '1 millisecond'`),
            w.and([w("holder", "is not", null), w.not(isPresent(sql.ref("holder")))]),
          ]),
        )
        .orderBy("lease_until")
        .limit(limit)
        .forUpdate()
        .skipLocked(),
    )
    .returningAll()
    .execute();
}

/** Open operations of `keys` under a lease (no attempt waiting) become due now. */
export async function dueNowIfLeased(db: Db, keys: readonly string[]): Promise<void> {
  await db
    .updateTable("chain_operations")
    .set({ due_at: now(), lease_until: null, updated_at: now() })
    .where("key", "in", [...keys])
    .where("status", "in", OPEN)
    .where("due_at", "is", null)
    .execute();
}

// ---- confirmation ----

/** A page of a kind's sent operations (ids after `after`, in id order). */
export function sentPage(db: Db, kind: string, after: bigint, limit: number): Promise<ChainOperation[]> {
  return db.selectFrom("chain_operations").selectAll().where("kind", "=", kind).where("status", "=", "sent").where("id", ">", after).orderBy("id").limit(limit).execute();
}

/** A kind's operations of `keys`, locked in id order. */
export function lockOfKind(trx: Transaction<Database>, kind: string, keys: readonly string[]): Promise<ChainOperation[]> {
  return trx.selectFrom("chain_operations").selectAll().where("key", "in", [...keys]).where("kind", "=", kind).orderBy("id").forUpdate().execute();
}

/** Results per key as the JSON a recordset reads (bigints as text). */
function resultsJson(results: readonly { key: string; result: unknown }[]): string {
  return JSON.stringify(results, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
}

/** Confirms these operations with their results, from `source`; indexed now too when `indexedNow`. */
export async function markConfirmed(
  trx: Transaction<Database>,
  results: readonly { key: string; result: unknown }[],
  source: "indexer" | "chain",
  indexedNow: boolean,
): Promise<void> {
  await sql`
    update chain_operations as o set
      status = 'confirmed', result = r.result, confirmed_from = ${source}, confirmed_at = now(),
      indexed_at = ${indexedNow ? sql`now()` : null}, lease_until = null, due_at = null, last_error = null, updated_at = now()
    from jsonb_to_recordset(${resultsJson(results)}::jsonb) as r(key text, result jsonb)
    where o.key = r.key`.execute(trx);
}

/** Operations confirmed from the chain, now shown by the indexer: its results, indexed now. */
export async function markIndexed(trx: Transaction<Database>, results: readonly { key: string; result: unknown }[]): Promise<void> {
  await sql`
    update chain_operations as o set result = r.result, indexed_at = now(), updated_at = now()
    from jsonb_to_recordset(${resultsJson(results)}::jsonb) as r(key text, result jsonb)
    where o.key = r.key`.execute(trx);
}

/** Which of `kinds` have operations still open: pending, sent, or confirmed from the chain and not yet indexed. */
export async function kindsWithOpen(trx: Transaction<Database>, kinds: readonly string[]): Promise<Set<string>> {
  const { rows } = await sql<{ kind: string }>`
    select distinct kind from chain_operations
    where kind = any(${kinds}::text[]) and (status in ('pending', 'sent') or (status = 'confirmed' and indexed_at is null))`.execute(trx);
  return new Set(rows.map((r) => r.kind));
}

// ---- cursors ----

/** Creates the cursors of `consumers` that do not exist yet, at `block`. */
export async function ensureCursors(db: Db, consumers: readonly string[], block: number): Promise<void> {
  await db
    .insertInto("chain_cursors")
    .values(consumers.map((consumer) => ({ consumer, block_number: String(block) })))
    .onConflict((oc) => oc.column("consumer").doNothing())
    .execute();
}

/** The cursors of `consumers` behind `block`, locked, skipping those another process holds. */
export function lockCursorsBehind(trx: Transaction<Database>, consumers: readonly string[], block: bigint): Promise<{ consumer: string; block_number: bigint }[]> {
  return trx
    .selectFrom("chain_cursors")
    .select(["consumer", "block_number"])
    .where("consumer", "in", [...consumers])
    .where("block_number", "<", block)
    .orderBy("consumer")
    .forUpdate()
    .skipLocked()
    .execute();
}

/** Moves each cursor to its block (one statement). */
export async function moveCursors(trx: Transaction<Database>, moves: readonly { consumer: string; to: bigint }[]): Promise<void> {
  await sql`
    update chain_cursors as c set block_number = m.to::bigint, updated_at = now()
    from jsonb_to_recordset(${JSON.stringify(moves.map((m) => ({ consumer: m.consumer, to: m.to.toString() })))}::jsonb) as m(consumer text, "to" text)
    where c.consumer = m.consumer`.execute(trx);
}

/** A cursor's block; with `lock`, its row is locked in the caller's transaction. */
export async function cursorBlock(db: Db, consumer: string, lock = false): Promise<bigint> {
  const query = db.selectFrom("chain_cursors").select("block_number").where("consumer", "=", consumer);
  return (await (lock ? query.forUpdate() : query).executeTakeFirstOrThrow()).block_number;
}

/** Moves a projection's cursor forward to `to` (never back) and clears its failure. */
export async function advanceProjectionCursor(trx: Transaction<Database>, consumer: string, to: bigint): Promise<void> {
  await trx.updateTable("chain_cursors").set({ block_number: String(to), updated_at: now() }).where("consumer", "=", consumer).where("block_number", "<", to).execute();
  await trx.updateTable("chain_cursors").set({ failing_since: null, last_error: null }).where("consumer", "=", consumer).where("failing_since", "is not", null).execute();
}

/** Records that a projection failed past its cursor (since when: its first failure in a row). */
export async function recordCursorFailure(db: Db, consumer: string, error: string): Promise<void> {
  await db
    .updateTable("chain_cursors")
    .set({ failing_since: sql<Date>`coalesce(failing_since, now())`, last_error: error })
    .where("consumer", "=", consumer)
    .execute();
}

/** The cursors of `consumers` that record a failure, oldest failure first. */
export function failingCursors(db: Db, consumers: readonly string[]) {
  return db
    .selectFrom("chain_cursors")
    .select(["consumer", "block_number", "failing_since", "last_error"])
    .where("consumer", "in", [...consumers])
    .where("failing_since", "is not", null)
    .orderBy("failing_since")
    .execute();
}
