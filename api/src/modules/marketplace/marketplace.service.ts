import type { Kysely } from "kysely";
import { type IndexedCertificate, type IndexedCertificates, IndexerNotReadyError } from "../../chain/certificates.ts";
import type { Database } from "../../db/database.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { centsToUsd, usdToCents } from "../../lib/money.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { Actor, ArtworksService } from "../artworks/artworks.service.ts";
import type { UsersService } from "../users/users.service.ts";
import * as repo from "./marketplace.repository.ts";
import type { ListingCreate, ListingsQuery } from "./marketplace.schemas.ts";

/**
 * Marketplace listings. Who may list is the chain's answer, not a column: the seller's wallet must
 * be the current owner of the artwork's certificate as the indexer shows it. Provenance entries go
 * through the artworks service.
 */
export class MarketplaceService {
  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      artworks: ArtworksService;
      users: UsersService;
      certificates: IndexedCertificates;
    },
  ) {}

  /**
   * Lists a certified artwork for its on-chain owner. Refusals: unknown artwork (400), not certified
   * on-chain (409 invalid_state), not the owner (403), an external wallet (409 invalid_state: the
   * approval flow does not exist yet), an open listing already (409 conflict, also under races: the
   * partial unique index decides).
   */
  async createListing(actor: Actor, input: ListingCreate, transact: Transact = transactOn(this.deps.db)) {
    const { artworks, users } = this.deps;
    const artwork = await artworks.findAny(input.artwork_id);
    if (!artwork || artwork.deleted_at) throw ApiError.validation([{ field: "artwork_id", code: "not_found", message: "no such artwork" }]);
    const certificate = await this.certificateOf(artwork.id);
    if (!certificate) {
      throw ApiError.conflict(
        "invalid_state",
        `The artwork is not certified on-chain${artwork.status === "certified" ? " in the indexer yet; retry shortly" : ` (status ${artwork.status})`}: only certified artworks can be listed`,
      );
    }
    const seller = await users.get(actor.userId);
    if (certificate.owner.toLowerCase() !== seller.wallet_address.toLowerCase()) {
      throw ApiError.forbidden(`Only the on-chain owner of the artwork's certificate (token ${certificate.tokenId}) may list it; your wallet does not hold it`);
    }
    if (seller.wallet_kind !== "custodial") {
      throw ApiError.conflict(
        "invalid_state",
        "Listing from an external wallet (signed in with Ethereum) needs an on-chain approval of the platform's settlement contract, which is not available yet: for now only artworks held in a custodial wallet can be listed",
      );
    }
    return transact(async (trx) => {
      const created = await repo.insertUnlessOpen(trx, {
        id: newId("listing"),
        artwork_id: artwork.id,
        seller_id: seller.id,
        seller_wallet: certificate.owner.toLowerCase(),
        token_id: certificate.tokenId,
        price_cents: usdToCents(input.price_usd),
        currency: "USD",
        accepts_offers: input.accepts_offers,
        status: "active",
      });
      if (!created) {
        const open = await repo.openListingOf(trx, artwork.id);
        throw ApiError.conflict("conflict", `The artwork already has an open listing${open ? ` (${open.id}, ${open.status})` : ""}; cancel it first`);
      }
      await artworks.recordMarketplaceProvenance(trx, { artworkId: artwork.id, event: "listed", actorId: actor.userId, listingId: created.id, at: created.created_at });
      return toListing({ ...created, title: artwork.title });
    });
  }

  /** Active listings of artworks that are not deleted; filters in dollars match cents inclusively. */
  async list(query: Omit<ListingsQuery, "page" | "limit">, page: Page) {
    const { rows, total } = await repo.searchActive(
      this.deps.db,
      {
        priceMinCents: query.price_min === undefined ? undefined : BigInt(Math.ceil(query.price_min * 100 - 1e-6)),
        priceMaxCents: query.price_max === undefined ? undefined : BigInt(Math.floor(query.price_max * 100 + 1e-6)),
        medium: query.medium,
        artistId: query.artist_id,
      },
      query.sort,
      page,
    );
    return paginated(rows.map(toListing), page, total);
  }

  /** Any listing by id, whatever its status (listings are public, as their history). */
  async get(id: string) {
    return toListing(found(isId("listing", id) ? await repo.find(this.deps.db, id) : undefined, "Listing"));
  }

  /** Cancels an active listing: its seller or an admin (others 403: the listing is public, so it is not hidden). */
  async cancel(actor: Actor, id: string) {
    const { db, artworks } = this.deps;
    return db.transaction().execute(async (trx) => {
      const listing = found(isId("listing", id) ? await repo.lock(trx, id) : undefined, "Listing");
      if (actor.role !== "admin" && actor.userId !== listing.seller_id) throw ApiError.forbidden("Only the seller or an admin may cancel this listing");
      if (listing.status !== "active") throw ApiError.conflict("invalid_state", `The listing is ${listing.status}: only an active listing can be cancelled`);
      const cancelled = await repo.cancel(trx, listing.id, actor.userId);
      await artworks.recordMarketplaceProvenance(trx, { artworkId: listing.artwork_id, event: "delisted", actorId: actor.userId, listingId: listing.id, at: cancelled.cancelled_at! });
      return toListing((await repo.find(trx, listing.id))!);
    });
  }

  private async certificateOf(artworkId: string): Promise<IndexedCertificate | undefined> {
    try {
      return await this.deps.certificates.byArtworkId(artworkId);
    } catch (err) {
      if (err instanceof IndexerNotReadyError) {
        throw new ApiError(503, "service_unavailable", "The chain indexer is not ready yet; retry shortly", { headers: { "Retry-After": "5" } });
      }
      throw err;
    }
  }
}

function toListing(l: repo.ListingWithTitle) {
  return {
    listing_id: l.id,
    artwork_id: l.artwork_id,
    title: l.title,
    seller_id: l.seller_id,
    price_usd: centsToUsd(l.price_cents),
    currency: l.currency,
    accepts_offers: l.accepts_offers,
    listed_at: iso(l.created_at),
    status: l.status,
  };
}
