import type { Kysely, Transaction, UpdateObject } from "kysely";
import type { Logger } from "pino";
import type { ChainOperations } from "../../chain/operations.ts";
import type { Database, Db } from "../../db/database.ts";
import { enqueue, type Task } from "../../jobs/queue.ts";
import { newId } from "../../lib/ids.ts";
import type { LedgerAppend, LedgerService } from "../ledger/ledger.service.ts";
import { chargeStep, type PaymentFailure } from "./charge-step.ts";
import type { ChargeResult, PaymentsService } from "./payments.service.ts";
import type { Refund } from "./processor.ts";
import { refundedNote } from "./purchase-failure.ts";
import type { PurchaseStage, TransactionRow, TransactionType } from "./payments.tables.ts";
import * as repo from "./purchases.repository.ts";
import { type TransactionAnswer, transactionAnswers } from "./transaction-reads.ts";
import { TRANSACTION_TYPES } from "./transactions.schemas.ts";

export { failureOf } from "./purchase-failure.ts";
/** What the kinds' steps are handed: a payment's failure, a refund. */
export type { PaymentFailure } from "./charge-step.ts";
export type { Refund } from "./processor.ts";

/** The job that charges a purchase (payload `{ id, run? }`): the fallback of a request that charges itself, or the charge itself. */
export const PURCHASE_CHARGE_TASK = "purchase_charge";
/** The job that refunds a purchase's charge (payload `{ id }`). */
export const PURCHASE_REFUND_TASK = "purchase_refund";

/** What is bought: each has its module's rules, registered as a kind. */
export type PurchaseType = Exclude<TransactionType, "royalty_payout">;

const PURCHASE_TYPES = TRANSACTION_TYPES.filter((t): t is PurchaseType => t !== "royalty_payout");

/** A purchase is its transaction row, with the lifecycle's columns. */
export type Purchase = TransactionRow;

/** Why a completed purchase is refunded (kept with it, handed to the kind, written in the ledger). */
export interface RefundCause {
  /** `dispute`, `event_cancelled`. */
  reason: string;
  actorId: string | null;
  /** The record that asked for it (`dsp_…`). */
  referenceId?: string;
  note?: string | null;
  /** An admin refunded without unwinding what the purchase gave (docs/ownership-and-money.md). */
  forced?: boolean;
}

/**
 * What a module registers for one kind of purchase: its own rules at each step. The component owns
 * the purchase's row, its charge (with the key, retries and the fallback job), refunds and the sweep.
 */
export interface PurchaseKind {
  readonly type: PurchaseType;
  /** Charges are keyed `<keyPrefix>:<reference id>`, refunds `refund:<keyPrefix>:<reference id>`: one of each per purchase. */
  readonly keyPrefix: string;
  /** Before the first charge only: a final failure instead of charging (the event was cancelled meanwhile), or null. */
  beforeCharge?(db: Db, purchase: Purchase): Promise<PaymentFailure | null>;
  /**
   * The charge succeeded, in the transaction that records it: the module's effect starts (a chain
   * operation whose confirmation calls `complete`), or is done (it called `complete` here and its
   * ledger entry names the charge: `"completed"`). `{ refund }`: the effect can no longer happen (the
   * module has undone its own part); the charge goes back.
   */
  onCharged(trx: Transaction<Database>, purchase: Purchase, charge: ChargeResult): Promise<void | "completed" | { refund: PaymentFailure }>;
  /** The payment failed for good (declined, refused, retries spent, `beforeCharge`): the module releases what it reserved. */
  onPaymentFailed(trx: Transaction<Database>, purchase: Purchase, failure: PaymentFailure): Promise<void>;
  /** A refund went through: of a completed purchase (`cause` given) or of one whose effect failed. Ledger entries to append after the component's. */
  onRefunded?(trx: Transaction<Database>, purchase: Purchase, refund: Refund, cause: RefundCause | null): Promise<LedgerAppend[] | void>;
  /** The chain operation whose transaction is the purchase's effect (a sale's settlement, a mint), when the platform sends one: its `on_chain_tx`. */
  chainOperationOf?(purchase: Purchase): string | null;
}

export interface PurchaseStart {
  type: PurchaseType;
  /** The transaction's id (`txn_…`); a new one by default (a sale's id is its transaction's). */
  id?: string;
  /** The module's record paid for (`frac_…`, `ord_…`, a sale's own id): the charge key's suffix. */
  referenceId: string;
  artworkId?: string | null;
  amountCents: bigint;
  buyerId: string;
  /** Who sells and who receives the money (the seller of a sale, the holder of a share class). */
  sellerId?: string | null;
  recipientId?: string | null;
  recipientWallet?: string | null;
  paymentMethodId: string;
  /** What the charge is for, as the card statement and the processor's dashboard show it. */
  description: string;
}

