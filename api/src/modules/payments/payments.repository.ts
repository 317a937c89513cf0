import { type Insertable, sql, type Transaction } from "kysely";
import { lockNamed } from "../../db/locks.ts";
import type { Database, Db } from "../../db/database.ts";
import { type Page, paginate } from "../../lib/pagination.ts";
import type {
  PaymentMethodRow,
  PaymentMethodsTable,
  SandboxChargeRow,
  SandboxChargesTable,
  SandboxRefundRow,
  SandboxRefundsTable,
  TransactionRow,
  TransactionStatus,
  TransactionType,
} from "./payments.tables.ts";

// Saved payment methods.

/** Serializes one user's saves (the per-user cap). */
export async function lockUserPaymentMethods(trx: Transaction<Database>, userId: string): Promise<void> {
  await lockNamed(trx, `payment_methods:${userId}`);
}

export async function countPaymentMethods(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom("payment_methods")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .where("user_id", "=", userId)
    .where("detached_at", "is", null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export function insertPaymentMethod(db: Db, row: Insertable<PaymentMethodsTable>): Promise<PaymentMethodRow> {
  return db.insertInto("payment_methods").values(row).returningAll().executeTakeFirstOrThrow();
}

/** The user's attached method `id`, if any. */
export function findPaymentMethod(db: Db, userId: string, id: string): Promise<PaymentMethodRow | undefined> {
  return db
    .selectFrom("payment_methods")
    .selectAll()
    .where("id", "=", id)
    .where("user_id", "=", userId)
    .where("detached_at", "is", null)
    .executeTakeFirst();
}

export function listPaymentMethods(db: Db, userId: string, page: Page): Promise<{ rows: PaymentMethodRow[]; total: number }> {
  const query = db.selectFrom("payment_methods").where("user_id", "=", userId).where("detached_at", "is", null);
  return paginate(query, page, (q) => q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"));
}

export async function detachPaymentMethod(db: Db, userId: string, id: string): Promise<boolean> {
  const result = await db
    .updateTable("payment_methods")
    .set({ detached_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("user_id", "=", userId)
    .where("detached_at", "is", null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

// The sandbox processor's own records.

export function findSandboxCharge(db: Db, id: string): Promise<SandboxChargeRow | undefined> {
  return db.selectFrom("sandbox_charges").selectAll().where("id", "=", id).executeTakeFirst();
}

export function findSandboxChargeByKey(db: Db, idempotencyKey: string): Promise<SandboxChargeRow | undefined> {
  return db.selectFrom("sandbox_charges").selectAll().where("idempotency_key", "=", idempotencyKey).executeTakeFirst();
}

/** The charge as inserted, or undefined when its key has one already (a concurrent call's, once committed). */
export function insertSandboxCharge(db: Db, row: Insertable<SandboxChargesTable>): Promise<SandboxChargeRow | undefined> {
  return db
    .insertInto("sandbox_charges")
    .values(row)
    .onConflict((oc) => oc.column("idempotency_key").doNothing())
    .returningAll()
    .executeTakeFirst();
}

export function lockSandboxCharge(trx: Transaction<Database>, id: string): Promise<SandboxChargeRow | undefined> {
  return trx.selectFrom("sandbox_charges").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

export async function addSandboxRefunded(trx: Transaction<Database>, chargeId: string, amountCents: bigint): Promise<void> {
  await trx
    .updateTable("sandbox_charges")
    .set((eb) => ({ amount_refunded_cents: eb("amount_refunded_cents", "+", amountCents) }))
    .where("id", "=", chargeId)
    .execute();
}

export function findSandboxRefundByKey(db: Db, idempotencyKey: string): Promise<SandboxRefundRow | undefined> {
  return db.selectFrom("sandbox_refunds").selectAll().where("idempotency_key", "=", idempotencyKey).executeTakeFirst();
}

export function insertSandboxRefund(trx: Transaction<Database>, row: Insertable<SandboxRefundsTable>): Promise<SandboxRefundRow | undefined> {
  return trx
    .insertInto("sandbox_refunds")
    .values(row)
    .onConflict((oc) => oc.column("idempotency_key").doNothing())
    .returningAll()
    .executeTakeFirst();
}

/**
 * Counts one more transient failure for `idempotencyKey` while fewer than `times` were served:
 * true when this attempt is to fail. One statement, so concurrent attempts never over-count.
 */
export async function takeSandboxFailure(db: Db, idempotencyKey: string, times: number): Promise<boolean> {
  const row = await db
    .insertInto("sandbox_processing_errors")
    .values({ idempotency_key: idempotencyKey, failures: 1 })
    .onConflict((oc) =>
      oc
        .column("idempotency_key")
        .doUpdateSet((eb) => ({ failures: eb("sandbox_processing_errors.failures", "+", 1) }))
        .where("sandbox_processing_errors.failures", "<", times),
    )
    .returning("failures")
    .executeTakeFirst();
  return row !== undefined;
}

// The money records (written by purchases.service.ts).

export function findTransaction(db: Db, id: string): Promise<TransactionRow | undefined> {
  return db.selectFrom("transactions").selectAll().where("id", "=", id).executeTakeFirst();
}

export interface TransactionFilter {
  type?: TransactionType | undefined;
  status?: TransactionStatus | undefined;
  role?: "buyer" | "seller" | "recipient" | undefined;
}

/** The transactions `userId` is a party of (buyer, seller or recipient), newest first. */
export function listTransactionsOf(db: Db, userId: string, filter: TransactionFilter, page: Page) {
  let query = db.selectFrom("transactions").where((eb) => {
    switch (filter.role) {
      case "buyer":
        return eb("buyer_id", "=", userId);
      case "seller":
        return eb("seller_id", "=", userId);
      case "recipient":
        return eb("recipient_id", "=", userId);
      default:
        return eb.or([eb("buyer_id", "=", userId), eb("seller_id", "=", userId), eb("recipient_id", "=", userId)]);
    }
  });
  if (filter.type) query = query.where("type", "=", filter.type);
  if (filter.status) query = query.where("status", "=", filter.status);
  return paginate(query, page, (q) => q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"));
}
