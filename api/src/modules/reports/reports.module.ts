import type { CertificationPipeline } from "../artworks/certification.service.ts";
import type { ChallengesService } from "../community/challenges.service.ts";
import type { DisputesService } from "../marketplace/disputes.service.ts";
import { defineModule } from "../module.ts";
import type { Purchases } from "../payments/purchases.service.ts";
import type { UsersService } from "../users/users.service.ts";
import { registerReportsRoutes } from "./reports.routes.ts";
import { ReportsService } from "./reports.service.ts";

/**
 * Admin reports (docs/integrators/admin.md#reports): a quarter's figures as JSON or CSV
 * (`/v1/admin/reports`) and as an HTML page with charts (`/admin/reports`). No tables: it asks the
 * other features' services.
 */
export const reportsModule = defineModule<{ reports: ReportsService }, { users: UsersService; purchases: Purchases; certification: CertificationPipeline; challenges: ChallengesService; disputes: DisputesService }>({
  name: "reports",
  create: ({ users, purchases, certification, challenges, disputes }) => ({ reports: new ReportsService({ users, purchases, certification, challenges, disputes }) }),
  routes: ({ api, app }, { reports }) => registerReportsRoutes({ api, app }, reports),
});