/** A royalty paid out of a completed sale (its own `royalty_payout` transaction). */
export interface Payout {
  amountCents: bigint;
  recipientId: string | null;
  recipientWallet: string;
}

export interface PurchasesDeps {
  db: Kysely<Database>;
  logger: Logger;
  payments: PaymentsService;
  ledger: LedgerService;
  operations: Pick<ChainOperations, "findMany">;
  /** Runs of a charge (1 s, 2 s, 4 s… apart, at most a minute) before transient failures fail the purchase (MARKETPLACE_CHARGE_ATTEMPTS). */
  chargeRuns: number;
}

/** The request charges; the job queued with the purchase charges this much later if the request's process died first. */
const FALLBACK_CHARGE_DELAY_MS = 15_000;
const CHARGE_RETRY = { baseMs: 1_000, maxMs: 60_000 };
/** A purchase charging or refunding this long after its last change has lost its step's process: the sweep starts it again. */
const STUCK_MS = 120_000;

/**
 * Every purchase's lifecycle (docs/ownership-and-money.md), shaped like the chain operations: one
 * durable row (the purchase's `transactions` row), the charge with its key and retries, the module's
 * effect registered as a kind, refunds as a step of their own, and a sweep.
 *
 *   charging --charged--> effecting --complete--> done (completed)
 *      |                     '--failEffect--> refunding --refunded--> done (failed, refunded)
 *      '--declined, refused, retries spent--> done (failed)
 *   done (completed) --refund--> refunding --refunded--> done (refunded)
 *
 * A purchase is started in the module's transaction (its reservation with it); the charge runs
 * after the commit, in the request or in the job, and once per key whatever runs it. Every write to
 * `transactions` goes through here.
 */
export class Purchases {
  private readonly log: Logger;
  private readonly kinds = new Map<string, PurchaseKind>();

  constructor(private readonly deps: PurchasesDeps) {
    this.log = deps.logger.child({ component: "purchases" });
  }

  register(kind: PurchaseKind): void {
    if (this.kinds.has(kind.type)) throw new Error(`purchase kind ${kind.type} is registered twice`);
    this.kinds.set(kind.type, kind);
  }

  /** Purchases and payouts as the Transaction resource, each with its effect's chain transaction (transaction-reads.ts). */
  transactions(db: Db, rows: readonly Purchase[]): Promise<TransactionAnswer[]> {
    return transactionAnswers(db, rows, { chainOperationOf: (p) => this.kinds.get(p.type)?.chainOperationOf?.(p) ?? null, operations: this.deps.operations });
  }

  /**
   * Starts a purchase in the module's transaction: its row, pending and charging, and its charge
   * job: at once, or (`chargeInRequest`) later, as the fallback of the caller's own `charge` after
   * its commit.
   */
  async start(trx: Transaction<Database>, input: PurchaseStart, options: { chargeInRequest: boolean }): Promise<Purchase> {
    this.kindOf(input.type);
    const id = input.id ?? newId("transaction");
    const row = await repo.insert(trx, {
      id,
      type: input.type,
      status: "pending",
      stage: "charging",
      artwork_id: input.artworkId ?? null,
      amount_cents: input.amountCents,
      buyer_id: input.buyerId,
      seller_id: input.sellerId ?? null,
      recipient_id: input.recipientId ?? null,
      recipient_wallet: input.recipientWallet ?? null,
      reference_id: input.referenceId,
      payment_method_id: input.paymentMethodId,
      description: input.description,
    });
    await enqueue(trx, PURCHASE_CHARGE_TASK, { id }, { jobKey: chargeJobKey(id), maxAttempts: 25, ...(options.chargeInRequest ? { runAt: new Date(Date.now() + FALLBACK_CHARGE_DELAY_MS) } : {}) });
    return row;
  }

  readonly chargeTask: Task = async (payload) => {
    const { id, run } = payload as { id?: unknown; run?: unknown };
    if (typeof id !== "string") throw new Error(`${PURCHASE_CHARGE_TASK}: payload without id`);
    await this.charge(id, typeof run === "number" ? run : 1);
  };

