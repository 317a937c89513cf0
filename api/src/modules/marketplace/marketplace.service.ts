import type { Kysely, Transaction } from "kysely";
import type { Logger } from "pino";
import { IndexerNotReadyError } from "../../chain/indexer-views.ts";
import type { IndexedProjection } from "../../chain/operations.ts";
import type { Database } from "../../db/database.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { centsToUsd, usdToCents } from "../../lib/money.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { ArtworkAsks } from "../artworks/artwork-asks.service.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { Actor } from "../../lib/actor.ts";
import { isCustodialHolding, type OwnershipService, type StateFact } from "../artworks/ownership.service.ts";
import * as repo from "./marketplace.repository.ts";
import type { ExchangeService } from "./exchange.service.ts";
import { decideListingMove } from "./listing-moves.ts";
import type { OffersService } from "./offers.service.ts";
import type { CertificateMove, IndexedMarket } from "../../chain/indexer-views.ts";
import type { ListingCreate, ListingsQuery } from "./marketplace.schemas.ts";

/**
 * Marketplace listings. Who may list is the chain's answer, not a column: the seller's wallet must
 * be the current owner of the artwork's certificate as the indexer shows it, and a listing whose
 * token leaves that wallet on-chain is cancelled. Provenance entries go through the artworks service.
 */
