import { type Insertable, sql, type Transaction, type UpdateObject } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import type { PurchaseStage, TransactionRow, TransactionsTable, TransactionType } from "./payments.tables.ts";

// The purchases' rows (`transactions`), written only by purchases.service.ts.

export function insert(db: Db, row: Insertable<TransactionsTable>): Promise<TransactionRow> {
  return db.insertInto("transactions").values(row).returningAll().executeTakeFirstOrThrow();
}

export function find(db: Db, id: string): Promise<TransactionRow | undefined> {
  return db.selectFrom("transactions").selectAll().where("id", "=", id).executeTakeFirst();
}

export function findMany(db: Db, ids: readonly string[]): Promise<TransactionRow[]> {
  return db.selectFrom("transactions").selectAll().where("id", "in", [...ids]).execute();
}

export function lock(trx: Transaction<Database>, id: string): Promise<TransactionRow | undefined> {
  return trx.selectFrom("transactions").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

/**
 * Moves a pending purchase on from `stage` only (a step another run took already changes nothing),
 * `stamp` set to now when given (it completed, or failed); the row moved.
 */
export function moveFrom(
  db: Db,
  id: string,
  stage: PurchaseStage,
  set: UpdateObject<Database, "transactions">,
  stamp?: "completed_at" | "failed_at",
): Promise<TransactionRow | undefined> {
  return db
    .updateTable("transactions")
    .set({ ...set, ...(stamp ? { [stamp]: sql<Date>`now()` } : {}), updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("status", "=", "pending")
    .where("stage", "=", stage)
    .returningAll()
    .executeTakeFirst();
}

/** Sets a purchase's columns (a step under way: its runs, a stray charge to refund) and marks it changed now. */
export async function update(db: Db, id: string, set: UpdateObject<Database, "transactions">): Promise<void> {
  await db.updateTable("transactions").set({ ...set, updated_at: sql<Date>`now()` }).where("id", "=", id).execute();
}

/** From now on a charge may exist under the purchase's key (set once). */
export async function markChargeStarted(db: Db, id: string): Promise<void> {
  await db.updateTable("transactions").set({ charge_started_at: sql<Date>`now()`, updated_at: sql<Date>`now()` }).where("id", "=", id).where("charge_started_at", "is", null).execute();
}

/** A completed, charged purchase starts its refund (with its cause); false when it is not one (or is refunding already). */
export async function startRefund(db: Db, id: string, cause: string): Promise<boolean> {
  const row = await db
    .updateTable("transactions")
    .set({ stage: "refunding", refund_cause: cause, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("status", "=", "completed")
    .where((eb) => eb.or([eb("stage", "=", "done"), eb("stage", "is", null)]))
    .where("charge_id", "is not", null)
    .returning("id")
    .executeTakeFirst();
  return row !== undefined;
}

/** A completed purchase and its completed payouts refunded by `refundId`; the rows moved. */
export function markRefunded(db: Db, id: string, refundId: string): Promise<TransactionRow[]> {
  return db
    .updateTable("transactions")
    .set({ status: "refunded", stage: "done", refund_id: refundId, refunded_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where((eb) => eb.or([eb("id", "=", id), eb.and([eb("parent_id", "=", id), eb("status", "=", "completed")])]))
    .returningAll()
    .execute();
}

/** A purchase that did not go through, its charge refunded by `refundId`: failed, saying so. */
export function markFailedRefunded(db: Db, id: string, refundId: string, reason: string): Promise<TransactionRow[]> {
  return db
    .updateTable("transactions")
    .set({ status: "failed", stage: "done", refund_id: refundId, failure_reason: reason, failed_at: sql<Date>`coalesce(failed_at, now())`, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .returningAll()
    .execute();
}

/** Purchases charging or refunding without a change for `ms`: their step lost its process. */
export function stuck(db: Db, ms: number, limit: number): Promise<{ id: string; stage: PurchaseStage | null }[]> {
  return db
    .selectFrom("transactions")
    .select(["id", "stage"])
    .where("stage", "in", ["charging", "refunding"])
    .where("updated_at", "<", sql<Date>`now() - ${ms} * interval '1 millisecond'`)
    .limit(limit)
    .execute();
}

/** Cents of purchases of `types` completed in [from, to) and not refunded since. */
export async function volumeCents(db: Db, types: readonly TransactionType[], range: { from: Date; to: Date }): Promise<bigint> {
  const row = await db
    .selectFrom("transactions")
    .select(sql<string>`coalesce(sum(amount_cents), 0)`.as("cents"))
    .where("status", "=", "completed")
    .where("type", "in", [...types])
    .where("completed_at", ">=", range.from)
    .where("completed_at", "<", range.to)
    .executeTakeFirstOrThrow();
  return BigInt(row.cents);
}
