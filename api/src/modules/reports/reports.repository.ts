import { sql } from "kysely";
import type { Database, Db } from "../../db/database.ts";

/** A half-open time range [from, to). */
export interface Range {
  from: Date;
  to: Date;
}

/** The money that counts as volume: what buyers paid. A royalty payout is part of its sale, not more. */
export const VOLUME_TYPES: readonly Database["transactions"]["type"][] = ["sale", "share_purchase", "ticket_purchase"];

// The volume reads the payments module's table (allowed in tools/check-table-ownership.ts): PaymentsService
// offers no such figure yet and is being reworked; the figure moves there with it.

/** Cents paid in sales, share purchases and ticket purchases completed within the range and not refunded since. */
export async function volumeCents(db: Db, range: Range): Promise<bigint> {
  const row = await db
    .selectFrom("transactions")
    .select(sql<string>`coalesce(sum(amount_cents), 0)`.as("cents"))
    .where("status", "=", "completed")
    .where("type", "in", VOLUME_TYPES)
    .where("completed_at", ">=", range.from)
    .where("completed_at", "<", range.to)
    .executeTakeFirstOrThrow();
  return BigInt(row.cents);
}