  /**
   * Run `run` of a charging purchase's charge: then, in one transaction, the charge recorded and the
   * kind's effect started (`effecting`), or the purchase failed and the kind's reservation released,
   * or the next run scheduled (transient failures, with the same key). The purchase is marked
   * `charge_started_at` before the processor is first asked: from then on a charge may exist under
   * its key, and a run that died after charging loses nothing (the next finds the same charge).
   */
  async charge(id: string, run = 1): Promise<void> {
    const { db, payments } = this.deps;
    const p = await this.find(db, id);
    if (!p || p.status !== "pending" || p.stage !== "charging") return;
    const kind = this.kindOf(p.type);
    // Only a kind that may give up before charging needs to know whether a charge may exist.
    if (kind.beforeCharge && p.charge_started_at === null) {
      const refusal = await kind.beforeCharge(db, p);
      if (refusal) {
        await db.transaction().execute((trx) => this.failPayment(trx, id, refusal));
        return;
      }
      await repo.markChargeStarted(db, id);
    }
    const step = await chargeStep(
      payments,
      {
        userId: p.buyer_id!,
        paymentMethodId: p.payment_method_id!,
        idempotencyKey: `${kind.keyPrefix}:${p.reference_id}`,
        amountCents: p.amount_cents,
        ...(p.description !== null ? { description: p.description } : {}),
        metadata: { transaction_id: p.id, type: p.type, reference_id: p.reference_id ?? p.id },
      },
      run,
      { attempts: this.deps.chargeRuns, ...CHARGE_RETRY },
    );
    if (step.kind === "retry") {
      this.log.info({ transaction_id: id, run, retry_in_ms: step.delayMs, err: step.error }, "charge failed transiently; retrying");
      await db.transaction().execute(async (trx) => {
        await enqueue(trx, PURCHASE_CHARGE_TASK, { id, run: step.attempt }, { jobKey: chargeJobKey(id), runAt: new Date(Date.now() + step.delayMs), maxAttempts: 25 });
        await repo.update(trx, id, { charge_runs: step.attempt });
      });
      return;
    }
    if (step.kind === "failed") {
      this.log.info({ transaction_id: id, code: step.failure.code }, "payment failed");
      await db.transaction().execute((trx) => this.failPayment(trx, id, step.failure));
      return;
    }
    await db.transaction().execute((trx) => this.charged(trx, id, step.charge));
  }

  /** A charge that succeeded, in its transaction: recorded and handed to the kind; a charge nobody can use any more goes back. */
  private async charged(trx: Transaction<Database>, id: string, charge: ChargeResult): Promise<void> {
    const moved = await this.move(trx, id, "charging", { stage: "effecting", charge_id: charge.chargeId, fee_cents: charge.feeCents });
    if (!moved) {
      // Failed meanwhile by an overlapping run (or its kind): the charge it did not see goes back.
      const now = (await this.lock(trx, id))!;
      if (now.status === "failed" && now.charge_id === null) {
        await repo.update(trx, id, { stage: "refunding", charge_id: charge.chargeId });
        await this.enqueueRefund(trx, id);
      }
      return;
    }
    // The fallback job, if still queued, finds the purchase moved on and does nothing.
    const outcome = await this.kindOf(moved.type).onCharged(trx, moved, charge);
    if (typeof outcome === "object") await this.failEffect(trx, id, outcome.refund);
    // Completed at once, the kind's own entry records the charge (one append: the ledger's lock serializes them).
    if (outcome === "completed") return;
    await this.deps.ledger.append(trx, {
      kind: "payment.charged",
      subjectId: moved.reference_id ?? id,
      actorId: moved.buyer_id,
      parties: partiesOf(moved),
      data: { transaction_id: id, type: moved.type, reference_id: moved.reference_id, charge_id: charge.chargeId, amount_cents: moved.amount_cents.toString(), fee_cents: charge.feeCents.toString(), currency: "USD" },
    });
  }

  /** A final payment failure, in `trx`: the purchase fails, its kind releases what it reserved, the ledger says why. */
  private async failPayment(trx: Transaction<Database>, id: string, failure: PaymentFailure): Promise<void> {
    const p = await this.move(trx, id, "charging", { status: "failed", stage: "done", failure_code: failure.code, failure_reason: failure.reason }, "failed_at");
    if (!p) return;
    await this.kindOf(p.type).onPaymentFailed(trx, p, failure);
    await this.deps.ledger.append(trx, {
      kind: "payment.failed",
      subjectId: p.reference_id ?? id,
      actorId: null,
      parties: partiesOf(p),
      data: { transaction_id: id, type: p.type, reference_id: p.reference_id, code: failure.code, reason: failure.reason, amount_cents: p.amount_cents.toString() },
    });
  }

