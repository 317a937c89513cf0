import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { LedgerService } from "../ledger/ledger.service.ts";
import type { MarketplaceService } from "../marketplace/marketplace.service.ts";
import { defineModule, migrationsOf } from "../module.ts";
import type { PaymentsService } from "../payments/payments.service.ts";
import type { UsersService } from "../users/users.service.ts";
import { registerFractionalRoutes } from "./fractional.routes.ts";
import { FractionalService, SHARE_CHARGE_TASK, SHARE_REFUND_TASK } from "./fractional.service.ts";

/**
 * Fractional ownership (README, Fractional ownership): share classes on ArtShares, purchases
 * reserved atomically, charged through `payments` and minted through chain operations
 * (`fractional_create_class`, `fractional_mint`). Tables: fractional.tables.ts.
 */
export const fractionalModule = defineModule<
  { fractional: FractionalService },
  { users: UsersService; artworks: ArtworksService; payments: PaymentsService; ledger: LedgerService; marketplace: MarketplaceService }
>({
  name: "fractional",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, config, logger, indexedCertificates, users, artworks, payments, ledger, marketplace, chainOperations, relayer, publicClient }) => ({
    fractional: new FractionalService({
      db,
      logger,
      payments,
      artworks,
      users,
      marketplace,
      ledger,
      operations: chainOperations,
      certificates: indexedCertificates,
      relayer,
      publicClient,
      viewsSchema: config.indexer.viewsSchema,
      artShares: config.chain.artSharesAddress,
      purchaseWaitMs: config.fractional.purchaseWaitMs,
      chargeAttempts: config.marketplace.chargeAttempts,
    }),
  }),
  routes: ({ api }, { fractional }) => registerFractionalRoutes(api, fractional),
  chainOperationKinds: ({ fractional }) => fractional.kinds(),
  worker: ({ fractional }, { config, logger }) => {
    let timer: NodeJS.Timeout | null = null;
    const sweep = () => {
      timer = setTimeout(() => {
        fractional
          .recoverStuckCharges()
          .catch((err: unknown) => logger.error({ err }, "fractional sweep failed"))
          .finally(() => {
            if (timer) sweep();
          });
      }, config.marketplace.sweepIntervalMs);
    };
    return {
      tasks: { general: { [SHARE_CHARGE_TASK]: fractional.chargeTask, [SHARE_REFUND_TASK]: fractional.refundTask } },
      start: sweep,
      stop: async () => {
        if (timer) clearTimeout(timer);
        timer = null;
      },
    };
  },
});
