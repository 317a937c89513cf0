import type { CertificationPipeline } from "../artworks/certification.ts";
import type { ChallengesService } from "../community/challenges.service.ts";
import type { DisputesService } from "../marketplace/disputes.service.ts";
import { defineModule } from "../module.ts";
import type { UsersService } from "../users/users.service.ts";
import { registerReportsRoutes } from "./reports.routes.ts";
import { ReportsService } from "./reports.service.ts";

/**
 * Admin reports (README, Admin reports): a quarter's figures as JSON or CSV (`/v1/admin/reports`)
 * and as an HTML page with charts (`/admin/reports`). No tables: it asks the other features' services (the volume still reads payments' table).
 */
export const reportsModule = defineModule<{ reports: ReportsService }, { users: UsersService; certification: CertificationPipeline; challenges: ChallengesService; disputes: DisputesService }>({
  name: "reports",
  create: ({ db, users, certification, challenges, disputes }) => ({ reports: new ReportsService({ db, users, certification, challenges, disputes }) }),
  routes: ({ api, app }, { reports }) => registerReportsRoutes({ api, app }, reports),
});
