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
  /** Its `share_class:<artwork>` chain operation's state: pending while asked for, active once on-chain (its transaction, the time it was confirmed and its failure are the operation's). */
  status: FractionalStatus;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type FractionalPurchaseStatus = "pending" | "confirmed" | "failed";

/**
 * A purchase of shares (`frac_…`): what is the module's own, the shares reserved for the buyer at a
 * price; its money, stage and failure are its `share_purchase` transaction's (`transaction_id`,
 * payments/purchases.service.ts), the mint's transaction its `mint:<id>` chain operation's. `status` is the
 * reservation's (docs/decisions.md#states): `pending` while reserved, `confirmed` once minted,
 * `failed` once released (at a mint's failure, before its purchase's refund is through).
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
  transaction_id: string;
  purchase_key: string;
  status: FractionalPurchaseStatus;
  new_ownership_bps: number | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface FractionalTables {
  fractional_artworks: FractionalArtworksTable;
  fractional_purchases: FractionalPurchasesTable;
}

export type FractionalArtwork = Selectable<FractionalArtworksTable>;
export type FractionalPurchase = Selectable<FractionalPurchasesTable>;
