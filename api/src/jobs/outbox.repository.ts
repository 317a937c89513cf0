/** Every query of the transactional outbox (table `outbox_events`, its own queue). */
import { type Selectable, sql, type Transaction } from "kysely";
import type { Database, Db, OutboxEventsTable } from "../db/database.ts";

export type OutboxRow = Selectable<OutboxEventsTable>;

/** An event to store: dispatched already when its one consumer handles it in the caller's transaction. */
export interface NewEventRow {
  id: string;
  event_type: string;
  payload: string;
  audience: string[];
  dispatched: boolean;
}

function values({ dispatched, ...row }: NewEventRow) {
  return { ...row, dispatched_at: dispatched ? sql<Date>`now()` : null };
}

/** Stores `rows` and NOTIFYs `channel` (delivered on commit), in one statement. */
export async function insertAndNotify(db: Db, rows: readonly NewEventRow[], channel: string): Promise<void> {
  await db
    .with("recorded", (qc) => qc.insertInto("outbox_events").values(rows.map(values)))
    .selectNoFrom(sql`pg_notify(${channel}, '')`.as("notified"))
    .execute();
}

/** Stores one event, telling nobody; its id and time. */
export function insertOne(db: Db, row: NewEventRow): Promise<{ id: string; created_at: Date }> {
  return db.insertInto("outbox_events").values(values(row)).returning(["id", "created_at"]).executeTakeFirstOrThrow();
}

/**
 * The oldest undispatched events whose retry is due, up to `limit`, locked (`FOR NO KEY UPDATE`:
 * a subscriber's rows may still reference them) and skipping those another dispatcher holds.
 */
export function claimDue(trx: Transaction<Database>, limit: number): Promise<OutboxRow[]> {
  return trx
    .selectFrom("outbox_events")
    .selectAll()
    .where("dispatched_at", "is", null)
    .where((eb) => eb.or([eb("dispatch_after", "is", null), eb("dispatch_after", "<=", sql<Date>`now()`)]))
    .orderBy("created_at")
    .orderBy("id")
    .limit(limit)
    .forNoKeyUpdate()
    .skipLocked()
    .execute();
}

export async function markDispatched(trx: Transaction<Database>, ids: readonly string[]): Promise<void> {
  await trx.updateTable("outbox_events").set({ dispatched_at: sql<Date>`now()`, dispatch_error: null }).where("id", "in", [...ids]).execute();
}

/** A failed dispatch of the event: its attempts, when it is dispatched again, and the subscriber's error. */
export async function delayDispatch(trx: Transaction<Database>, id: string, attempts: number, after: Date, error: string): Promise<void> {
  await trx.updateTable("outbox_events").set({ dispatch_attempts: attempts, dispatch_after: after, dispatch_error: error }).where("id", "=", id).execute();
}
