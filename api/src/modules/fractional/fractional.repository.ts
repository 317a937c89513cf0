import { type Insertable, sql } from "kysely";
import type { Db } from "../../db/database.ts";
import { type Page, paginate } from "../../lib/pagination.ts";
import type { FractionalArtwork, FractionalArtworksTable, FractionalPurchase, FractionalPurchasesTable } from "./fractional.tables.ts";

/** What a class is created with (and created with again after it failed). */
export type ClassTerms = Pick<Insertable<FractionalArtworksTable>, "token_id" | "owner_id" | "created_by" | "total_shares" | "price_per_share_cents" | "status">;

// ---- share classes (fractional_artworks) ----

export function find(db: Db, artworkId: string): Promise<FractionalArtwork | undefined> {
  return db.selectFrom("fractional_artworks").selectAll().where("artwork_id", "=", artworkId).executeTakeFirst();
}

export function insert(db: Db, artworkId: string, terms: ClassTerms): Promise<FractionalArtwork> {
  return db.insertInto("fractional_artworks").values({ artwork_id: artworkId, ...terms }).returningAll().executeTakeFirstOrThrow();
}

/** A class whose creation failed, asked for again with new terms. */
export function renew(db: Db, artworkId: string, terms: ClassTerms): Promise<FractionalArtwork> {
  return db.updateTable("fractional_artworks").set({ ...terms, updated_at: sql<Date>`now()` }).where("artwork_id", "=", artworkId).returningAll().executeTakeFirstOrThrow();
}

/** A pending class, on-chain now (its transaction and when it was confirmed are its chain operation's). */
export async function activate(db: Db, artworkId: string): Promise<void> {
  await db
    .updateTable("fractional_artworks")
    .set({ status: "active", updated_at: sql<Date>`now()` })
    .where("artwork_id", "=", artworkId)
    .where("status", "=", "pending")
    .execute();
}

/** A class whose creation failed for good (why is its chain operation's). */
export async function markFailed(db: Db, artworkId: string): Promise<void> {
  await db.updateTable("fractional_artworks").set({ status: "failed", updated_at: sql<Date>`now()` }).where("artwork_id", "=", artworkId).execute();
}

/** The class of a share token (the certificate's token id) once it is on-chain. */
export function findActiveByToken(db: Db, tokenId: bigint): Promise<FractionalArtwork | undefined> {
  return db.selectFrom("fractional_artworks").selectAll().where("token_id", "=", tokenId).where("status", "=", "active").executeTakeFirst();
}

/** The artworks of the classes of these tokens. */
export function artworksOfTokens(db: Db, tokenIds: bigint[]): Promise<Pick<FractionalArtwork, "artwork_id" | "token_id">[]> {
  return db.selectFrom("fractional_artworks").select(["artwork_id", "token_id"]).where("token_id", "in", tokenIds).execute();
}

/** The artwork's class, when it is asked for or on-chain. */
export function openClassOf(db: Db, artworkId: string): Promise<Pick<FractionalArtwork, "status" | "total_shares"> | undefined> {
  return db.selectFrom("fractional_artworks").select(["status", "total_shares"]).where("artwork_id", "=", artworkId).where("status", "in", ["pending", "active"]).executeTakeFirst();
}

/** Active classes, newest first. */
export function listActive(db: Db, page: Page): Promise<{ rows: FractionalArtwork[]; total: number }> {
  const query = db.selectFrom("fractional_artworks").where("status", "=", "active");
  return paginate(query, page, (q) => q.selectAll().orderBy("created_at", "desc").orderBy("artwork_id", "desc"));
}

/** Title and artist of artworks, from the artworks' and users' views. */
export function artworkDetails(db: Db, artworkIds: string[]): Promise<{ id: string; title: string; artist_id: string; display_name: string }[]> {
  return db
    .selectFrom("artwork_summaries as artworks")
    .innerJoin("user_directory as users", "users.id", "artworks.artist_id")
    .select(["artworks.id", "artworks.title", "artworks.artist_id", "users.display_name"])
    .where("artworks.id", "in", artworkIds)
    .execute();
}

/** The users with these wallets (lower-case; their own or linked), from the users' view. */
export function usersOfWallets(db: Db, wallets: string[]): Promise<{ id: string; wallet_address: string }[]> {
  return db.selectFrom("user_wallet_directory").select(["user_id as id", "wallet as wallet_address"]).where("wallet", "in", wallets).execute();
}

