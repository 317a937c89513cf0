import { setTimeout as sleep } from "node:timers/promises";
import type { Kysely } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import type { Actor } from "../../lib/actor.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { centsToUsd } from "../../lib/money.ts";
import { iso } from "../../lib/time.ts";
import { type CardDetails, type Charge, type PaymentProcessor, PaymentTransientError, type Refund } from "./processor.ts";
import * as repo from "./payments.repository.ts";
import type { PaymentMethodRow, TransactionRow } from "./payments.tables.ts";
import { isPartyOf } from "./transactions.schemas.ts";

/** Saved methods per user: enough for anyone's wallet, a bound on what one account can pile up. */
export const MAX_PAYMENT_METHODS_PER_USER = 25;
/** The API's money is US dollars (docs/decisions.md#money). */
export const CURRENCY = "usd";

export interface PaymentsSettings {
  /** The platform's fee in basis points (PLATFORM_FEE_BPS; 250 = 2.5 %). */
  platformFeeBps: number;
  /** Attempts of a processor call that fails transiently (the first included). */
  maxAttempts: number;
  /** The n-th retry waits retryBaseMs * 2^(n-1), ±25 %. */
  retryBaseMs: number;
}

/** A payment method as a caller named it (a saved `pm_…` or a test card id), ready to charge. */
export interface ResolvedPaymentMethod {
  id: string;
  /** What the processor charges (the test card id, a Stripe `pm_…`). */
  processorRef: string;
  /** A method the user saved (`pm_…`), rather than a test card id used directly. */
  saved: boolean;
  card: CardDetails;
}

export interface ChargeInput {
  /** The payer: a saved method must be theirs. */
  userId: string;
  paymentMethodId: string;
  /**
   * One charge per key, also across retries and processes: the business fact being paid
   * (`sale:<id>`). The same key with another amount or method is refused (`idempotency_error`);
   * a new attempt with another card needs a key of its own.
   */
  idempotencyKey: string;
  amountCents: bigint;
  description?: string;
  metadata?: Record<string, string>;
}

export interface ChargeResult {
  chargeId: string;
  amountCents: bigint;
  /** The platform's fee recorded on the charge (platformFeeCents of the amount). */
  feeCents: bigint;
  /** amountCents - feeCents: what the payee gets. */
  netCents: bigint;
  paymentMethodId: string;
  /** Processor calls it took (retries of transient failures included). */
  attempts: number;
}

/**
 * Payment methods and charges, for the routes and for the modules that take payments (marketplace,
 * fractional, events) through this service, never through Express. Charges go to the configured
 * processor (processor.ts) and may throw its PaymentDeclined (final), PaymentTransientError (still
 * failing after `maxAttempts`) or PaymentRequestRefused; an unknown, detached or other user's
 * payment method is ApiError 404 `not_found`.
 */
export class PaymentsService {
  constructor(
    private readonly db: Kysely<Database>,
    readonly processor: PaymentProcessor,
    private readonly settings: PaymentsSettings,
  ) {}

  /**
   * The platform's fee on `amountCents`: amount * PLATFORM_FEE_BPS / 10,000, rounded half up to
   * the cent, in integer arithmetic (at 2.5 %: 1 -> 0, 20 -> 1, 199 -> 5, 1,000,000 -> 25,000).
   */
  platformFeeCents(amountCents: bigint): bigint {
    if (amountCents < 0n) throw new RangeError("amountCents must not be negative");
    return (amountCents * BigInt(this.settings.platformFeeBps) + 5_000n) / 10_000n;
  }

  /** The processor's bounds of a charge, in cents. */
  get limits(): { minCents: bigint; maxCents: bigint } {
    return this.processor.limits;
  }

  /**
   * Refuses (400, on `field`) an amount the processor would not charge, before anything is
   * reserved or spent: what is sold must be payable (docs/ownership-and-money.md).
   */
  requireChargeable(amountCents: bigint, field: string, what = "The amount"): void {
    const { minCents, maxCents } = this.processor.limits;
    if (amountCents < minCents) throw ApiError.validation([{ field, code: "too_small", message: `${what} (${centsToUsd(amountCents)} USD) is below the smallest card charge, ${centsToUsd(minCents)} USD` }]);
    if (amountCents > maxCents) throw ApiError.validation([{ field, code: "too_large", message: `${what} (${centsToUsd(amountCents)} USD) is above the largest card charge, ${centsToUsd(maxCents)} USD` }]);
  }

  /**
   * A payment_method_id as sent by `userId`: a test card id of the processor as it is (Stripe's
   * test mode), or a method the user saved and has not detached; anything else is 404.
   */
  async resolvePaymentMethod(userId: string, id: string): Promise<ResolvedPaymentMethod> {
    if (this.processor.isTestCard(id)) {
      const card = found(await this.processor.describeCard(id), "Payment method");
      return { id, processorRef: id, saved: false, card };
    }
    const row = isId("paymentMethod", id) ? await repo.findPaymentMethod(this.db, userId, id) : undefined;
    // A method saved with another processor cannot be charged by this one.
    if (!row || row.processor !== this.processor.name) throw ApiError.notFound("Payment method");
    return { id: row.id, processorRef: row.processor_ref, saved: true, card: cardOf(row) };
  }

