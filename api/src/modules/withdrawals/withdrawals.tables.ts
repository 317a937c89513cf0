import type { ColumnType, Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";

export type WithdrawalAsset = "certificate";
export type WithdrawalStatus = "pending" | "completed" | "failed";

/** An asset on its way from a user's custodial wallet to a wallet they linked (docs/wallets.md). */
export interface WithdrawalsTable {
  id: string;
  user_id: string;
  artwork_id: string;
  asset: WithdrawalAsset;
  token_id: ColumnType<bigint, bigint, bigint>;
  quantity: number;
  /** The custodial wallet it leaves (lower-case). */
  from_wallet: string;
  /** The linked wallet it goes to (lower-case). */
  to_wallet: string;
  status: ColumnType<WithdrawalStatus, WithdrawalStatus | undefined, WithdrawalStatus>;
  tx_hash: ColumnType<string | null, string | null | undefined, string | null>;
  failure_reason: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  completed_at: NullableTimestamp;
}

export interface WithdrawalsTables {
  withdrawals: WithdrawalsTable;
}

export type Withdrawal = Selectable<WithdrawalsTable>;
