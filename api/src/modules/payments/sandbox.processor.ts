import type { Kysely } from "kysely";
import type { Database } from "../../db/database.ts";
import { newId } from "../../lib/ids.ts";
import { USD_CHARGE_LIMITS } from "../../lib/money.ts";
import {
  type CardDetails,
  type Charge,
  type ChargeRequest,
  PaymentDeclined,
  type PaymentProcessor,
  PaymentRequestRefused,
  PaymentTransientError,
  type Refund,
  type RefundRequest,
} from "./processor.ts";
import * as repo from "./payments.repository.ts";
import type { SandboxChargeRow } from "./payments.tables.ts";

type Outcome =
  | { kind: "succeed" }
  | { kind: "decline"; declineCode: string; message: string }
  /** Fails transiently `times` times per charge key, then succeeds (Infinity: always fails). */
  | { kind: "transient"; times: number };

interface TestCard {
  brand: string;
  last4: string;
  outcome: Outcome;
}

const PROCESSING_ERROR = "An error occurred while processing your card. Try again in a little bit.";

/**
 * Stripe's test payment methods (the same ids, last digits and decline codes), plus two of the
 * sandbox's own that fail transiently once or twice per charge key and then succeed, for tests of
 * the retry path.
 */
export const TEST_CARDS: Readonly<Record<string, TestCard>> = {
  pm_card_visa: { brand: "visa", last4: "4242", outcome: { kind: "succeed" } },
  pm_card_mastercard: { brand: "mastercard", last4: "4444", outcome: { kind: "succeed" } },
  pm_card_chargeDeclined: { brand: "visa", last4: "0002", outcome: { kind: "decline", declineCode: "generic_decline", message: "Your card was declined." } },
  pm_card_insufficientFunds: { brand: "visa", last4: "9995", outcome: { kind: "decline", declineCode: "insufficient_funds", message: "Your card has insufficient funds." } },
  pm_card_processingError: { brand: "visa", last4: "0119", outcome: { kind: "transient", times: Number.POSITIVE_INFINITY } },
  pm_card_processingError_once: { brand: "visa", last4: "0119", outcome: { kind: "transient", times: 1 } },
  pm_card_processingError_twice: { brand: "visa", last4: "0119", outcome: { kind: "transient", times: 2 } },
};


/**
 * The built-in processor: Stripe's test mode, kept in this database (`sandbox_charges`,
 * `sandbox_refunds`) as if it were the processor's side. It never takes the caller's transaction:
 * like a remote processor, what it records stays whatever the caller's transaction does.
 *
 * - charges are keyed by idempotency key: the same key answers the same charge, or the same
 *   decline (a declined charge is recorded as `failed`, as Stripe does); other parameters with a
 *   used key are `idempotency_error`;
 * - declines carry Stripe's codes (`card_declined` with `generic_decline` or `insufficient_funds`);
 * - `pm_card_processingError` always fails transiently (Stripe's `processing_error`: the caller
 *   retries, with the same key); `pm_card_processingError_once`/`_twice` fail so the first one or
 *   two attempts of each key, then succeed; nothing is recorded for a transient failure.
 */
export class SandboxProcessor implements PaymentProcessor {
  readonly name = "sandbox";
  /** Stripe's bounds of a USD charge. */
  readonly limits = USD_CHARGE_LIMITS;

  constructor(private readonly db: Kysely<Database>) {}

  isTestCard(token: string): boolean {
    return Object.hasOwn(TEST_CARDS, token);
  }

  async describeCard(token: string): Promise<CardDetails | null> {
    const card = this.isTestCard(token) ? TEST_CARDS[token]! : null;
    if (!card) return null;
    // Any future date is valid for a test card (Stripe): December, three years on.
    return { brand: card.brand, last4: card.last4, exp_month: 12, exp_year: new Date().getUTCFullYear() + 3 };
  }