export class MarketplaceService {
  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      artworks: ArtworksService;
      asks: ArtworkAsks;
      ownership: OwnershipService;
      offers: OffersService;
      exchange: ExchangeService;
      views: IndexedMarket;
      chain: { certificate: `0x${string}` | null; market: `0x${string}` | null };
      logger: Logger;
    },
  ) {}

  /**
   * Lists a certified artwork for its on-chain owner: the move `list`, decided under the artwork's
   * lock in the listing's transaction (docs/ownership-and-money.md#moves). Refusals besides the
   * move's: unknown artwork (400), an external wallet that has not approved ArtMarket on-chain yet
   * (409 invalid_state, saying what to sign); the partial unique index keeps one open listing.
   */
  async createListing(actor: Actor, input: ListingCreate, transact: Transact = transactOn(this.deps.db)) {
    const { artworks, ownership } = this.deps;
    const noSuchArtwork = ApiError.validation([{ field: "artwork_id", code: "not_found", message: "no such artwork" }]);
    if (!isId("artwork", input.artwork_id)) throw noSuchArtwork;
    return transact(async (trx) => {
      const decided = await ownership.decide(trx, input.artwork_id, "list", actor);
      if (!decided) throw noSuchArtwork;
      const { artwork, holder } = decided;
      const seller = holder.user!;
      // The platform approves for its custodial wallets; a wallet of the seller's own (signed in with, or linked) approves itself.
      const custodial = isCustodialHolding(holder);
      if (!custodial) await this.requireMarketApproval(holder.wallet, trx);
      const created = await repo.insertUnlessOpen(trx, {
        id: newId("listing"),
        artwork_id: artwork.id,
        seller_id: seller.id,
        seller_wallet: holder.wallet,
        token_id: artwork.token_id!,
        price_cents: usdToCents(input.price_usd),
        currency: "USD",
        accepts_offers: input.accepts_offers,
        status: "active",
      });
      if (!created) {
        const open = await repo.openListingOf(trx, artwork.id);
        throw ApiError.conflict("conflict", `The artwork already has an open listing${open ? ` (${open.id}, ${open.status})` : ""}; cancel it first`);
      }
      // A custodial wallet approves the exchange (once), so that wallets can buy its listings on-chain.
      await this.deps.exchange.prepareSeller(trx, holder.wallet, custodial ? seller.custody_index : null);
      // The listing is the holder's ask: for_sale, at its price (docs/decisions.md#for-sale).
      await this.deps.asks.listed(trx, artwork.id, holder.wallet, created.price_cents);
      await artworks.recordMarketplaceProvenance(trx, { artworkId: artwork.id, event: "listed", actorId: actor.userId, details: { listing_id: created.id, price_usd: centsToUsd(created.price_cents) }, at: created.created_at });
      return toListing({ ...created, title: artwork.title });
    });
  }

  /**
   * The marketplace's states of an artwork (docs/ownership-and-money.md#moves): its open listing
   * (`listed`, or `selling` while a card sale of it is under way), orders of a closed listing a
   * wallet can still fill (`order_fillable`), and its last sale's dispute (`disputed` while open,
   * `refunding` while its refund or the certificate's return is under way).
   */
  async statesOf(trx: Transaction<Database>, artworkId: string): Promise<StateFact[]> {
    const states: StateFact[] = [];
    const listing = await repo.openListingOf(trx, artworkId);
    if (listing?.status === "active") states.push({ state: "listed", detail: `it is listed for sale (${listing.id}); cancel the listing first` });
    if (listing?.status === "pending_payment") states.push({ state: "selling", detail: `a card sale of its listing ${listing.id} is under way (the buyer being charged, or the certificate's transfer being mined)` });
    const fillable = await this.deps.exchange.fillableAfterClosing(trx, artworkId);
    if (fillable) {
      states.push({ state: "order_fillable", detail: `a wallet can still fill the on-chain order ${fillable.order_hash} of its closed listing ${fillable.listing_id} until the order's cancellation is mined (${iso(fillable.fillable_until)} at the latest)` });
    }
    const dispute = await repo.unsettledDisputeOf(trx, artworkId);
    if (dispute?.status === "open") states.push({ state: "disputed", detail: `its sale ${dispute.transaction_id} is disputed (${dispute.id}) until the dispute is resolved` });
    else if (dispute) states.push({ state: "refunding", detail: `its sale ${dispute.transaction_id} is being refunded (${dispute.id}): the money or the certificate is on its way back` });
    return states;
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

  /**
   * Cancels an active listing (the move `delist`): its seller or an admin (others 403: the listing is
   * public, so it is not hidden). Its orders a wallet could fill are cancelled on-chain; until that
   * is mined, the artwork is `order_fillable`.
   */
  async cancel(actor: Actor, id: string) {
    const { db, artworks, ownership } = this.deps;
    if (!isId("listing", id)) throw ApiError.notFound("Listing");
    return db.transaction().execute(async (trx) => {
      const listing = found(await decideListingMove(ownership, trx, id, "delist", actor), "Listing");
      const cancelled = await repo.cancel(trx, listing.id, actor.userId);
      await this.deps.offers.rejectForCancelledListing(trx, listing.id, actor.userId);
      await this.deps.exchange.cancelOpenOrders(trx, listing.id);
      await this.deps.asks.delisted(trx, listing.artwork_id);
      await artworks.recordMarketplaceProvenance(trx, { artworkId: listing.artwork_id, event: "delisted", actorId: actor.userId, details: { listing_id: listing.id }, at: cancelled.cancelled_at! });
      return toListing((await repo.find(trx, listing.id))!);
    });
  }

  /**
   * An external wallet (signed in with Ethereum) sells through ArtMarket only once it has approved
   * it on the certificate contract; the platform cannot sign for it. Until the indexer shows that
   * approval, listing is refused with what to sign.
   */
  private async requireMarketApproval(wallet: string, trx: Transaction<Database>): Promise<void> {
    const { chain, views } = this.deps;
    if (!chain.market || !chain.certificate) throw new ApiError(503, "service_unavailable", "The marketplace's settlement contract is not configured (ART_MARKET_ADDRESS)");
    let approved: boolean;
    try {
      approved = await views.isApprovedForAll(wallet, chain.market, trx);
    } catch (err) {
      if (err instanceof IndexerNotReadyError) throw new ApiError(503, "service_unavailable", "The chain indexer is not ready yet; retry shortly", { headers: { "Retry-After": "5" } });
      throw err;
    }
    if (!approved) {
      throw ApiError.conflict(
        "invalid_state",
        `Your wallet ${wallet} must first approve the platform's settlement contract: from that wallet, call setApprovalForAll(${chain.market}, true) on the certificate contract ${chain.certificate}, then list again once the approval is indexed (a few seconds). The contract can move a certificate only for a sale you listed, once per sale.`,
      );
    }
  }

  /**
   * Listings whose certificate left the seller's wallet on-chain by a plain transfer (a wallet sent
   * it; a fill of the listing's order is a sale, the fills' projection's): each transfer the indexer
   * shows, in chain order, cancels the artwork's active listing of the wallet it left, rejects its
   * pending offers and cancels its orders, under the artwork's lock (a listing being created either
   * commits first and is seen here, or reads the new holder from the chain and is refused). Only the
   * chain's answer cancels: a certificate back with its seller since keeps the listing.
   */
  readonly movedListings: IndexedProjection<CertificateMove> = {
    consumer: "marketplace_moved_listings",
    read: (fromBlock, toBlock) => this.deps.views.movesInBlocks(fromBlock, toBlock),
    apply: async (trx, moves) => {
      let cancelled = 0;
      for (const move of moves) if (await this.cancelMoved(trx, move)) cancelled++;
      if (cancelled > 0) this.deps.logger.info({ cancelled }, "cancelled listings whose certificate left the seller's wallet");
    },
  };

  private async cancelMoved(trx: Transaction<Database>, move: CertificateMove): Promise<boolean> {
    const { artworks, ownership, offers } = this.deps;
    // A transfer mined: a chain fact, written under the artwork's lock as every move is.
    await ownership.lockForChainFact(trx, move.artworkId);
    const open = await repo.openListingOf(trx, move.artworkId);
    const listing = open && (await repo.lock(trx, open.id));
    if (!listing || listing.status !== "active" || listing.seller_wallet !== move.from || listing.token_id !== move.tokenId) return false;
    if ((await ownership.walletHolding(listing.artwork_id, listing.token_id)).wallet === listing.seller_wallet) return false;
    const done = await repo.cancel(trx, listing.id, null);
    await offers.rejectForCancelledListing(trx, listing.id, null);
    await this.deps.exchange.cancelOpenOrders(trx, listing.id);
    await artworks.recordMarketplaceProvenance(trx, { artworkId: listing.artwork_id, event: "delisted", actorId: null, txHash: move.txHash, details: { listing_id: listing.id, reason: "token_moved" }, at: done.cancelled_at! });
    return true;
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
