import type { ArtworksService } from "../artworks/artworks.service.ts";
import { defineModule, migrationsOf } from "../module.ts";
import type { UsersService } from "../users/users.service.ts";
import { registerMarketplaceRoutes } from "./marketplace.routes.ts";
import { MarketplaceService } from "./marketplace.service.ts";

/**
 * The marketplace: listings so far (README, Marketplace). Buy-now, offers, settlement on-chain,
 * disputes and the ledger are not built yet. Tables: marketplace.tables.ts.
 */
export const marketplaceModule = defineModule<{ marketplace: MarketplaceService }, { users: UsersService; artworks: ArtworksService }>({
  name: "marketplace",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, indexedCertificates, users, artworks }) => ({
    marketplace: new MarketplaceService({ db, artworks, users, certificates: indexedCertificates }),
  }),
  routes: ({ api }, { marketplace }) => registerMarketplaceRoutes(api, marketplace),
});
