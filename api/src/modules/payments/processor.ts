/**
 * The payment processor behind the payments service: the built-in sandbox (sandbox.processor.ts)
 * or a real adapter (Stripe) implementing the same interface. Amounts are integer cents.
 *
 * Its failures are of three kinds, classified once here, as the relayer does for the chain:
 * a decline (`PaymentDeclined`: final, reported to the buyer), a transient failure
 * (`PaymentTransientError`: the same call with the same idempotency key may succeed, so it is
 * retried) and a refused request (`PaymentRequestRefused`: our mistake or a state that forbids it).
 */
export interface PaymentProcessor {
  /** `sandbox`, `stripe`: stored with each saved method, so a method is charged where it was saved. */
  readonly name: string;
  /** The smallest and largest charge it takes, in cents (Stripe's USD bounds: USD_CHARGE_LIMITS). */
  readonly limits: { readonly minCents: bigint; readonly maxCents: bigint };
  /** The public facts of a card the processor knows by `token` (a test card id, a Stripe `pm_…`), or null. */
  describeCard(token: string): Promise<CardDetails | null>;
  /** Whether `token` is a test card id, accepted directly wherever a payment_method_id is (Stripe's test mode). */
  isTestCard(token: string): boolean;
  /**
   * Charges `paymentMethod` (the processor's token). The same `idempotencyKey` answers the same
   * charge (or the same decline) again; with other parameters it is refused (Stripe's
   * `idempotency_error`).
   */
  charge(request: ChargeRequest): Promise<Charge>;
  /** Refunds a succeeded charge (all that is left of it by default); the same key answers the same refund. */
  refund(request: RefundRequest): Promise<Refund>;
  retrieve(chargeId: string): Promise<Charge | null>;
}

export interface CardDetails {
  brand: string;
  last4: string;
  exp_month: number;
  exp_year: number;
}

export interface ChargeRequest {
  idempotencyKey: string;
  amountCents: bigint;
  /** ISO 4217, lower case (`usd`). */
  currency: string;
  paymentMethod: string;
  /** The platform's part of the amount (Stripe's `application_fee_amount`). */
  applicationFeeCents?: bigint;
  description?: string;
  metadata?: Record<string, string>;
}

export interface Charge {
  id: string;
  /** `charge` answers succeeded charges only (a decline throws); `retrieve` also finds failed ones. */
  status: "succeeded" | "failed";
  /** Why a failed charge failed (its decline code). */
  failureCode: string | null;
  amountCents: bigint;
  currency: string;
  applicationFeeCents: bigint;
  amountRefundedCents: bigint;
  paymentMethod: string;
  createdAt: Date;
}

export interface RefundRequest {
  chargeId: string;
  idempotencyKey: string;
  /** Default: what is left of the charge. */
  amountCents?: bigint;
}

export interface Refund {
  id: string;
  chargeId: string;
  amountCents: bigint;
  status: "succeeded";
  createdAt: Date;
}

/** The card was declined: final for this charge (`code` is Stripe's `card_declined`, `declineCode` why). */
export class PaymentDeclined extends Error {
  override name = "PaymentDeclined";
  constructor(
    readonly code: string,
    readonly declineCode: string,
    message: string,
    readonly chargeId: string | null = null,
  ) {
    super(message);
  }
}

/** The processor could not process the charge now (Stripe's `processing_error`, an outage): retry with the same key. */
export class PaymentTransientError extends Error {
  override name = "PaymentTransientError";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The processor refused the request itself: `idempotency_error` (a key reused with other
 * parameters), `resource_missing`, `amount_too_small`, `amount_too_large`, `charge_already_refunded`...
 */
export class PaymentRequestRefused extends Error {
  override name = "PaymentRequestRefused";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