/**
 * Reserves shares for `ownerId`'s buyer with one conditional UPDATE: concurrent purchases never
 * exceed the cap. The class as it left it, or undefined when too few are left.
 */
export function reserveShares(db: Db, artworkId: string, quantity: number, ownerId: string): Promise<FractionalArtwork | undefined> {
  return db
    .updateTable("fractional_artworks")
    .set({ shares_sold: sql<number>`shares_sold + ${quantity}`, owner_id: ownerId, updated_at: sql<Date>`now()` })
    .where("artwork_id", "=", artworkId)
    .where(sql<boolean>`shares_sold + ${quantity} <= total_shares`)
    .returningAll()
    .executeTakeFirst();
}

export function sharesOf(db: Db, artworkId: string): Promise<Pick<FractionalArtwork, "total_shares" | "shares_sold">> {
  return db.selectFrom("fractional_artworks").select(["total_shares", "shares_sold"]).where("artwork_id", "=", artworkId).executeTakeFirstOrThrow();
}

export async function releaseShares(db: Db, artworkId: string, shares: number): Promise<void> {
  await db
    .updateTable("fractional_artworks")
    .set({ shares_sold: sql<number>`shares_sold - ${shares}`, updated_at: sql<Date>`now()` })
    .where("artwork_id", "=", artworkId)
    .execute();
}

/** Adds minted shares to the class's confirmed ones; the class. */
export function confirmShares(db: Db, artworkId: string, shares: number): Promise<FractionalArtwork> {
  return db
    .updateTable("fractional_artworks")
    .set({ shares_confirmed: sql<number>`shares_confirmed + ${shares}`, updated_at: sql<Date>`now()` })
    .where("artwork_id", "=", artworkId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

// ---- purchases (fractional_purchases) ----

export function insertPurchase(db: Db, purchase: Insertable<FractionalPurchasesTable>): Promise<FractionalPurchase> {
  return db.insertInto("fractional_purchases").values(purchase).returningAll().executeTakeFirstOrThrow();
}

export function findPurchase(db: Db, id: string): Promise<FractionalPurchase | undefined> {
  return db.selectFrom("fractional_purchases").selectAll().where("id", "=", id).executeTakeFirst();
}

/** The purchases of these keys (lower-case). */
export function purchasesOfKeys(db: Db, purchaseKeys: string[]): Promise<Pick<FractionalPurchase, "id" | "purchase_key">[]> {
  return db.selectFrom("fractional_purchases").select(["id", "purchase_key"]).where("purchase_key", "in", purchaseKeys).execute();
}

/** A purchase whose shares are still reserved (not minted, not released). */
export function findPending(db: Db, id: string): Promise<FractionalPurchase | undefined> {
  return db.selectFrom("fractional_purchases").selectAll().where("id", "=", id).where("status", "=", "pending").executeTakeFirst();
}

/** A pending purchase failed (its shares are released by the caller); undefined when it was no longer pending. */
export function failPurchase(db: Db, id: string): Promise<FractionalPurchase | undefined> {
  return db
    .updateTable("fractional_purchases")
    .set({ status: "failed", updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("status", "=", "pending")
    .returningAll()
    .executeTakeFirst();
}

/** The pending purchase of a minted key, confirmed; undefined when it was no longer pending. */
export function confirmPurchase(db: Db, purchaseKey: string): Promise<FractionalPurchase | undefined> {
  return db
    .updateTable("fractional_purchases")
    .set({ status: "confirmed", updated_at: sql<Date>`now()` })
    .where("purchase_key", "=", purchaseKey)
    .where("status", "=", "pending")
    .returningAll()
    .executeTakeFirst();
}

/** Shares of an artwork in `buyerId`'s confirmed purchases. */
export async function confirmedSharesOf(db: Db, artworkId: string, buyerId: string): Promise<number> {
  const sum = await db
    .selectFrom("fractional_purchases")
    .select(sql<string>`coalesce(sum(shares), 0)`.as("n"))
    .where("artwork_id", "=", artworkId)
    .where("buyer_id", "=", buyerId)
    .where("status", "=", "confirmed")
    .executeTakeFirstOrThrow();
  return Number(sum.n);
}

export async function setOwnershipBps(db: Db, id: string, bps: number): Promise<void> {
  await db.updateTable("fractional_purchases").set({ new_ownership_bps: bps }).where("id", "=", id).execute();
}