  /**
   * Charges the amount with the platform's fee recorded on it; transient failures are retried
   * with backoff, with the same key, so a retry that reaches the processor twice still charges once.
   */
  async charge(input: ChargeInput): Promise<ChargeResult> {
    const method = await this.resolvePaymentMethod(input.userId, input.paymentMethodId);
    const feeCents = this.platformFeeCents(input.amountCents);
    const { value: charge, attempts } = await this.withRetries(() =>
      this.processor.charge({
        idempotencyKey: input.idempotencyKey,
        amountCents: input.amountCents,
        currency: CURRENCY,
        paymentMethod: method.processorRef,
        applicationFeeCents: feeCents,
        ...(input.description !== undefined ? { description: input.description } : {}),
        metadata: { ...input.metadata, user_id: input.userId, payment_method_id: method.id },
      }),
    );
    return { chargeId: charge.id, amountCents: charge.amountCents, feeCents: charge.applicationFeeCents, netCents: charge.amountCents - charge.applicationFeeCents, paymentMethodId: method.id, attempts };
  }

  /** Refunds a charge (all that is left of it by default); the same key answers the same refund. */
  async refund(input: { chargeId: string; idempotencyKey: string; amountCents?: bigint }): Promise<Refund> {
    return (await this.withRetries(() => this.processor.refund(input))).value;
  }

  retrieveCharge(chargeId: string): Promise<Charge | null> {
    return this.processor.retrieve(chargeId);
  }

  // Saved payment methods (the routes).

  async saveMethod(userId: string, token: string, transact: Transact = transactOn(this.db)) {
    // Asked before the transaction: a real processor answers over the network.
    const card = await this.processor.describeCard(token);
    if (!card) {
      throw ApiError.validation([{ field: "token", code: "unknown_token", message: `not a payment method token of the ${this.processor.name} processor` }]);
    }
    return transact(async (trx) => {
      await repo.lockUserPaymentMethods(trx, userId);
      if ((await repo.countPaymentMethods(trx, userId)) >= MAX_PAYMENT_METHODS_PER_USER) {
        throw ApiError.conflict("conflict", `A user may have at most ${MAX_PAYMENT_METHODS_PER_USER} payment methods; detach one first`);
      }
      const row = await repo.insertPaymentMethod(trx, {
        id: newId("paymentMethod"),
        user_id: userId,
        processor: this.processor.name,
        processor_ref: token,
        type: "card",
        card_brand: card.brand,
        card_last4: card.last4,
        card_exp_month: card.exp_month,
        card_exp_year: card.exp_year,
      });
      return toPaymentMethodView(row);
    });
  }

  async listMethods(userId: string, page: Page) {
    const { rows, total } = await repo.listPaymentMethods(this.db, userId, page);
    return paginated(rows.map(toPaymentMethodView), page, total);
  }

  async getMethod(userId: string, id: string) {
    return toPaymentMethodView(found(isId("paymentMethod", id) ? await repo.findPaymentMethod(this.db, userId, id) : undefined, "Payment method"));
  }

  /** Detached methods are gone for the user (404, not chargeable); the row stays for the record. */
  async detachMethod(userId: string, id: string) {
    if (!isId("paymentMethod", id) || !(await repo.detachPaymentMethod(this.db, userId, id))) throw ApiError.notFound("Payment method");
    return { id, deleted: true as const };
  }

  // ---- the money records (the Transaction resource) ----

  /** The transaction `id` as its resource, read on `db` (a caller's transaction sees its own writes). */
  async transaction(db: Db, id: string): Promise<TransactionRow | undefined> {
    return repo.findTransaction(db, id);
  }

  /** The transactions `userId` is a party of, newest first (answered through Purchases.transactions, which adds their chain transactions). */
  listTransactions(userId: string, filter: repo.TransactionFilter, page: Page): Promise<{ rows: TransactionRow[]; total: number }> {
    return repo.listTransactionsOf(this.db, userId, filter, page);
  }

  /** A transaction for one of its parties or an admin; anyone else 404 (it is private). */
  async getTransaction(actor: Actor, id: string): Promise<TransactionRow> {
    const t = isId("transaction", id) ? await repo.findTransaction(this.db, id) : undefined;
    if (!t || (actor.role !== "admin" && !isPartyOf(t, actor.userId))) throw ApiError.notFound("Transaction");
    return t;
  }

  private async withRetries<T>(call: () => Promise<T>): Promise<{ value: T; attempts: number }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return { value: await call(), attempts: attempt };
      } catch (err) {
        if (!(err instanceof PaymentTransientError) || attempt >= this.settings.maxAttempts) throw err;
        const delay = this.settings.retryBaseMs * 2 ** (attempt - 1);
        await sleep(Math.round(delay * (0.75 + Math.random() * 0.5)));
      }
    }
  }
}

function cardOf(row: PaymentMethodRow): CardDetails {
  return { brand: row.card_brand, last4: row.card_last4, exp_month: row.card_exp_month, exp_year: row.card_exp_year };
}

export function toPaymentMethodView(row: PaymentMethodRow) {
  return { id: row.id, type: row.type, card: cardOf(row), created_at: iso(row.created_at) };
}
export type { TransactionFilter } from "./payments.repository.ts";
