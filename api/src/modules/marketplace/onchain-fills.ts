import type { Transaction } from "kysely";
import type { Logger } from "pino";
import { UNITS_PER_CENT } from "../../chain/exchange.ts";
import type { IndexedProjection } from "../../chain/operations.ts";
import type { Database } from "../../db/database.ts";
import { isId, newId } from "../../lib/ids.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import type { LedgerAppend, LedgerService } from "../ledger/ledger.service.ts";
import type { Purchases } from "../payments/purchases.service.ts";
import type { UsersService } from "../users/users.service.ts";
import * as orders from "./exchange.repository.ts";
import type { ExchangeService } from "./exchange.service.ts";
import * as listings from "./marketplace.repository.ts";
import type { Sale } from "./marketplace.tables.ts";
import * as offers from "./offers.repository.ts";
import { finishSale, partiesOf, payoutOf } from "./sale-records.ts";
import * as repo from "./sales.repository.ts";
import type { Fill, IndexedMarket } from "../../chain/indexer-views.ts";

export interface OnchainFillsDeps {
  logger: Logger;
  purchases: Purchases;
  artworks: ArtworksService;
  users: UsersService;
  ledger: LedgerService;
  ownership: OwnershipService;
  views: IndexedMarket;
  exchange: Pick<ExchangeService, "cancelOpenOrders" | "markFilled">;
}

/**
 * Wallets' fills of the platform's orders, as the indexer shows them, each once (the order's hash
 * is unique among sales): the same records as a card sale (the `sale` transaction through the
 * purchase lifecycle, paid `onchain`; the royalty payout; the listing sold; provenance;
 * `payment.completed`; the ledger), the buyer's account found by its wallet (signed in, linked or
 * custodial) or none. A card sale of the listing still under way lost the race: it closes and its
 * charge goes back (docs/integrators/onchain-purchases.md#one-sale-per-listing).
 */
export class OnchainFills {
  private readonly log: Logger;

  constructor(private readonly deps: OnchainFillsDeps) {
    this.log = deps.logger.child({ component: "marketplace-fills" });
  }

  readonly projection: IndexedProjection<Fill> = {
    consumer: "marketplace_exchange_fills",
    read: (fromBlock, toBlock) => this.deps.views.fillsInBlocks(fromBlock, toBlock),
    apply: async (trx, fills) => {
      const appends: LedgerAppend[] = [];
      for (const fill of fills) await this.record(trx, fill, appends);
      for (const entry of appends) await this.deps.ledger.append(trx, entry);
    },
  };

