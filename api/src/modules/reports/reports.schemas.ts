import { timestamp } from "../../lib/schema.ts";
import { usdValue } from "../../lib/money.ts";
import { z } from "../../openapi/zod.ts";
import { QUARTER_PATTERN } from "./quarters.ts";
import { FIGURE_NOTES } from "./report-figures.ts";

export const REPORT_FORMATS = ["json", "csv"] as const;

// Checked by the service (400 validation_failed naming `period`), not here: a malformed label is a
// failed validation of the report's input, told apart from a query the router cannot read at all.
const period = z.string().optional().openapi({
  description: "A calendar quarter in UTC, `YYYY-Qn` (n = 1..4), that has begun; default: the current quarter.",
  pattern: QUARTER_PATTERN,
  example: "2026-Q3",
});

export const reportQuery = z.object({
  period,
  format: z
    .string()
    .optional()
    .openapi({ description: "`json` (default) or `csv`; wins over the Accept header. Any other value is 400.", enum: [...REPORT_FORMATS] }),
});

export const reportPageQuery = z.object({ period });

export const reportSchema = z
  .object({
    period: z.string().openapi({ example: "2026-Q3", description: "The quarter reported (UTC)" }),
    new_users: z.number().int().openapi({ description: FIGURE_NOTES.new_users }),
    artworks_certified: z.number().int().openapi({ description: FIGURE_NOTES.artworks_certified }),
    total_volume_usd: usdValue.openapi({ description: `US dollars. ${FIGURE_NOTES.total_volume_usd}` }),
    active_disputes: z.number().int().openapi({ description: FIGURE_NOTES.active_disputes }),
    challenges_completed: z.number().int().openapi({ description: FIGURE_NOTES.challenges_completed }),
    generated_at: timestamp.openapi({ description: "When the figures were read; a quarter in progress is counted up to this instant" }),
  })
  .openapi("Report", { description: "A quarter's figures (reference §Report). Quarters are calendar quarters in UTC, half-open: [start, start of the next)." });
