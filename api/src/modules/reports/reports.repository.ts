import { sql } from "kysely";
import type { Db } from "../../db/database.ts";
import type { TransactionType } from "../payments/payments.tables.ts";

/** A half-open time range [from, to). */
export interface Range {
  from: Date;
  to: Date;
}

/** The money that counts as volume: what buyers paid. A royalty payout is part of its sale, not more. */
export const VOLUME_TYPES: readonly TransactionType[] = ["sale", "share_purchase", "ticket_purchase"];

// The two figures below read the artworks' and payments' tables: neither service offers the count
// yet, and a report only reads. They belong in ArtworksService and PaymentsService when those grow one.

/**
 * Artworks whose certificate was minted within the range (`certified_at` is the certifying block's
 * time). Deleted artworks count: their certificate stays.
 */
export async function countCertified(db: Db, range: Range): Promise<number> {
  const row = await db
    .selectFrom("artworks")
    .select(sql<string>`count(*)`.as("n"))
    .where("status", "=", "certified")
    .where("certified_at", ">=", range.from)
    .where("certified_at", "<", range.to)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

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
