import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import { defineModule, migrationsOf } from "../module.ts";
import type { UsersService } from "../users/users.service.ts";
import { registerWithdrawalsRoutes } from "./withdrawals.routes.ts";
import { WithdrawalsService } from "./withdrawals.service.ts";

/**
 * Withdrawals (docs/wallets.md#taking-your-assets-to-your-own-wallet): a custodial user's certificate,
 * shares or payment token to a wallet they linked, through the chain operations `withdrawal`,
 * `withdrawal_shares` and `withdrawal_payment_token`. Tables: withdrawals.tables.ts.
 */
export const withdrawalsModule = defineModule<{ withdrawals: WithdrawalsService }, { users: UsersService; artworks: ArtworksService; ownership: OwnershipService }>({
  name: "withdrawals",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, config, logger, users, artworks, ownership, chainOperations, publicClient, relayer, custody }) => {
    const withdrawals = new WithdrawalsService({
      db,
      logger,
      users,
      artworks,
      ownership,
      operations: chainOperations,
      publicClient,
      relayer,
      custody,
      viewsSchema: config.indexer.viewsSchema,
      chain: { id: config.chain.id, certificate: config.chain.artCertificateAddress, shares: config.chain.artSharesAddress, paymentToken: config.chain.paymentTokenAddress },
    });
    ownership.registerStates({ name: "withdrawals", statesOf: (trx, artworkId) => withdrawals.statesOf(trx, artworkId) });
    return { withdrawals };
  },
  routes: ({ api }, { withdrawals }) => registerWithdrawalsRoutes(api, withdrawals),
  chainOperationKinds: ({ withdrawals }) => withdrawals.kinds(),
});
