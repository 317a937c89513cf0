import type { Quarter } from "./quarters.ts";

/** What a quarter's report holds, and what each of its figures means: shared by the service, its schemas and its page. */

/** What each figure means (the page says it beside the number; docs/integrators/admin.md and OpenAPI say the same). */
export const FIGURE_NOTES = {
  new_users: "Accounts created in the quarter, any role or status.",
  artworks_certified: "Certificates minted on-chain in the quarter (the block's time), deleted artworks included.",
  total_volume_usd: "Sales, share purchases and ticket purchases completed in the quarter and not refunded since (royalty payouts are part of their sale).",
  active_disputes: "Marketplace disputes open now, when the report is generated, whatever the quarter.",
  challenges_completed: "Challenges whose deadline fell in the quarter and has passed.",
} as const;

/** A quarter's figures, counted up to `generatedAt` (the end of the quarter once it is over). */
export interface QuarterReport {
  period: Quarter;
  newUsers: number;
  artworksCertified: number;
  volumeCents: bigint;
  /** Open when the report was generated, whatever the period. */
  activeDisputes: number;
  challengesCompleted: number;
  generatedAt: Date;
}
