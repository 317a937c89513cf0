import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import type { LedgerService } from "../ledger/ledger.service.ts";
import { defineModule, migrationsOf } from "../module.ts";
import type { PaymentsService } from "../payments/payments.service.ts";
import type { Purchases } from "../payments/purchases.service.ts";
import type { UsersService } from "../users/users.service.ts";
import { registerFractionalRoutes } from "./fractional.routes.ts";
import { FractionalService } from "./fractional.service.ts";

/**
 * Fractional ownership (docs/integrators/fractional.md): share classes on ArtShares, purchases
 * reserved atomically, charged through `payments` and minted through chain operations
 * (`fractional_create_class`, `fractional_mint`). Tables: fractional.tables.ts.
 */
export const fractionalModule = defineModule<
  { fractional: FractionalService },
  { users: UsersService; artworks: ArtworksService; ownership: OwnershipService; payments: PaymentsService; purchases: Purchases; ledger: LedgerService }
>({
  name: "fractional",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, config, logger, users, artworks, ownership, payments, purchases, ledger, chainOperations, relayer, publicClient, indexedChain }) => {
    const fractional = new FractionalService({
      db,
      logger,
      payments,
      purchases,
      artworks,
      ownership,
      users,
      ledger,
      operations: chainOperations,
      relayer,
      publicClient,
      shares: indexedChain.shares,
      artShares: config.chain.artSharesAddress,
      purchaseWaitMs: config.fractional.purchaseWaitMs,
    });
    purchases.register(fractional.purchaseKind);
    ownership.registerStates({ name: "fractional", statesOf: (trx, artworkId) => fractional.statesOf(trx, artworkId) });
    return { fractional };
  },
  routes: ({ api }, { fractional }) => registerFractionalRoutes(api, fractional),
  chainOperationKinds: ({ fractional }) => fractional.kinds(),
});