  async charge(request: ChargeRequest): Promise<Charge> {
    const card = this.isTestCard(request.paymentMethod) ? TEST_CARDS[request.paymentMethod]! : null;
    if (!card) throw new PaymentRequestRefused("resource_missing", `No such PaymentMethod: '${request.paymentMethod}'`);
    if (request.amountCents < this.limits.minCents) throw new PaymentRequestRefused("amount_too_small", "Amount must be at least $0.50 usd");
    if (request.amountCents > this.limits.maxCents) throw new PaymentRequestRefused("amount_too_large", "Amount must be no more than $999,999.99");
    const fee = request.applicationFeeCents ?? 0n;
    if (fee < 0n || fee > request.amountCents) throw new PaymentRequestRefused("invalid_application_fee", "The application fee must be between 0 and the amount");

    const existing = await repo.findSandboxChargeByKey(this.db, request.idempotencyKey);
    if (existing) return answer(existing, request);

    const { outcome } = card;
    if (outcome.kind === "transient") {
      const fails = outcome.times === Number.POSITIVE_INFINITY || (await repo.takeSandboxFailure(this.db, request.idempotencyKey, outcome.times));
      if (fails) throw new PaymentTransientError("processing_error", PROCESSING_ERROR);
    }
    const declined = outcome.kind === "decline" ? outcome : null;
    const inserted = await repo.insertSandboxCharge(this.db, {
      id: newId("charge"),
      idempotency_key: request.idempotencyKey,
      amount_cents: request.amountCents,
      currency: request.currency,
      payment_method: request.paymentMethod,
      application_fee_cents: fee,
      description: request.description ?? null,
      metadata: JSON.stringify(request.metadata ?? {}),
      status: declined ? "failed" : "succeeded",
      failure_code: declined?.declineCode ?? null,
      failure_message: declined?.message ?? null,
    });
    // Lost the race for the key: the winner's charge, now committed, is the answer.
    const charge = inserted ?? (await repo.findSandboxChargeByKey(this.db, request.idempotencyKey));
    if (!charge) throw new PaymentTransientError("processing_error", PROCESSING_ERROR);
    return answer(charge, request);
  }

  async refund(request: RefundRequest): Promise<Refund> {
    if (request.amountCents !== undefined && request.amountCents <= 0n) throw new PaymentRequestRefused("parameter_invalid_integer", "The refund amount must be positive");
    return this.db.transaction().execute(async (trx) => {
      // The charge's lock orders refunds of one charge: a repeated key finds the first one's refund.
      const charge = await repo.lockSandboxCharge(trx, request.chargeId);
      if (!charge) throw new PaymentRequestRefused("resource_missing", `No such charge: '${request.chargeId}'`);
      const previous = await repo.findSandboxRefundByKey(trx, request.idempotencyKey);
      if (previous) return refundAnswer(previous, request);
      if (charge.status !== "succeeded") throw new PaymentRequestRefused("charge_not_refundable", `Charge ${charge.id} failed: there is nothing to refund`);
      const left = charge.amount_cents - charge.amount_refunded_cents;
      if (left === 0n) throw new PaymentRequestRefused("charge_already_refunded", `Charge ${charge.id} has already been refunded`);
      const amount = request.amountCents ?? left;
      if (amount > left) throw new PaymentRequestRefused("amount_too_large", `Refund amount (${amount}) is greater than the charge's unrefunded amount (${left})`);
      const refund = await repo.insertSandboxRefund(trx, {
        id: newId("refund"),
        idempotency_key: request.idempotencyKey,
        charge_id: charge.id,
        amount_cents: amount,
      });
      // The key names a refund of another charge (taken meanwhile): as Stripe, other parameters are refused.
      if (!refund) throw idempotencyError();
      await repo.addSandboxRefunded(trx, charge.id, amount);
      return refundAnswer(refund, request);
    });
  }

  async retrieve(chargeId: string): Promise<Charge | null> {
    const row = await repo.findSandboxCharge(this.db, chargeId);
    return row ? toCharge(row) : null;
  }
}

function idempotencyError(): PaymentRequestRefused {
  return new PaymentRequestRefused("idempotency_error", "Keys for idempotent requests can only be used with the same parameters they were first used with");
}

/** A recorded charge answered for `request`: the same parameters, or the key is misused. */
function answer(row: SandboxChargeRow, request: ChargeRequest): Charge {
  if (row.amount_cents !== request.amountCents || row.currency !== request.currency || row.payment_method !== request.paymentMethod) throw idempotencyError();
  if (row.status === "failed") throw new PaymentDeclined("card_declined", row.failure_code!, row.failure_message!, row.id);
  return toCharge(row);
}

function refundAnswer(row: { id: string; charge_id: string; amount_cents: bigint; created_at: Date }, request: RefundRequest): Refund {
  if (row.charge_id !== request.chargeId || (request.amountCents !== undefined && row.amount_cents !== request.amountCents)) throw idempotencyError();
  return { id: row.id, chargeId: row.charge_id, amountCents: row.amount_cents, status: "succeeded", createdAt: row.created_at };
}

function toCharge(row: SandboxChargeRow): Charge {
  return {
    id: row.id,
    status: row.status,
    failureCode: row.failure_code,
    amountCents: row.amount_cents,
    currency: row.currency,
    applicationFeeCents: row.application_fee_cents,
    amountRefundedCents: row.amount_refunded_cents,
    paymentMethod: row.payment_method,
    createdAt: row.created_at,
  };
}
