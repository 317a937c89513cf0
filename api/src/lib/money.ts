import { z } from "../openapi/zod.ts";

/** Money is integer cents inside; `_usd` numbers with at most 2 decimals at the JSON edge (docs/decisions.md#money). */
export const MAX_USD = 1_000_000_000;

/** Whether `usd` has at most two decimals (tolerating binary floating point: 0.1 + 0.2). */
export function hasCents(usd: number): boolean {
  return Math.abs(usd * 100 - Math.round(usd * 100)) < 1e-6;
}

export function usdToCents(usd: number): bigint {
  return BigInt(Math.round(usd * 100));
}

export function centsToUsd(cents: bigint | number): number {
  return Number(cents) / 100;
}

/** A `_usd` amount in a request: 0..1e9 with at most 2 decimals. */
export const usdAmount = z
  .number()
  .min(0)
  .max(MAX_USD)
  .refine(hasCents, { message: "must have at most 2 decimals" })
  .openapi({ example: 12500, description: `US dollars, 0..${MAX_USD}, at most 2 decimals` });

/**
 * What a card processor charges in USD: Stripe's bounds, $0.50 to $999,999.99. The processor
 * declares its own (`PaymentProcessor.limits`); every price the platform sells at stays within
 * these (docs/ownership-and-money.md).
 */
export const USD_CHARGE_LIMITS = { minCents: 50n, maxCents: 99_999_999n } as const;

/** A `_usd` amount that is charged as it is (a listing's price, an offer): within USD_CHARGE_LIMITS, at most 2 decimals. */
export const chargeableUsd = z
  .number()
  .min(centsToUsd(USD_CHARGE_LIMITS.minCents))
  .max(centsToUsd(USD_CHARGE_LIMITS.maxCents))
  .refine(hasCents, { message: "must have at most 2 decimals" })
  .openapi({
    example: 12500,
    description: `US dollars, ${centsToUsd(USD_CHARGE_LIMITS.minCents)}..${centsToUsd(USD_CHARGE_LIMITS.maxCents)} (what the card processor charges), at most 2 decimals`,
  });

/** A `_usd` amount in an answer (cents / 100). */
export const usdValue = z.number().openapi({ example: 12500, description: "US dollars" });
