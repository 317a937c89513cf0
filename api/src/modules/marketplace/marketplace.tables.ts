import type { ColumnType, Generated, Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";

export type ListingStatus = "active" | "pending_payment" | "sold" | "cancelled";

/**
 * An artwork offered for sale by the on-chain owner of its certificate (docs/decisions.md#states:
 * `active` -> `pending_payment` -> `sold`; `active` -> `cancelled`). At most one open (active or
 * pending payment) listing per artwork: a partial unique index, not a check in code.
 */
export interface ListingsTable {
  id: string;
  artwork_id: string;
  seller_id: string;
  /** The seller's wallet that owned the token when it was listed (lower-case), as the indexer showed it. */
  seller_wallet: string;
  token_id: ColumnType<bigint, bigint, bigint>;
  price_cents: ColumnType<bigint, bigint, bigint>;
  currency: "USD";
  accepts_offers: boolean;
  status: ListingStatus;
  created_at: Timestamp;
  updated_at: Timestamp;
  cancelled_at: NullableTimestamp;
  cancelled_by: string | null;
}

export type OfferStatus = "pending" | "accepted" | "completed" | "payment_failed" | "rejected" | "withdrawn" | "expired";

/**
 * A buyer's offer on a listing that accepts offers (docs/decisions.md#states): `pending` ->
 * `accepted` -> `completed` | `payment_failed`; `pending` -> `rejected` | `withdrawn` | `expired`.
 * One pending offer per buyer and listing (a partial unique index). The buyer's payment method is
 * charged on accept.
 */
export interface OffersTable {
  id: string;
  listing_id: string;
  buyer_id: string;
  seller_id: string;
  amount_cents: ColumnType<bigint, bigint, bigint>;
  message: string | null;
  payment_method_id: string;
  status: OfferStatus;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  transaction_id: string | null;
  decided_by: string | null;
  decided_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type SaleStatus = "pending_payment" | "paid" | "completed" | "payment_failed" | "settlement_failed" | "lost_to_fill" | "refunded";

/**
 * A sale as a move on its listing (its id is the sale's `txn_` transaction, which holds the money:
 * the charge, fee, royalty, payout, settling transaction, failure and times, payments'
 * purchases.service.ts): `pending_payment` (charge job) -> `paid` (the certificate's transfer is a chain
 * operation) -> `completed` when the indexer has it; `payment_failed` (declined),
 * `settlement_failed` (the transfer failed for good; refunded), `lost_to_fill` (a wallet's fill of
 * the listing's order was mined first; a charge goes back), `refunded` (a dispute). One live sale
 * per listing (a partial unique index).
 */
export interface SalesTable {
  id: string;
  listing_id: string;
  offer_id: string | null;
  artwork_id: string;
  token_id: ColumnType<bigint, bigint, bigint>;
  /** Null for a wallet with no account that filled an order on-chain. */
  buyer_id: string | null;
  seller_id: string;
  /** The wallets the certificate moves between (the buyer's custodial one for a card sale). */
  buyer_wallet: string;
  seller_wallet: string;
  price_cents: ColumnType<bigint, bigint, bigint>;
  /** The card charged; null for an on-chain payment. */
  payment_method_id: string | null;
  payment_method: ColumnType<PaymentMethodKind, PaymentMethodKind | undefined, PaymentMethodKind>;
  /** The ArtExchange order an on-chain sale filled (once). */
  order_hash: ColumnType<string | null, string | null | undefined, string | null>;
  status: SaleStatus;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** A buyer's dispute of a completed sale, resolved by an admin (`refund` or `reject`). */
export interface DisputesTable {
  id: string;
  transaction_id: string;
  buyer_id: string;
  seller_id: string;
  reason: string;
  status: "open" | "resolved";
  resolution: "refund" | "reject" | null;
  resolution_note: string | null;
  resolved_by: string | null;
  refund_status: "pending" | "refunded" | null;
  refund_id: string | null;
  /** An admin refunded without the certificate's return (docs/ownership-and-money.md). */
  refund_forced: Generated<boolean>;
  /** `returned`: its transaction is the return's chain operation's (`settle:return:<id>`). */
  certificate_return: "pending" | "returned" | "not_possible" | "waived" | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  resolved_at: NullableTimestamp;
}

/** How a sale was paid: a card charged by the processor, or the payment token on-chain (ArtExchange). */
export type PaymentMethodKind = "card" | "onchain";

export type ExchangeOrderStatus = "open" | "filled" | "cancelled";

/**
 * An EIP-712 order of ArtExchange the platform's order key signed for a listing (an on-chain
 * purchase's steps hand it to wallets): open until filled (the indexer shows OrderFilled), cancelled
 * (on-chain, when the listing closed otherwise) or past `expires_at`.
 */
export interface ExchangeOrdersTable {
  order_hash: string;
  listing_id: string;
  seller_wallet: string;
  token_id: ColumnType<bigint, bigint, bigint>;
  /** The price in the payment token's base units (6 decimals: cents x 10^4). */
  price_units: ColumnType<bigint, bigint, bigint>;
  currency: string;
  fee_bps: number;
  /** The signed expiry, in the chain's time (ArtExchange compares it with block.timestamp). */
  expires_at: ColumnType<Date, Date, Date>;
  /** A wall-clock time by which the chain has certainly passed `expires_at`: until then the order may be filled. */
  fillable_until: ColumnType<Date, Date, Date>;
  signature: string;
  status: ColumnType<ExchangeOrderStatus, ExchangeOrderStatus | undefined, ExchangeOrderStatus>;
  sale_id: string | null;
  created_at: Timestamp;
  closed_at: NullableTimestamp;
}

export interface MarketplaceTables {
  listings: ListingsTable;
  offers: OffersTable;
  sales: SalesTable;
  disputes: DisputesTable;
  exchange_orders: ExchangeOrdersTable;
}

export type Listing = Selectable<ListingsTable>;
export type Offer = Selectable<OffersTable>;
export type Sale = Selectable<SalesTable>;
export type Dispute = Selectable<DisputesTable>;
export type ExchangeOrder = Selectable<ExchangeOrdersTable>;
