import { type Insertable, type SelectQueryBuilder, sql, type Transaction } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import { containsPattern, type Page, paginate } from "../../lib/pagination.ts";
import type { Listing, ListingStatus, ListingsTable } from "./marketplace.tables.ts";

/** A listing with its artwork's title (the Listing resource names it). */
export type ListingWithTitle = Listing & { title: string };

export type ListingSort = "newest" | "oldest" | "price_asc" | "price_desc";

export interface ListingFilter {
  priceMinCents?: bigint;
  priceMaxCents?: bigint;
  medium?: string;
  artistId?: string;
}

/**
 * Inserts the listing unless the artwork already has an open one (the partial unique index
 * `listings_open_artwork_key`): undefined then. A concurrent insert waits for the other's commit.
 */
export async function insertUnlessOpen(db: Db, listing: Insertable<ListingsTable>): Promise<Listing | undefined> {
  return db
    .insertInto("listings")
    .values(listing)
    // The index predicate in literals: Postgres infers the arbiter index from it when planning, which it cannot from parameters of a generic plan.
    .onConflict((oc) => oc.column("artwork_id").where("status", "in", [sql.lit<ListingStatus>("active"), sql.lit<ListingStatus>("pending_payment")]).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export function openListingOf(db: Db, artworkId: string): Promise<Listing | undefined> {
  return db.selectFrom("listings").selectAll().where("artwork_id", "=", artworkId).where("status", "in", ["active", "pending_payment"]).executeTakeFirst();
}

/**
 * The dispute of the artwork's last sale that is open, or resolved with a refund still unwinding
 * (the money or the certificate on its way back), if any. A dispute of an earlier sale locks
 * nothing: the work has been sold on since, so its refund could not bring it back anyway.
 */
export function unsettledDisputeOf(db: Db, artworkId: string): Promise<{ id: string; transaction_id: string; status: "open" | "resolved" } | undefined> {
  return db
    .selectFrom("disputes")
    .select(["disputes.id", "disputes.transaction_id", "disputes.status"])
    .where("disputes.transaction_id", "=", (eb) =>
      eb.selectFrom("sales").select("id").where("artwork_id", "=", artworkId).where("status", "in", ["completed", "refunded"]).orderBy("created_at", "desc").orderBy("id", "desc").limit(1),
    )
    .where((eb) => eb.or([eb("disputes.status", "=", "open"), eb("disputes.refund_status", "=", "pending"), eb("disputes.certificate_return", "=", "pending")]))
    .limit(1)
    .executeTakeFirst();
}

/** Listings with their artwork's summary (the artworks module's view). */
function withTitle(db: Db) {
  return db.selectFrom("listings").innerJoin("artwork_summaries as artworks", "artworks.id", "listings.artwork_id");
}

export function find(db: Db, id: string): Promise<ListingWithTitle | undefined> {
  return withTitle(db).selectAll("listings").select("artworks.title").where("listings.id", "=", id).executeTakeFirst();
}

/** Row lock for a change decided on the current state; only inside a transaction the service opened. */
export function lock(trx: Transaction<Database>, id: string): Promise<Listing | undefined> {
  return trx.selectFrom("listings").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

/**
 * A listing's move by its sale, only from `from` when given: to `pending_payment` (a sale started),
 * back to `active` (its payment failed), `cancelled` by the platform (its transfer failed) or `sold`
 * (the chain's answer wins over a cancellation: that is undone).
 */
export async function moveBySale(db: Db, id: string, to: "pending_payment" | "active" | "cancelled" | "sold", from?: ListingStatus): Promise<void> {
  const closing = to === "cancelled" ? { cancelled_at: sql<Date>`now()`, cancelled_by: null } : to === "sold" ? { cancelled_at: null, cancelled_by: null } : {};
  let q = db.updateTable("listings").set({ status: to, ...closing, updated_at: sql<Date>`now()` }).where("id", "=", id);
  if (from) q = q.where("status", "=", from);
  await q.execute();
}

/** Cancels a listing; `by` null: the platform (the token left the seller's wallet). */
export function cancel(db: Db, id: string, by: string | null): Promise<Listing> {
  return db
    .updateTable("listings")
    .set({ status: "cancelled", cancelled_at: sql<Date>`now()`, cancelled_by: by, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Active listings of artworks that are not deleted. Filtered by the artwork (medium, artist), a page
 * joins the artworks. Otherwise the page is found in the listings' own indexes and only its rows
 * are joined ("deferred join"): an artwork cannot be removed while listed (OwnershipService, move
 * `remove`), so every active listing's artwork is in the catalogue, and a deep page skips index
 * entries instead of joining and sorting every active listing.
 */
export async function searchActive(db: Db, filter: ListingFilter, sort: ListingSort, page: Page): Promise<{ rows: ListingWithTitle[]; total: number }> {
  const byArtwork = filter.medium !== undefined || filter.artistId !== undefined;
  if (byArtwork) {
    let query = withTitle(db).where("listings.status", "=", "active").where("artworks.deleted_at", "is", null);
    query = withPrice(query, filter);
    if (filter.medium) query = query.where("artworks.medium", "ilike", containsPattern(filter.medium));
    if (filter.artistId) query = query.where("artworks.artist_id", "=", filter.artistId);
    return paginate(query, page, (q) => ordered(q.selectAll("listings").select("artworks.title"), sort));
  }
  const { rows: ids, total } = await paginate(withPrice(db.selectFrom("listings").where("listings.status", "=", "active"), filter), page, (q) => ordered(q.select("listings.id"), sort));
  if (ids.length === 0) return { rows: [], total };
  const rows = await ordered(withTitle(db).selectAll("listings").select("artworks.title").where("listings.id", "in", ids.map((r) => r.id)), sort).execute();
  return { rows, total };
}

function withPrice<Q extends SelectQueryBuilder<Database, any, {}>>(query: Q, filter: ListingFilter): Q {
  let q = query;
  if (filter.priceMinCents !== undefined) q = q.where("listings.price_cents", ">=", filter.priceMinCents) as Q;
  if (filter.priceMaxCents !== undefined) q = q.where("listings.price_cents", "<=", filter.priceMaxCents) as Q;
  return q;
}

function ordered<Q extends SelectQueryBuilder<Database, any, any>>(q: Q, sort: ListingSort): Q {
  switch (sort) {
    case "newest":
      return q.orderBy("listings.created_at", "desc").orderBy("listings.id", "desc") as Q;
    case "oldest":
      return q.orderBy("listings.created_at", "asc").orderBy("listings.id", "asc") as Q;
    case "price_asc":
      return q.orderBy("listings.price_cents", "asc").orderBy("listings.id", "asc") as Q;
    case "price_desc":
      return q.orderBy("listings.price_cents", "desc").orderBy("listings.id", "desc") as Q;
  }
}
