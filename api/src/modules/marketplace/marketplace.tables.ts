import type { ColumnType, Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";

export type ListingStatus = "active" | "pending_payment" | "sold" | "cancelled";

/**
 * An artwork offered for sale by the on-chain owner of its certificate (CONTRACT §5: `active` ->
 * `pending_payment` -> `sold`; `active` -> `cancelled`). At most one open (active or pending
 * payment) listing per artwork: a partial unique index, not a check in code.
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

export interface MarketplaceTables {
  listings: ListingsTable;
}

export type Listing = Selectable<ListingsTable>;
