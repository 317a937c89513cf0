import { ApiError } from "../../lib/errors.ts";
import { PaymentDeclined, PaymentRequestRefused, PaymentTransientError } from "./processor.ts";
import type { ChargeInput, ChargeResult, PaymentsService } from "./payments.service.ts";

/** A payment failure that is final for the thing paid for (a decline, a refused request, a method gone). */
export interface PaymentFailure {
  code: string;
  reason: string;
}

/** The transient retries of a charge job wait base * 2^(n-1), at most `maxMs`. */
export interface ChargeRetryPolicy {
  attempts: number;
  baseMs: number;
  maxMs: number;
}

export type ChargeStepOutcome =
  | { kind: "charged"; charge: ChargeResult }
  | { kind: "failed"; failure: PaymentFailure }
  | { kind: "retry"; attempt: number; delayMs: number; error: string };

/**
 * One run of a job that charges for something (a sale, a share purchase): the charge with its key
 * (the same key finds the same charge, so a rerun never charges twice), and what to do next: go on
 * (`charged`), fail the thing for good (`failed`: declined, refused, method gone, or transient
 * failures past the policy's attempts), or schedule run `attempt` in `delayMs` (`retry`).
 */
export async function chargeStep(payments: PaymentsService, input: ChargeInput, attempt: number, policy: ChargeRetryPolicy): Promise<ChargeStepOutcome> {
  try {
    return { kind: "charged", charge: await payments.charge(input) };
  } catch (err) {
    const failure = classifyPaymentFailure(err);
    if (failure) return { kind: "failed", failure };
    if (!(err instanceof PaymentTransientError)) throw err;
    if (attempt < policy.attempts) {
      return { kind: "retry", attempt: attempt + 1, delayMs: Math.min(policy.baseMs * 2 ** (attempt - 1), policy.maxMs), error: err.message };
    }
    return { kind: "failed", failure: { code: "processing_error", reason: `The payment could not be processed after ${attempt} attempts: ${err.message}` } };
  }
}

/** Final failures of a charge; null for a transient one (retry with the same key) or an unknown error. */
export function classifyPaymentFailure(err: unknown): PaymentFailure | null {
  if (err instanceof PaymentDeclined) return { code: err.declineCode || err.code, reason: err.message };
  if (err instanceof PaymentRequestRefused) return { code: err.code, reason: err.message };
  if (err instanceof ApiError && err.status === 404) return { code: "payment_method_missing", reason: "The payment method no longer exists (detached since it was given)" };
  return null;
}
