import type { PaymentFailure } from "./charge-step.ts";
import type { TransactionRow } from "./payments.tables.ts";

/** What a failed purchase's reason says once its charge came back (Purchases.refundStep). */
export function refundedNote(refundId: string): string {
  return `; the payment was refunded (${refundId})`;
}

/**
 * Why a purchase failed, as its payment or its effect failed (the reason without a refund's note):
 * what the module's record of the purchase answers. Null when it has not failed; a failed effect
 * counts from `failEffect` on, while its refund is under way.
 */
export function failureOf(p: TransactionRow): PaymentFailure | null {
  if (p.failure_code === null && p.failure_reason === null) return null;
  const note = p.refund_id === null ? "" : refundedNote(p.refund_id);
  const reason = p.failure_reason ?? "";
  return { code: p.failure_code ?? "failed", reason: note && reason.endsWith(note) ? reason.slice(0, -note.length) : reason };
}
