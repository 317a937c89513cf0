import type { ArtworkAsks } from "../artworks/artwork-asks.service.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import type { LedgerService } from "../ledger/ledger.service.ts";
import { defineModule, migrationsOf } from "../module.ts";
import type { PaymentsService } from "../payments/payments.service.ts";
import type { Purchases } from "../payments/purchases.service.ts";
import type { UsersService } from "../users/users.service.ts";
import { DisputesService } from "./disputes.service.ts";
import { ExchangeService } from "./exchange.service.ts";
import { registerMarketplaceRoutes } from "./marketplace.routes.ts";
import { MarketplaceService } from "./marketplace.service.ts";
import { OFFER_EXPIRE_TASK, OffersService } from "./offers.service.ts";
import { registerSalesRoutes } from "./sales.routes.ts";
import { SalesService } from "./sales.service.ts";

/**
 * The marketplace (docs/integrators/marketplace.md): listings, buy-now, offers, sales settled
 * on-chain through ArtMarket (the `marketplace_settle` chain operation), purchases paid on-chain by
 * wallets through ArtExchange (exchange.service.ts; fills projected by SalesService.onchainFills),
 * transactions and disputes.
 * Money moves through `payments`; every offer move and payment is appended to the audit `ledger`.
 * Tables: marketplace.tables.ts (and payments' `transactions`).
 */
export const marketplaceModule = defineModule<
  { marketplace: MarketplaceService; sales: SalesService; offers: OffersService; disputes: DisputesService; exchange: ExchangeService },
  { users: UsersService; artworks: ArtworksService; artworkAsks: ArtworkAsks; ownership: OwnershipService; payments: PaymentsService; purchases: Purchases; ledger: LedgerService }
>({
  name: "marketplace",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, config, logger, users, artworks, artworkAsks, ownership, payments, purchases, ledger, chainOperations, publicClient, relayer, custody, indexedChain }) => {
    const views = indexedChain.market;
    const chain = { id: config.chain.id, certificate: config.chain.artCertificateAddress, market: config.chain.artMarketAddress };
    // The exchange's steps ask the sales for a custodial wallet's approval (the sales own that path).
    let sales: SalesService;
    const exchange = new ExchangeService({
      db,
      logger,
      users,
      operations: chainOperations,
      views,
      publicClient,
      relayer,
      chain: { id: config.chain.id, certificate: config.chain.artCertificateAddress, exchange: config.chain.artExchangeAddress, paymentToken: config.chain.paymentTokenAddress },
      ownership,
      approveForCustodial: (owner, custodyIndex, operator, onSubmitted) => sales.approveForCustodial(owner, custodyIndex, operator, onSubmitted),
    });
    sales = new SalesService({
      db,
      logger,
      payments,
      purchases,
      artworks,
      users,
      ledger,
      operations: chainOperations,
      views,
      ownership,
      publicClient,
      relayer,
      custody,
      exchange,
      chain,
      purchaseWaitMs: config.marketplace.purchaseWaitMs,
    });
    const offers = new OffersService({ db, users, payments, sales, ownership, ledger });
    const disputes = new DisputesService({ db, users, ownership, purchases, sales, ledger });
    const marketplace = new MarketplaceService({
      db,
      artworks,
      asks: artworkAsks,
      ownership,
      offers,
      exchange,
      views,
      chain,
      logger,
    });
    ownership.registerStates({ name: "marketplace", statesOf: (trx, artworkId) => marketplace.statesOf(trx, artworkId) });
    // A sale's refund is a dispute's: its rules (the sale refunded, the certificate's return) are the disputes'.
    purchases.register({ ...sales.purchaseKind, onRefunded: (trx, purchase, refund, cause) => disputes.onRefunded(trx, purchase, refund, cause) });
    return { marketplace, sales, offers, disputes, exchange };
  },
  routes: ({ api }, services) => {
    registerMarketplaceRoutes(api, services.marketplace);
    registerSalesRoutes(api, services);
  },
  chainOperationKinds: ({ sales, exchange }) => [sales.settlementKind, exchange.approvalKind, exchange.cancelKind],
  chainProjections: ({ sales, marketplace }) => [sales.onchainFills, marketplace.movedListings],
  worker: ({ offers }, { config, logger }) => {
    let timer: NodeJS.Timeout | null = null;
    let running: Promise<void> | null = null;
    let stopped = false;
    // The safety net behind the jobs: offers whose expiry job was lost (a sale's charge is its
    // purchase's: payments sweeps those; a listing whose token moved is the movedListings projection's).
    const sweep = async () => {
      try {
        await offers.expireOverdue();
      } catch (err) {
        logger.error({ err }, "marketplace sweep failed");
      }
    };
    const schedule = () => {
      timer = setTimeout(() => {
        running = sweep().finally(() => {
          running = null;
          if (!stopped) schedule();
        });
      }, config.marketplace.sweepIntervalMs);
    };
    return {
      tasks: {
        general: {
          [OFFER_EXPIRE_TASK]: offers.expireTask,
        },
      },
      start: () => {
        stopped = false;
        schedule();
      },
      stop: async () => {
        stopped = true;
        if (timer) clearTimeout(timer);
        await running;
      },
    };
  },
});
