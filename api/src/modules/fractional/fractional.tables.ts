import type { ColumnType, Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";

export type FractionalStatus = "pending" | "active" | "failed";

/**
 * An artwork whose shares are sold (docs/decisions.md#share-classes: one ArtShares class per
 * certificate, its cap fixed once). `shares_sold` counts reserved and confirmed shares: a purchase
 * reserves with one conditional UPDATE, and the check constraint keeps it within `total_shares` (no
 * oversell).
 */
export interface FractionalArtworksTable {
  artwork_id: string;
  token_id: ColumnType<bigint, bigint, bigint>;
  owner_id: string;
  created_by: string;
  total_shares: number;
  price_per_share_cents: ColumnType<bigint, bigint, bigint>;
  shares_sold: ColumnType<number, number | undefined, number>;
  shares_confirmed: ColumnType<number, number | undefined, number>;
  status: FractionalStatus;
  class_tx_hash: string | null;
  failure_reason: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  activated_at: NullableTimestamp;
}

export type FractionalPurchaseStatus = "pending" | "confirmed" | "failed";

/**
 * A purchase of shares (`frac_…`, docs/decisions.md#states: `pending` -> `confirmed` (minted
 * on-chain) / `failed` (payment refunded, shares released)); `stage` is where a pending one is:
 * `charging` (the charge job), `minting` (the `mint:<id>` chain operation), `done`.
 */
export interface FractionalPurchasesTable {
  id: string;
  artwork_id: string;
  token_id: ColumnType<bigint, bigint, bigint>;
  buyer_id: string;
  buyer_wallet: string;
  owner_id: string;
  shares: number;
  price_per_share_cents: ColumnType<bigint, bigint, bigint>;
  total_cents: ColumnType<bigint, bigint, bigint>;
  payment_method_id: string;
  transaction_id: string;
  purchase_key: string;
  status: FractionalPurchaseStatus;
  stage: "charging" | "minting" | "done";
  charge_id: string | null;
  fee_cents: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  mint_tx_hash: string | null;
  new_ownership_bps: number | null;
  failure_code: string | null;
  failure_reason: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  confirmed_at: NullableTimestamp;
  failed_at: NullableTimestamp;
}

export interface FractionalTables {
  fractional_artworks: FractionalArtworksTable;
  fractional_purchases: FractionalPurchasesTable;
}

export type FractionalArtwork = Selectable<FractionalArtworksTable>;
export type FractionalPurchase = Selectable<FractionalPurchasesTable>;
