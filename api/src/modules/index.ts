import { artworksModule } from "./artworks/artworks.module.ts";
import { authModule } from "./auth/auth.module.ts";
import { certificatesModule } from "./certificates/certificates.module.ts";
import { communityModule } from "./community/community.module.ts";
import { eventsModule } from "./events/events.module.ts";
import { fractionalModule } from "./fractional/fractional.module.ts";
import { healthModule } from "./health/health.module.ts";
import { ledgerModule } from "./ledger/ledger.module.ts";
import { marketplaceModule } from "./marketplace/marketplace.module.ts";
import type { ServicesOf } from "./module.ts";
import { paymentsModule } from "./payments/payments.module.ts";
import { reportsModule } from "./reports/reports.module.ts";
import { rewardsModule } from "./rewards/rewards.module.ts";
import { usersModule } from "./users/users.module.ts";
import { webhooksModule } from "./webhooks/webhooks.module.ts";
import { withdrawalsModule } from "./withdrawals/withdrawals.module.ts";

/**
 * Every feature module, in construction order: a module comes after those whose services it uses
 * (its `Needs`). Routes are declared, tasks and handlers registered, in this order too.
 */
export const modules = [healthModule, usersModule, authModule, artworksModule, certificatesModule, webhooksModule, ledgerModule, paymentsModule, marketplaceModule, fractionalModule, communityModule, reportsModule, eventsModule, rewardsModule, withdrawalsModule] as const;

/** The modules' migration folders, for the migrator (api/src/db/migrate.ts) with the shared one. */
export const moduleMigrations: readonly string[] = modules.flatMap((m) => ("migrations" in m && m.migrations ? [m.migrations] : []));

/** The services of every module, by name (what routes, tests and the worker reach). */
export type Services = ServicesOf<typeof modules>;
