import { type Insertable, sql, type Transaction, type UpdateObject } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import type { Sale, SalesTable, SaleStatus } from "./marketplace.tables.ts";

export function insert(db: Db, sale: Insertable<SalesTable>): Promise<Sale> {
  return db.insertInto("sales").values(sale).returningAll().executeTakeFirstOrThrow();
}

export function find(db: Db, id: string): Promise<Sale | undefined> {
  return db.selectFrom("sales").selectAll().where("id", "=", id).executeTakeFirst();
}

export function lock(trx: Transaction<Database>, id: string): Promise<Sale | undefined> {
  return trx.selectFrom("sales").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

/** Moves a sale from one of `from` to `to` with `set`; undefined when it was elsewhere. */
export function move(db: Db, id: string, from: readonly SaleStatus[], to: SaleStatus, set: UpdateObject<Database, "sales"> = {}): Promise<Sale | undefined> {
  return db
    .updateTable("sales")
    .set({ ...set, status: to, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("status", "in", [...from])
    .returningAll()
    .executeTakeFirst();
}

/** The id of the artwork's last sale that went through (completed, or refunded since): whose buyer it went to last. */
export async function lastSaleIdOf(db: Db, artworkId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom("sales")
    .select("id")
    .where("artwork_id", "=", artworkId)
    .where("status", "in", ["completed", "refunded"])
    // Sales of one artwork go through one after another (one open listing at a time, one live sale
    // per listing; a fill's sale is written as it completes): the newest is the last completed.
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .limit(1)
    .executeTakeFirst();
  return row?.id;
}

/** The listing's sale under way (`pending_payment` or `paid`), locked. */
export function lockLiveOf(trx: Transaction<Database>, listingId: string): Promise<Sale | undefined> {
  return trx.selectFrom("sales").selectAll().where("listing_id", "=", listingId).where("status", "in", ["pending_payment", "paid"]).forUpdate().executeTakeFirst();
}

/** Whether a fill of `orderHash` was recorded as a sale already. */
export async function fillRecorded(db: Db, orderHash: string): Promise<boolean> {
  return (await db.selectFrom("sales").select("id").where("order_hash", "=", orderHash).executeTakeFirst()) !== undefined;
}

/** Whether the listing sold (a completed sale). */
export async function soldOf(db: Db, listingId: string): Promise<boolean> {
  return (await db.selectFrom("sales").select("id").where("listing_id", "=", listingId).where("status", "=", "completed").executeTakeFirst()) !== undefined;
}
