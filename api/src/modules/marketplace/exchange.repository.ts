import { type Insertable, sql, type Transaction } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import type { ExchangeOrder, ExchangeOrdersTable } from "./marketplace.tables.ts";

/** The listing's open order at this price and fee that stays valid at least until `validUntil` (the chain's time), if any (the newest). */
export function reusableOrder(db: Db, listingId: string, priceUnits: bigint, feeBps: number, validUntil: Date): Promise<ExchangeOrder | undefined> {
  return db
    .selectFrom("exchange_orders")
    .selectAll()
    .where("listing_id", "=", listingId)
    .where("status", "=", "open")
    .where("price_units", "=", priceUnits)
    .where("fee_bps", "=", feeBps)
    .where("expires_at", ">", validUntil)
    .orderBy("expires_at", "desc")
    .limit(1)
    .executeTakeFirst();
}

export function insert(db: Db, order: Insertable<ExchangeOrdersTable>): Promise<ExchangeOrder> {
  return db.insertInto("exchange_orders").values(order).returningAll().executeTakeFirstOrThrow();
}

/** The listing's open orders a wallet could still fill (before their `fillable_until`), except `exceptHash`. */
export function fillableOf(db: Db, listingId: string, exceptHash: string | null = null): Promise<ExchangeOrder[]> {
  let q = db.selectFrom("exchange_orders").selectAll().where("listing_id", "=", listingId).where("status", "=", "open").where("fillable_until", ">", sql<Date>`now()`);
  if (exceptHash) q = q.where("order_hash", "<>", exceptHash);
  return q.execute();
}

export function find(db: Db, orderHash: string): Promise<ExchangeOrder | undefined> {
  return db.selectFrom("exchange_orders").selectAll().where("order_hash", "=", orderHash).executeTakeFirst();
}

/**
 * Closes an order: `cancelled` when it was open; `filled` when open, or cancelled here but filled
 * on-chain before the cancellation landed. Undefined when nothing changed (or it is not ours).
 */
export function close(trx: Transaction<Database>, orderHash: string, status: "filled" | "cancelled", saleId: string | null = null): Promise<ExchangeOrder | undefined> {
  return trx
    .updateTable("exchange_orders")
    .set({ status, sale_id: saleId, closed_at: sql<Date>`now()` })
    .where("order_hash", "=", orderHash)
    .where("status", "in", status === "filled" ? ["open", "cancelled"] : ["open"])
    .returningAll()
    .executeTakeFirst();
}

/**
 * The artwork's orders that were closed here as `cancelled` while a wallet may still fill them on-chain
 * (before their `fillable_until`): each one's cancellation is a chain operation that may not be mined yet.
 */
export function cancelledFillableOfArtwork(db: Db, artworkId: string): Promise<ExchangeOrder[]> {
  return db
    .selectFrom("exchange_orders")
    .innerJoin("listings", "listings.id", "exchange_orders.listing_id")
    .selectAll("exchange_orders")
    .where("listings.artwork_id", "=", artworkId)
    .where("exchange_orders.status", "=", "cancelled")
    .where("exchange_orders.fillable_until", ">", sql<Date>`now()`)
    .orderBy("exchange_orders.fillable_until", "desc")
    .execute();
}
