import { type Insertable, sql, type Transaction } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import { type Page, paginate } from "../../lib/pagination.ts";
import type { Offer, OffersTable, OfferStatus } from "./marketplace.tables.ts";

/** Inserts the offer unless the buyer has a pending one on the listing (`offers_pending_buyer_key`): undefined then. */
export function insertUnlessPending(db: Db, offer: Insertable<OffersTable>): Promise<Offer | undefined> {
  return db
    .insertInto("offers")
    .values(offer)
    // A literal predicate, so that Postgres can infer the partial index with a generic plan (marketplace.repository.ts insertUnlessOpen).
    .onConflict((oc) => oc.columns(["listing_id", "buyer_id"]).where("status", "=", sql.lit("pending")).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export function find(db: Db, id: string): Promise<Offer | undefined> {
  return db.selectFrom("offers").selectAll().where("id", "=", id).executeTakeFirst();
}

/** Row lock; take the listing's lock first when both are needed (listing, then offer: one order everywhere). */
export function lock(trx: Transaction<Database>, id: string): Promise<Offer | undefined> {
  return trx.selectFrom("offers").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

/** Moves an offer from `from` to `to` (a decision when leaving pending); undefined when it was not in `from`. */
export function move(
  db: Db,
  id: string,
  from: OfferStatus,
  to: OfferStatus,
  extra: { decidedBy?: string | null; transactionId?: string } = {},
): Promise<Offer | undefined> {
  return db
    .updateTable("offers")
    .set({
      status: to,
      updated_at: sql<Date>`now()`,
      ...(from === "pending" ? { decided_at: sql<Date>`now()`, decided_by: extra.decidedBy ?? null } : {}),
      ...(extra.transactionId ? { transaction_id: extra.transactionId } : {}),
    })
    .where("id", "=", id)
    .where("status", "=", from)
    .returningAll()
    .executeTakeFirst();
}

/** Rejects every pending offer of the listing (it sold or was cancelled); the offers rejected. */
export function rejectPendingOf(db: Db, listingId: string, decidedBy: string | null): Promise<Offer[]> {
  return db
    .updateTable("offers")
    .set({ status: "rejected", decided_at: sql<Date>`now()`, decided_by: decidedBy, updated_at: sql<Date>`now()` })
    .where("listing_id", "=", listingId)
    .where("status", "=", "pending")
    .returningAll()
    .execute();
}

/** Pending offers past their expiry (the sweep behind the expiry jobs). */
export function overdue(db: Db, limit: number): Promise<{ id: string }[]> {
  return db.selectFrom("offers").select("id").where("status", "=", "pending").where("expires_at", "<=", sql<Date>`now()`).orderBy("expires_at").limit(limit).execute();
}

export interface OfferFilter {
  role?: "buyer" | "seller" | undefined;
  status?: OfferStatus | undefined;
  listingId?: string | undefined;
}

/** The offers `userId` made or received, newest first. */
export function listOf(db: Db, userId: string, filter: OfferFilter, page: Page) {
  let query = db.selectFrom("offers").where((eb) =>
    filter.role === "buyer" ? eb("buyer_id", "=", userId) : filter.role === "seller" ? eb("seller_id", "=", userId) : eb.or([eb("buyer_id", "=", userId), eb("seller_id", "=", userId)]),
  );
  if (filter.status) query = query.where("status", "=", filter.status);
  if (filter.listingId) query = query.where("listing_id", "=", filter.listingId);
  return paginate(query, page, (q) => q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"));
}