  /**
   * The purchase's effect is done (the certificate moved, the shares minted, the tickets issued),
   * in the module's transaction: completed with what it settled to, and the payouts it made (a
   * royalty). Undefined when it was not being effected.
   */
  async complete(
    trx: Transaction<Database>,
    id: string,
    facts: { royaltyCents?: bigint; payoutCents: bigint; payouts?: Payout[] },
  ): Promise<Purchase | undefined> {
    const p = await this.move(trx, id, "effecting", {
      status: "completed",
      stage: "done",
      ...(facts.royaltyCents !== undefined ? { royalty_cents: facts.royaltyCents } : {}),
      payout_cents: facts.payoutCents,
    }, "completed_at");
    if (!p) return undefined;
    for (const payout of facts.payouts ?? []) {
      await repo.insert(trx, {
        id: newId("transaction"),
        type: "royalty_payout",
        status: "completed",
        artwork_id: p.artwork_id,
        amount_cents: payout.amountCents,
        buyer_id: p.buyer_id,
        seller_id: p.seller_id,
        recipient_id: payout.recipientId,
        recipient_wallet: payout.recipientWallet,
        payment_method: p.payment_method,
        buyer_wallet: p.buyer_wallet,
        parent_id: p.id,
        payout_cents: payout.amountCents,
        charge_id: p.charge_id,
        completed_at: p.completed_at,
      });
    }
    return p;
  }

  /**
   * A purchase a wallet paid on-chain (an ArtExchange fill: the price went from the buyer to the
   * seller, the royalty receiver and the treasury in the fill's transaction, together with the
   * effect), in the module's transaction: recorded `completed` at once, with its payouts, through the
   * same `complete` as a charged one. No charge exists, so it cannot be refunded by the processor
   * (`refund` answers false). The ledger entry that records the payment, for the caller to append last.
   */
  async recordPaidOnChain(
    trx: Transaction<Database>,
    input: Omit<PurchaseStart, "paymentMethodId" | "buyerId" | "description"> & { buyerId: string | null; buyerWallet: string; feeCents: bigint; currency: string; amountUnits: bigint },
    facts: { royaltyCents: bigint; payoutCents: bigint; chainTx: string; payouts: Payout[] },
  ): Promise<{ purchase: Purchase; ledger: LedgerAppend }> {
    this.kindOf(input.type);
    const id = input.id ?? newId("transaction");
    await repo.insert(trx, {
      id,
      type: input.type,
      status: "pending",
      stage: "effecting",
      payment_method: "onchain",
      artwork_id: input.artworkId ?? null,
      amount_cents: input.amountCents,
      fee_cents: input.feeCents,
      buyer_id: input.buyerId,
      buyer_wallet: input.buyerWallet,
      seller_id: input.sellerId ?? null,
      recipient_id: input.recipientId ?? null,
      recipient_wallet: input.recipientWallet ?? null,
      reference_id: input.referenceId,
      chain_tx: facts.chainTx,
    });
    const purchase = (await this.complete(trx, id, facts))!;
    return {
      purchase,
      ledger: {
        kind: "payment.received_onchain",
        subjectId: input.referenceId,
        actorId: input.buyerId,
        parties: partiesOf(purchase),
        data: {
          transaction_id: id,
          type: input.type,
          reference_id: input.referenceId,
          buyer_wallet: input.buyerWallet,
          amount_cents: input.amountCents.toString(),
          amount_units: input.amountUnits.toString(),
          currency: input.currency,
          chain_tx: facts.chainTx,
        },
      },
    };
  }

  /**
   * The effect failed for good after the charge (the transfer or the mint was refused), in the
   * module's transaction: the charge is refunded by a job, then the purchase fails saying so.
   */
  async failEffect(trx: Transaction<Database>, id: string, failure: PaymentFailure): Promise<void> {
    const p = await this.move(trx, id, "effecting", { stage: "refunding", failure_code: failure.code, failure_reason: failure.reason });
    if (p) await this.enqueueRefund(trx, id);
  }

  /**
   * Refunds a completed purchase, in the caller's transaction (whose rules decided it may be
   * unwound: docs/ownership-and-money.md): the refund is a job (the processor is outside the
   * database), then the purchase and its payouts are `refunded` and the kind records its part.
   * False when the purchase was not completed (or is being refunded already).
   */
  async refund(trx: Transaction<Database>, id: string, cause: RefundCause): Promise<boolean> {
    const started = await repo.startRefund(trx, id, JSON.stringify(cause));
    if (started) await this.enqueueRefund(trx, id);
    return started;
  }

  readonly refundTask: Task = async (payload) => {
    const { id } = payload as { id?: unknown };
    if (typeof id !== "string") throw new Error(`${PURCHASE_REFUND_TASK}: payload without id`);
    await this.refundStep(id);
  };

