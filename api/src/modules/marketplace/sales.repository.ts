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
    .orderBy("completed_at", "desc")
    .limit(1)
    .executeTakeFirst();
  return row?.id;
}