  private async record(trx: Transaction<Database>, fill: Fill, appends: LedgerAppend[]): Promise<void> {
    const { users, purchases, exchange } = this.deps;
    const named = isId("listing", fill.listingId);
    const seen = named ? await listings.find(trx, fill.listingId) : undefined;
    // A fill mined is a chain fact: nothing refuses it, but it is written under the artwork's lock as
    // every move is. Then a card sale under way, then the listing: the order every sale's transfer
    // locks them in (a card sale's settlement failing at this very block takes the same locks).
    if (seen) await this.deps.ownership.lockForChainFact(trx, seen.artwork_id);
    let live = named ? await repo.lockLiveOf(trx, fill.listingId) : undefined;
    const listing = named ? await listings.lock(trx, fill.listingId) : undefined;
    // A card sale started while the listing's lock was awaited is seen now.
    if (listing && !live) live = await repo.lockLiveOf(trx, fill.listingId);
    if (await repo.fillRecorded(trx, fill.orderHash)) return;
    const sold = listing && (await repo.soldOf(trx, listing.id));
    if (!listing || sold || listing.token_id !== fill.tokenId || listing.seller_wallet !== fill.seller) {
      // Not a sale of this platform: an order a self-custodied seller signed for itself with another
      // listing id, or one of another platform's database on the same contracts. The chain keeps it;
      // only an order this platform signed would be a fault here.
      if (await orders.find(trx, fill.orderHash)) this.log.error({ order_hash: fill.orderHash, listing_id: fill.listingId, tx_hash: fill.txHash }, "a fill of an order the platform signed matches no sellable listing");
      return;
    }
    if (live) appends.push(await this.loseTo(trx, live, fill));

    // ArtExchange splits in whole cents (its royalty and fee rounded as a card sale's): the cents below are exact.
    if ([fill.price, fill.fee, fill.royalty].some((units) => units % UNITS_PER_CENT !== 0n)) {
      this.log.error({ order_hash: fill.orderHash, tx_hash: fill.txHash }, "a fill split in fractions of a cent (an exchange deployed before whole-cent splits): the sale's cents are rounded down");
    }
    const priceCents = fill.price / UNITS_PER_CENT;
    const feeCents = fill.fee / UNITS_PER_CENT;
    const royaltyApplies = fill.royalty > 0n && fill.royaltyReceiver !== fill.seller;
    const royaltyCents = royaltyApplies ? fill.royalty / UNITS_PER_CENT : 0n;
    const payoutCents = payoutOf(priceCents, feeCents, royaltyCents);
    const buyer = await users.findByWallet(trx, fill.buyer);
    const royaltyRecipient = royaltyApplies ? await users.findByWallet(trx, fill.royaltyReceiver) : undefined;
    const id = newId("transaction");
    const { purchase, ledger } = await purchases.recordPaidOnChain(
      trx,
      {
        type: "sale",
        id,
        referenceId: id,
        artworkId: listing.artwork_id,
        amountCents: priceCents,
        amountUnits: fill.price,
        currency: fill.currency,
        feeCents,
        buyerId: buyer?.id ?? null,
        buyerWallet: fill.buyer,
        sellerId: listing.seller_id,
        recipientId: listing.seller_id,
        recipientWallet: listing.seller_wallet,
      },
      {
        royaltyCents,
        payoutCents,
        chainTx: fill.txHash,
        payouts: royaltyApplies ? [{ amountCents: royaltyCents, recipientId: royaltyRecipient?.id ?? null, recipientWallet: fill.royaltyReceiver }] : [],
      },
    );
    const sale = await repo.insert(trx, {
      id,
      listing_id: listing.id,
      offer_id: null,
      artwork_id: listing.artwork_id,
      token_id: listing.token_id,
      buyer_id: buyer?.id ?? null,
      seller_id: listing.seller_id,
      buyer_wallet: fill.buyer,
      seller_wallet: listing.seller_wallet,
      price_cents: priceCents,
      payment_method_id: null,
      payment_method: "onchain",
      order_hash: fill.orderHash,
      status: "completed",
    });
    await exchange.markFilled(trx, fill.orderHash, sale.id);
    appends.push(ledger);
    const figures = { feeCents, royaltyCents, payoutCents, royaltyReceiver: royaltyApplies ? fill.royaltyReceiver : null, royaltyRecipientId: royaltyRecipient?.id ?? null, txHash: fill.txHash, completedAt: purchase.completed_at!, at: fill.at };
    await finishSale(this.deps, trx, sale, figures, appends);
  }

  /**
   * A card sale of the listing was under way when a wallet's fill took the certificate: it ends
   * `lost_to_fill`. Paid: its purchase's effect fails (code `sold_onchain`) and the charge is
   * refunded now (its transfer, if sent, fails on-chain and changes nothing more). Not yet charged:
   * a charge that still succeeds finds the sale closed and goes back (the purchase's onCharged), a
   * decline just fails it.
   */
  private async loseTo(trx: Transaction<Database>, sale: Sale, fill: Fill): Promise<LedgerAppend> {
    const reason = `A wallet bought the listing on-chain first (${fill.txHash})`;
    await repo.move(trx, sale.id, [sale.status], "lost_to_fill");
    if (sale.status === "paid") await this.deps.purchases.failEffect(trx, sale.id, { code: "sold_onchain", reason: `The certificate could not be transferred: ${reason}` });
    if (sale.offer_id) await offers.move(trx, sale.offer_id, "accepted", "payment_failed");
    return { kind: "settlement.failed", subjectId: sale.id, actorId: null, parties: partiesOf(sale), data: { transaction_id: sale.id, reason, code: "sold_onchain" } };
  }
}
