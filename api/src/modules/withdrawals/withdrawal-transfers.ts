import type { Kysely, Transaction } from "kysely";
import type { Logger } from "pino";
import { type Address, type Chain, getAddress, type Hex, type PublicClient, type Transport } from "viem";
import { signedTransactionHash } from "../../chain/custodial-sender.ts";
import type { CustodyWallet } from "../../chain/custody.ts";
import { UNITS_PER_CENT } from "../../chain/exchange.ts";
import { type ChainOperationKind, type ChainOperations, type KeyedFacts, transactionOf } from "../../chain/operations.ts";
import type { Relayer } from "../../chain/relayer.ts";
import type { ChainOperation, Database, Db } from "../../db/database.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import { ApiError } from "../../lib/errors.ts";
import { centsToUsd } from "../../lib/money.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import type { User, UsersService } from "../users/users.service.ts";
import * as repo from "./withdrawals.repository.ts";
import type { Withdrawal, WithdrawalAsset } from "./withdrawals.tables.ts";

/**
 * What the three kinds of withdrawal share (certificate-withdrawals.ts, share-withdrawals.ts,
 * payment-token-withdrawals.ts): their dependencies, the operation's key and facts, the target and
 * sender checks, the settlement of a transfer, the withdrawal's transaction and the Withdrawal answer.
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

export function keyed(rows: repo.WithdrawalTransaction[]): KeyedFacts<TransferFacts>[] {
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

/**
 * Transfers on-chain, in the confirming transaction: their withdrawals completed, `asset.withdrawn`
 * to their users with the transaction the confirmation saw (the operation's facts, recorded with it).
 */
export async function completed(trx: Transaction<Database>, confirmed: { op: ChainOperation; facts: TransferFacts }[]): Promise<void> {
  for (const { op, facts } of confirmed) {
    const settled = await repo.settle(trx, withdrawalIdOf(op), "completed");
    if (!settled) continue;
    const { withdrawal: w, at } = settled;
    const { quantity, amount } = toWithdrawal(w, null, facts.txHash);
    await recordEvent(
      trx,
      "asset.withdrawn",
      { withdrawal_id: w.id, artwork_id: w.artwork_id, asset: w.asset, quantity, amount, from: w.from_wallet, to: w.to_wallet, tx_hash: facts.txHash, completed_at: iso(at) },
      [w.user_id],
    );
  }
}

/** A transfer failed for good: its withdrawal fails (why is its operation's last_error). */
export async function failed(trx: Transaction<Database>, op: ChainOperation): Promise<void> {
  await repo.settle(trx, withdrawalIdOf(op), "failed");
}

/**
 * A withdrawal's transaction, stored once: for shares the one its wallet signed (keccak256 of
 * `signed_tx`, known before it is sent), else its chain operation's (`withdraw:<id>`).
 */
export function transferTxOf(w: Withdrawal, op: ChainOperation | undefined): string | null {
  if (w.asset === "shares") return w.signed_tx === null ? null : signedTransactionHash(w.signed_tx as Hex);
  return transactionOf(op);
}

/** The withdrawals' chain operations by withdrawal id: one query, whatever their number. */
async function operationsOf(operations: Pick<ChainOperations, "findMany">, db: Db, rows: readonly Withdrawal[]): Promise<Map<string, ChainOperation | undefined>> {
  const ops = new Map((await operations.findMany(db, rows.map((w) => withdrawKey(w.id)))).map((op) => [op.key, op]));
  return new Map(rows.map((w) => [w.id, ops.get(withdrawKey(w.id))]));
}

/** The transactions the pending withdrawals of `asset` (those of `ids`, when given) sent or signed, to match the indexer's transfers with. */
export async function pendingTransactions(deps: Pick<WithdrawalsDeps, "db" | "operations">, asset: WithdrawalAsset, ids?: readonly string[]): Promise<repo.WithdrawalTransaction[]> {
  const pending = await repo.pendingOf(deps.db, asset, ids);
  const ops = await operationsOf(deps.operations, deps.db, pending);
  return pending.flatMap((w) => {
    const txHash = transferTxOf(w, ops.get(w.id));
    return txHash === null ? [] : [{ withdrawal_id: w.id, tx_hash: txHash }];
  });
}

/**
 * What a wallet can withdraw: `balance`, read at `block`, less what its pending withdrawals `rows`
 * still take from it: each one's `amountOf` unless its transaction was mined by `block` (that
 * balance already lacks it, though the withdrawal completes only when the indexer shows it). A
 * receipt that cannot be read counts its withdrawal as pending: a withdrawal refused for a moment,
 * never an overdraft.
 */
export async function withdrawable(deps: Pick<WithdrawalsDeps, "operations" | "publicClient">, db: Db, rows: readonly Withdrawal[], balance: bigint, block: bigint, amountOf: (w: Withdrawal) => bigint) {
  const ops = await operationsOf(deps.operations, db, rows);
  const taken = await Promise.all(
    rows.map(async (w) => {
      const hash = transferTxOf(w, ops.get(w.id));
      const receipt = hash === null ? null : await deps.publicClient.getTransactionReceipt({ hash: hash as Hex }).catch(() => null);
      return receipt && receipt.status === "success" && receipt.blockNumber <= block ? 0n : amountOf(w);
    }),
  );
  const pending = taken.reduce((sum, n) => sum + n, 0n);
  return { available: balance - pending, pending };
}

/** Withdrawals as their resource, with their transactions. */
export async function withdrawalAnswers(operations: Pick<ChainOperations, "findMany">, db: Db, rows: readonly Withdrawal[]) {
  const ops = await operationsOf(operations, db, rows);
  return rows.map((w) => toWithdrawal(w, ops.get(w.id)));
}

/**
 * A withdrawal as its resource: its transaction (transferTxOf, or `txHash` as just confirmed), and
 * its outcome's facts, its operation's (the confirmation's time, or why it failed).
 */
export function toWithdrawal(w: Withdrawal, op: ChainOperation | null | undefined, txHash: string | null = transferTxOf(w, op ?? undefined)) {
  return {
    id: w.id,
    status: w.status,
    asset: w.asset,
    artwork_id: w.artwork_id,
    quantity: w.asset === "payment_token" ? 0 : w.quantity,
    amount: w.amount_units === null ? null : centsToUsd(w.amount_units / UNITS_PER_CENT),
    to: getAddress(w.to_wallet),
    tx_hash: txHash,
    failure_reason: w.status === "failed" ? (op?.last_error ?? null) : null,
    created_at: iso(w.created_at),
    completed_at: w.status === "completed" ? isoOrNull(op?.confirmed_at ?? null) : null,
  };
}
