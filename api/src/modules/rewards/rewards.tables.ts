import type { ColumnType, Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";

/**
 * The points ledger (`rev_…`): one row per source and user. `source_key` names what earned or spent
 * the points (an outbox event and the rule, or a redemption) and is unique: a replayed event earns
 * nothing twice. `users.service_points`, `lifetime_points` and `tier` move in the transaction that
 * writes the row, so they always equal the ledger's sums.
 */
export interface RewardLedgerTable {
  id: string;
  user_id: string;
  type: "earned" | "redeemed";
  /** Negative when redeemed. */
  points: number;
  reason: string;
  reference_id: string;
  source_key: string;
  created_at: Timestamp;
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
}

export interface RewardsTables {
  reward_ledger: RewardLedgerTable;
  rewards: RewardsTable;
  reward_redemptions: RewardRedemptionsTable;
}

export type RewardLedgerRow = Selectable<RewardLedgerTable>;
export type Reward = Selectable<RewardsTable>;
export type Redemption = Selectable<RewardRedemptionsTable>;