  /**
   * A purchase's refund at the processor (one per purchase: its key), then, in one transaction: a
   * completed purchase and its payouts `refunded`, a pending one (its effect failed) `failed` with
   * the refund named, a failed one (a stray charge) keeps `failed`; the ledger entry; the kind's part.
   */
  async refundStep(id: string): Promise<void> {
    const { db, payments, ledger } = this.deps;
    const seen = await this.find(db, id);
    if (!seen || seen.stage !== "refunding" || !seen.charge_id) return;
    const kind = this.kindOf(seen.type);
    const refund = await payments.refund({ chargeId: seen.charge_id, idempotencyKey: `refund:${kind.keyPrefix}:${seen.reference_id}` });
    await db.transaction().execute(async (trx) => {
      const p = await this.lock(trx, id);
      if (!p || p.stage !== "refunding") return;
      const cause = p.status === "completed" ? ((p.refund_cause ?? null) as RefundCause | null) : null;
      const note = `${p.failure_reason ?? "The purchase did not go through"}${refundedNote(refund.id)}`;
      const moved = p.status === "completed" ? await repo.markRefunded(trx, id, refund.id) : await repo.markFailedRefunded(trx, id, refund.id, note);
      const refunded = moved.find((t) => t.id === id)!;
      const appends = (await kind.onRefunded?.(trx, refunded, refund, cause)) ?? [];
      await ledger.append(trx, {
        kind: "payment.refunded",
        subjectId: p.reference_id ?? id,
        actorId: cause?.actorId ?? null,
        parties: partiesOf(p),
        data: {
          transaction_id: id,
          type: p.type,
          reference_id: p.reference_id,
          charge_id: p.charge_id,
          refund_id: refund.id,
          amount_cents: refund.amountCents.toString(),
          reason: cause?.reason ?? p.failure_code ?? "failed",
          ...(cause?.referenceId ? { [`${cause.reason}_id`]: cause.referenceId } : {}),
          ...(cause?.forced ? { forced: true, note: cause.note ?? null } : {}),
        },
      });
      for (const entry of appends) await ledger.append(trx, entry);
    });
  }

  /** Charges and refunds whose step lost its process (its job sits behind a dead worker): started again. */
  async recoverStuck(): Promise<number> {
    const { db } = this.deps;
    const stuck = await repo.stuck(db, STUCK_MS, 100);
    for (const { id, stage } of stuck) {
      await db.transaction().execute(async (trx) => {
        if (stage === "charging") await enqueue(trx, PURCHASE_CHARGE_TASK, { id }, { jobKey: `purchase_charge_recover:${id}`, maxAttempts: 25 });
        else await this.enqueueRefund(trx, id, "purchase_refund_recover");
        await repo.update(trx, id, {});
      });
    }
    return stuck.length;
  }

  /** Cents paid for purchases completed in [from, to) and not refunded since (the admin report's volume; a royalty is part of its sale). */
  async volumeCents(range: { from: Date; to: Date }): Promise<bigint> {
    return repo.volumeCents(this.deps.db, PURCHASE_TYPES, range);
  }

  /** Moves a pending purchase on from `stage` (only from there: a step another run took already changes nothing); the purchase moved. */
  private move(trx: Transaction<Database>, id: string, stage: PurchaseStage, set: UpdateObject<Database, "transactions">, stamp?: "completed_at" | "failed_at"): Promise<Purchase | undefined> {
    return repo.moveFrom(trx, id, stage, set, stamp);
  }

  /** The purchase `id` (its transaction), read on `db`. */
  find(db: Db, id: string): Promise<Purchase | undefined> {
    return repo.find(db, id);
  }

  private lock(trx: Transaction<Database>, id: string): Promise<Purchase | undefined> {
    return repo.lock(trx, id);
  }

  private enqueueRefund(trx: Transaction<Database>, id: string, prefix = "purchase_refund"): Promise<void> {
    return enqueue(trx, PURCHASE_REFUND_TASK, { id }, { jobKey: `${prefix}:${id}`, maxAttempts: 25 });
  }

  private kindOf(type: string): PurchaseKind {
    const kind = this.kinds.get(type);
    if (!kind) throw new Error(`unknown purchase kind ${type}`);
    return kind;
  }
}

function chargeJobKey(id: string): string {
  return `purchase_charge:${id}`;
}

function partiesOf(p: Purchase): string[] {
  return [p.buyer_id, p.seller_id, p.recipient_id].filter((id): id is string => id !== null);
}
