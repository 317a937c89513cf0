import type { ColumnType, Generated, Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";

type Cents = ColumnType<bigint, bigint, bigint>;

/** A card a user saved (`pm_…`): the processor's reference and the card's public facts, never its number. */
export interface PaymentMethodsTable {
  id: string;
  user_id: string;
  /** The processor that knows `processor_ref` (`sandbox`, later `stripe`). */
  processor: string;
  processor_ref: string;
  type: "card";
  card_brand: string;
  card_last4: string;
  card_exp_month: number;
  card_exp_year: number;
  created_at: Timestamp;
  detached_at: NullableTimestamp;
}

/** The sandbox processor's charges, one per idempotency key (what Stripe keeps on its side). */
export interface SandboxChargesTable {
  id: string;
  idempotency_key: string;
  amount_cents: Cents;
  currency: string;
  payment_method: string;
  application_fee_cents: Cents;
  description: string | null;
  /** jsonb, written as JSON text. */
  metadata: ColumnType<Record<string, string>, string, string>;
  status: "succeeded" | "failed";
  failure_code: string | null;
  failure_message: string | null;
  amount_refunded_cents: ColumnType<bigint, bigint | undefined, bigint>;
  created_at: Timestamp;
}

export interface SandboxRefundsTable {
  id: string;
  idempotency_key: string;
  charge_id: string;
  amount_cents: Cents;
  created_at: Timestamp;
}

/** Transient failures served per charge key, for the cards that fail N times and then succeed. */
export interface SandboxProcessingErrorsTable {
  idempotency_key: string;
  failures: number;
  created_at: Timestamp;
}

export type TransactionType = "sale" | "royalty_payout" | "share_purchase" | "ticket_purchase";
export type TransactionStatus = "pending" | "completed" | "failed" | "refunded";
export type PurchaseStage = "charging" | "effecting" | "refunding" | "done";

/**
 * A money record (docs/decisions.md#states: pending -> completed / failed / refunded). A `sale`
 * concerns its buyer and seller (the recipient); a `royalty_payout` its artist (the recipient) and
 * points at its sale.
 */
export interface TransactionsTable {
  id: string;
  type: TransactionType;
  status: TransactionStatus;
  artwork_id: string | null;
  amount_cents: Cents;
  currency: ColumnType<"USD", "USD" | undefined, "USD">;
  buyer_id: string | null;
  /** The wallet that paid on-chain (an on-chain sale's buyer may have no account). */
  buyer_wallet: ColumnType<string | null, string | null | undefined, string | null>;
  /** `card` (charged by the processor) or `onchain` (paid in the payment token through ArtExchange). */
  payment_method: ColumnType<"card" | "onchain", "card" | "onchain" | undefined, "card" | "onchain">;
  seller_id: string | null;
  recipient_id: string | null;
  recipient_wallet: string | null;
  parent_id: string | null;
  /** The business record paid for when it is not a sale (a fractional purchase `frac_…`). */
  reference_id: ColumnType<string | null, string | null | undefined, string | null>;
  fee_cents: ColumnType<bigint, bigint | undefined, bigint>;
  royalty_cents: ColumnType<bigint, bigint | undefined, bigint>;
  payout_cents: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  charge_id: string | null;
  chain_tx: string | null;
  failure_reason: string | null;
  /** Where a purchase is in its lifecycle (purchases.service.ts); null for payouts and rows older than it. */
  stage: ColumnType<PurchaseStage | null, PurchaseStage | null | undefined, PurchaseStage | null>;
  payment_method_id: ColumnType<string | null, string | null | undefined, string | null>;
  description: ColumnType<string | null, string | null | undefined, string | null>;
  /** Set before the processor is first asked: from then on a charge may exist under the purchase's key. */
  charge_started_at: NullableTimestamp;
  charge_runs: Generated<number>;
  failure_code: ColumnType<string | null, string | null | undefined, string | null>;
  refund_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Why a completed purchase was refunded (purchases.service.ts RefundCause). */
  refund_cause: ColumnType<unknown, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  completed_at: NullableTimestamp;
  failed_at: NullableTimestamp;
  refunded_at: NullableTimestamp;
}

export interface PaymentsTables {
  transactions: TransactionsTable;
  payment_methods: PaymentMethodsTable;
  sandbox_charges: SandboxChargesTable;
  sandbox_refunds: SandboxRefundsTable;
  sandbox_processing_errors: SandboxProcessingErrorsTable;
}

export type PaymentMethodRow = Selectable<PaymentMethodsTable>;
export type SandboxChargeRow = Selectable<SandboxChargesTable>;
export type SandboxRefundRow = Selectable<SandboxRefundsTable>;
export type TransactionRow = Selectable<TransactionsTable>;
