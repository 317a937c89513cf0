import type { Kysely, Transaction } from "kysely";
import type { Logger } from "pino";
import { type Address, type Chain, getAddress, type PublicClient, type Transport } from "viem";
import type { CustodyWallet } from "../../chain/custody.ts";
import { UNITS_PER_CENT } from "../../chain/exchange.ts";
import type { ChainOperationKind, ChainOperations, KeyedFacts } from "../../chain/operations.ts";
import type { Relayer } from "../../chain/relayer.ts";
import type { ChainOperation, Database } from "../../db/database.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import { ApiError } from "../../lib/errors.ts";
import { centsToUsd } from "../../lib/money.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import type { User, UsersService } from "../users/users.service.ts";
import * as repo from "./withdrawals.repository.ts";
import type { Withdrawal } from "./withdrawals.tables.ts";

/**
 * What the three kinds of withdrawal share (certificate-withdrawals.ts, share-withdrawals.ts,
 * payment-token-withdrawals.ts): their dependencies, the operation's key and facts, the target and
 * sender checks, the settlement of a transfer and the Withdrawal answer.
 */

export interface WithdrawalsDeps {
  db: Kysely<Database>;
  logger: Logger;
  users: UsersService;
  artworks: ArtworksService;
  ownership: OwnershipService;
  operations: ChainOperations;
  publicClient: PublicClient<Transport, Chain>;
  relayer: Relayer;
  custody: CustodyWallet;
  viewsSchema: string;
  chain: { id: number; certificate: Address | null; shares: Address | null; paymentToken: Address | null };
}

/** What confirms a withdrawal's transfer. */
export interface TransferFacts {
  /** Null when the transfer's hash was lost and the chain's state alone says it happened. */
  txHash: string | null;
}

/** Every withdrawal's chain operation, whatever its kind. */
export function withdrawKey(id: string): string {
  return `withdraw:${id}`;
}

/** The withdrawal an operation carries out (every kind's payload names it). */
export function withdrawalIdOf(op: ChainOperation): string {
  return (op.payload as { withdrawal_id: string }).withdrawal_id;
}

export function keyed(rows: repo.IndexedWithdrawal[]): KeyedFacts<TransferFacts>[] {
  return rows.map((r) => ({ key: withdrawKey(r.withdrawal_id), facts: { txHash: r.tx_hash } }));
}

/** `to` when it is one of the user's linked wallets (lower-case); 400 otherwise. */
export async function linkedTarget(users: UsersService, userId: string, input: string): Promise<string> {
  const to = input.toLowerCase();
  if (!(await users.linkedWallets(userId)).some((w) => w.address === to)) {
    throw ApiError.validation([{ field: "to", code: "not_linked", message: "must be one of your linked wallets (POST /v1/users/me/wallets)" }]);
  }
  return to;
}

/** The user, whose wallet the platform signs for; 409 for a wallet of their own (what it holds they move themselves). */
export async function custodialUser(users: UsersService, userId: string): Promise<User & { custody_index: number }> {
  const user = await users.get(userId);
  if (user.wallet_kind !== "custodial" || user.custody_index === null) {
    throw ApiError.conflict("invalid_state", `Your wallet ${user.wallet_address.toLowerCase()} is your own: what it holds is yours to move already`);
  }
  return user as User & { custody_index: number };
}

/** A withdrawal's chain operation kind: its transfer's sending and facts, settled the same way for every asset (`completed`, `failed`). */
export function transferKind(kind: Omit<ChainOperationKind<TransferFacts>, "onConfirmed" | "onFailed">): ChainOperationKind<TransferFacts> {
  return { ...kind, onConfirmed: completed, onFailed: failed };
}

/** Transfers on-chain, in the confirming transaction: their withdrawals completed, `asset.withdrawn` to their users. */
export async function completed(trx: Transaction<Database>, confirmed: { op: ChainOperation; facts: TransferFacts }[]): Promise<void> {
  for (const { op, facts } of confirmed) {
    const w = await repo.settle(trx, withdrawalIdOf(op), { status: "completed", tx_hash: facts.txHash });
    if (!w) continue;
    const { quantity, amount } = toWithdrawal(w);
    await recordEvent(
      trx,
      "asset.withdrawn",
      { withdrawal_id: w.id, artwork_id: w.artwork_id, asset: w.asset, quantity, amount, from: w.from_wallet, to: w.to_wallet, tx_hash: w.tx_hash, completed_at: iso(w.completed_at!) },
      [w.user_id],
    );
  }
}

/** A transfer failed for good: its withdrawal fails saying why. */
export async function failed(trx: Transaction<Database>, op: ChainOperation, reason: string): Promise<void> {
  await repo.settle(trx, withdrawalIdOf(op), { status: "failed", failure_reason: reason });
}

export function toWithdrawal(w: Withdrawal) {
  return {
    id: w.id,
    status: w.status,
    asset: w.asset,
    artwork_id: w.artwork_id,
    quantity: w.asset === "payment_token" ? 0 : w.quantity,
    amount: w.amount_units === null ? null : centsToUsd(w.amount_units / UNITS_PER_CENT),
    to: getAddress(w.to_wallet),
    tx_hash: w.tx_hash,
    failure_reason: w.failure_reason,
    created_at: iso(w.created_at),
    completed_at: isoOrNull(w.completed_at),
  };
}
