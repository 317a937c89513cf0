import type { ColumnType, Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";

export type WithdrawalAsset = "certificate" | "shares" | "payment_token";
export type WithdrawalStatus = "pending" | "completed" | "failed";

/**
 * An asset on its way from a user's custodial wallet to a wallet they linked (docs/wallets.md). Its
 * transaction is its chain operation's (`withdraw:<id>`), or for shares the one kept here (`signed_tx`).
 */
export interface WithdrawalsTable {
  id: string;
  user_id: string;
  /** The certificate's artwork (or the artwork whose shares); null for the payment token. */
  artwork_id: string | null;
  asset: WithdrawalAsset;
  token_id: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  /** The payment token's amount in its base units (6 decimals); null for a certificate. */
  amount_units: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  quantity: number;
  /** The custodial wallet it leaves (lower-case). */
  from_wallet: string;
  /** The linked wallet it goes to (lower-case). */
  to_wallet: string;
  status: ColumnType<WithdrawalStatus, WithdrawalStatus | undefined, WithdrawalStatus>;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** Certificate: the chain's head block when it was asked for; its transfer is mined in a later one. Null before 2026-11-29. */
  after_block: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  /** Shares: the custodial wallet's nonce of the transaction it signed for them (signed_tx). */
  sender_nonce: ColumnType<number | null, number | null | undefined, number | null>;
  /** Shares: that transaction, signed once; every attempt sends this one. Its hash is the withdrawal's transaction (keccak256). */
  signed_tx: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface WithdrawalsTables {
  withdrawals: WithdrawalsTable;
}

export type Withdrawal = Selectable<WithdrawalsTable>;
