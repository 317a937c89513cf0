import { ApiError } from "../../lib/errors.ts";
import { centsToUsd } from "../../lib/money.ts";
import { iso } from "../../lib/time.ts";
import type { CertificationPipeline } from "../artworks/certification.service.ts";
import type { ChallengesService } from "../community/challenges.service.ts";
import type { DisputesService } from "../marketplace/disputes.service.ts";
import type { Purchases } from "../payments/purchases.service.ts";
import type { UsersService } from "../users/users.service.ts";
import { FIRST_YEAR, parseQuarter, type Quarter, quarterOf, quartersEndingWith, shiftQuarter } from "./quarters.ts";
import type { QuarterReport } from "./report-figures.ts";
import type { ReportPageFacts } from "./report-page.ts";

/**
 * The admins' quarterly figures (docs/integrators/admin.md#reports): new users, certifications,
 * challenges and open disputes through their features' services, the volume through the purchases'
 * (payments). A report writes nothing.
 */
export class ReportsService {
  constructor(
    private readonly deps: {
      users: UsersService;
      purchases: Purchases;
      certification: CertificationPipeline;
      challenges: ChallengesService;
      disputes: DisputesService;
    },
  ) {}

  /** The quarter `label` names (`2026-Q3`), by default the current one (UTC); 400 for a malformed label or a quarter not begun. */
  period(label: string | undefined): Quarter {
    const current = quarterOf(this.now());
    if (label === undefined) return current;
    const quarter = parseQuarter(label);
    if (!quarter) throw periodProblem("invalid_format", "must be a quarter label YYYY-Qn with n from 1 to 4, e.g. 2026-Q3");
    if (quarter.year < FIRST_YEAR) throw periodProblem("too_small", `must be a quarter of ${FIRST_YEAR} or later`);
    if (quarter.startsAt > current.startsAt) throw periodProblem("too_big", `${quarter.label} has not begun; the current quarter is ${current.label}`);
    return quarter;
  }

  async report(quarter: Quarter): Promise<QuarterReport> {
    const generatedAt = this.now();
    const range = { from: quarter.startsAt, to: quarter.endsAt };
    const [newUsers, artworksCertified, volumeCents, activeDisputes, challengesCompleted] = await Promise.all([
      this.deps.users.countJoined(range),
      this.deps.certification.countCertified(range),
      this.deps.purchases.volumeCents(range),
      this.deps.disputes.countOpen(),
      this.deps.challenges.countClosed(range),
    ]);
    return { period: quarter, newUsers, artworksCertified, volumeCents, activeDisputes, challengesCompleted, generatedAt };
  }

  /** The reports of `count` quarters ending with `quarter`, oldest first (the page's chart). */
  async history(quarter: Quarter, count: number): Promise<QuarterReport[]> {
    const reports: QuarterReport[] = [];
    for (const q of quartersEndingWith(quarter, count)) reports.push(await this.report(q));
    return reports;
  }

  /** What the report page shows: the last `count` quarters and the quarters before and after it, when they can be reported. */
  async page(quarter: Quarter, count: number): Promise<ReportPageFacts> {
    const previous = shiftQuarter(quarter, -1);
    const next = shiftQuarter(quarter, 1);
    return {
      history: await this.history(quarter, count),
      previous: previous.year >= FIRST_YEAR ? previous : null,
      next: next.startsAt <= this.now() ? next : null,
    };
  }

  private now(): Date {
    return new Date();
  }
}

/** The Report resource (reference §Report). */
export function toReportView(r: QuarterReport) {
  return {
    period: r.period.label,
    new_users: r.newUsers,
    artworks_certified: r.artworksCertified,
    total_volume_usd: centsToUsd(r.volumeCents),
    active_disputes: r.activeDisputes,
    challenges_completed: r.challengesCompleted,
    generated_at: iso(r.generatedAt),
  };
}

export type ReportView = ReturnType<typeof toReportView>;

function periodProblem(code: string, message: string): ApiError {
  return ApiError.validation([{ field: "period", code, message }]);
}
