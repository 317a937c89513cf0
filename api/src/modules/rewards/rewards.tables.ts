import type { ColumnType, Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";
import type { Tier } from "../../lib/tiers.ts";

export type LedgerEntryType = "earned" | "redeemed" | "reversal" | "redemption_reversed" | "adjustment";

/**
 * The points ledger (`rev_…`, docs/rewards.md): every change of a user's points, naming its source
 * (`source_type`, `source_id`) and, for earnings and reversals, the rule. `source_key` is unique: an
 * event handled again writes nothing twice. The user's `reward_balances` row moves in the
 * transaction that writes the row, so it always equals the ledger's sums.
 */
export interface RewardLedgerTable {
  id: string;
  user_id: string;
  type: LedgerEntryType;
  /** Negative when redeemed or reversed. */
  points: number;
  reason: string;
  reference_id: string;
  source_key: string;
  source_type: string | null;
  source_id: string | null;
  rule: string | null;
  created_at: Timestamp;
}

/** A user's points (the ledger's sums): `service_points` may go below zero after a reversal of points already spent. */
export interface RewardBalancesTable {
  user_id: string;
  service_points: number;
  /** Earned and still standing (reversals take back): the tier's measure. */
  lifetime_points: number;
  tier: Tier;
  updated_at: Timestamp;
}

/** What earned points, per rule and user: `standing` with the points it earned, or `reversed` (once; a reversal seen first leaves it reversed with 0). */
export interface RewardSourcesTable {
  user_id: string;
  source_type: string;
  source_id: string;
  rule: string;
  points: number;
  state: "standing" | "reversed";
  created_at: Timestamp;
  reversed_at: NullableTimestamp;
}

/** A reward of the catalog (`rwd_…`): an activation code, or a discount on a pending order. */
export interface RewardsTable {
  id: string;
  name: string;
  points_cost: number;
  kind: "code" | "discount";
  discount_pct: number | null;
  discount_cents: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  /** null: unlimited. `redeemed_count` never exceeds it (a conditional UPDATE and a check constraint). */
  stock: number | null;
  redeemed_count: ColumnType<number, number | undefined, number>;
  active: boolean;
  created_by: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** A redemption (`rdm_…`): its activation code, or the order its discount went to. */
export interface RewardRedemptionsTable {
  id: string;
  user_id: string;
  reward_id: string;
  reward_name: string;
  points_spent: number;
  activation_code: string | null;
  order_id: string | null;
  discount_cents: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  remaining_balance: number;
  created_at: Timestamp;
  used_at: NullableTimestamp;
  /** Its order failed, expired or was refunded: the points came back. */
  reversed_at: NullableTimestamp;
}

export interface RewardsTables {
  reward_ledger: RewardLedgerTable;
  reward_balances: RewardBalancesTable;
  reward_sources: RewardSourcesTable;
  rewards: RewardsTable;
  reward_redemptions: RewardRedemptionsTable;
}

/** What other modules read of a user's points (created in this module's migrations): a profile's tier and points. */
export interface RewardsViews {
  reward_standings: Pick<RewardBalancesTable, "service_points" | "lifetime_points" | "tier"> & { user_id: string };
}

export type RewardLedgerRow = Selectable<RewardLedgerTable>;
export type Reward = Selectable<RewardsTable>;
export type Redemption = Selectable<RewardRedemptionsTable>;
