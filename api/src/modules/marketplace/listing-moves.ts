import type { Transaction } from "kysely";
import type { Database } from "../../db/database.ts";
import type { Actor } from "../../lib/actor.ts";
import type { ArtworkMove, OwnershipService } from "../artworks/ownership.service.ts";
import * as listings from "./marketplace.repository.ts";
import type { Listing } from "./marketplace.tables.ts";

/** The moves on an artwork that name one of its listings. */
export type ListingMove = Extract<ArtworkMove, "delist" | "buy" | "offer" | "accept_offer" | "fill">;

/**
 * A move on a listing (docs/ownership-and-money.md#moves), decided in `trx` under its artwork's
 * lock and then the listing's (the order every move on a listing takes them in): the listing,
 * locked, once the table allows the move. `wallet`: the wallet making it when no account asks (an
 * on-chain order's buyer). No such listing: undefined.
 */
export async function decideListingMove(
  ownership: OwnershipService,
  trx: Transaction<Database>,
  listingId: string,
  move: ListingMove,
  actor: Actor | null,
  wallet?: string,
): Promise<Listing | undefined> {
  const seen = await listings.find(trx, listingId);
  if (!seen) return undefined;
  let listing!: Listing;
  await ownership.decide(trx, seen.artwork_id, move, actor, async () => {
    listing = (await listings.lock(trx, listingId))!;
    return wallet ? { listing, wallet } : { listing };
  });
  return listing;
}
