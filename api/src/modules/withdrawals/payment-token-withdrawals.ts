import { type Address, formatUnits, getAddress } from "viem";
import { isRevertWith, PermanentChainError } from "../../chain/errors.ts";
import { UNITS_PER_CENT } from "../../chain/exchange.ts";
import { authorizationNonce, paymentTokenAbi, signTransferAuthorization } from "../../chain/payment-token.ts";
import { type ChainOperationKind, ChainOperationFailure, type KeyedFacts, type SendContext, transactionOf } from "../../chain/operations.ts";
import type { ChainOperation } from "../../db/database.ts";
import { lockNamed } from "../../db/locks.ts";
import type { Transact } from "../../db/transact.ts";
import type { Actor } from "../../lib/actor.ts";
import { ApiError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { usdToCents } from "../../lib/money.ts";
import * as repo from "./withdrawals.repository.ts";
import type { WithdrawalCreate } from "./withdrawals.schemas.ts";
import { custodialUser, linkedTarget, toWithdrawal, transferKind, type TransferFacts, type WithdrawalsDeps, withdrawable, withdrawKey } from "./withdrawal-transfers.ts";

/** The chain operation that moves withdrawn payment token (EIP-3009), once per withdrawal. */
export const WITHDRAW_PAYMENT_TOKEN_OPERATION = "withdrawal_payment_token";
/** The EIP-712 version of the payment token's domain: USDC's and MockStablecoin's. */
const PAYMENT_TOKEN_EIP712_VERSION = "2";
/** How long a signed transfer authorization stays valid (a retry signs a new one, with the same nonce). */
const AUTHORIZATION_TTL_S = 3_600n;

/** What the payment token's transfer needs: the custodial wallet that signs (its custody index), the linked wallet, the amount. */
interface TokenPayload {
  withdrawal_id: string;
  from: Address;
  to: Address;
  amount_units: string;
  custody_index: number;
}

/**
 * The payment token (the proceeds of sales paid on-chain) from the custodial wallet to a linked
 * one: the custodial key signs an EIP-3009 transfer authorization whose nonce is the withdrawal's
 * (one transfer per withdrawal), and the relayer sends `transferWithAuthorization`. The indexer does
 * not follow the token: the transaction mined is the last fact.
 */
export class PaymentTokenWithdrawals {
  constructor(private readonly deps: WithdrawalsDeps) {}

  /**
   * At most the wallet's balance less what is being withdrawn and not yet mined (withdrawable),
   * counted under the user's lock.
   */
  async create(actor: Actor, input: WithdrawalCreate, transact: Transact) {
    const { users, operations, publicClient, chain } = this.deps;
    const misplaced = [
      ...(input.artwork_id !== undefined ? [{ field: "artwork_id", code: "not_allowed", message: "a payment_token withdrawal names no artwork" }] : []),
      ...(input.quantity !== undefined ? [{ field: "quantity", code: "not_allowed", message: "a payment_token withdrawal has an amount, not a quantity" }] : []),
      ...(input.amount === undefined || input.amount <= 0 ? [{ field: "amount", code: "required", message: "a payment_token withdrawal needs an amount above 0" }] : []),
    ];
    if (misplaced.length > 0) throw ApiError.validation(misplaced);
    const token = chain.paymentToken;
    if (!token) throw new ApiError(503, "service_unavailable", "The payment token is not configured (PAYMENT_TOKEN_ADDRESS)");
    const to = await linkedTarget(users, actor.userId, input.to);
    const user = await custodialUser(users, actor.userId);
    const from = user.wallet_address.toLowerCase();
    const units = usdToCents(input.amount!) * UNITS_PER_CENT;
    return transact(async (trx) => {
      await lockNamed(trx, `withdraw_payment_token:${user.id}`);
      const rows = await repo.pendingOfUser(trx, user.id, "payment_token");
      const block = await publicClient.getBlockNumber({ cacheTime: 0 });
      const balance = await publicClient.readContract({ address: token, abi: paymentTokenAbi, functionName: "balanceOf", args: [getAddress(from)], blockNumber: block });
      const { available, pending } = await withdrawable(this.deps, trx, rows, balance, block, (w) => BigInt(w.amount_units ?? 0));
      if (units > available) {
        throw ApiError.refused("insufficient_balance", `Your custodial wallet has ${formatUnits(available > 0n ? available : 0n, 6)} of the payment token to withdraw (its balance ${formatUnits(balance, 6)}, less ${formatUnits(pending, 6)} being withdrawn)`);
      }
      const withdrawal = await repo.insert(trx, { id: newId("withdrawal"), user_id: user.id, artwork_id: null, asset: "payment_token", token_id: null, amount_units: units, quantity: 1, from_wallet: from, to_wallet: to });
      const payload: TokenPayload = { withdrawal_id: withdrawal.id, from: getAddress(from), to: getAddress(to), amount_units: units.toString(), custody_index: user.custody_index };
      await operations.request(trx, { key: withdrawKey(withdrawal.id), kind: WITHDRAW_PAYMENT_TOKEN_OPERATION, payload: { ...payload } });
      return toWithdrawal(withdrawal, null, null);
    });
  }

  /** The payment token's transfer (EIP-3009, a chain operation): done when its authorization is used on-chain. */
  readonly kind: ChainOperationKind<TransferFacts> = transferKind({
    kind: WITHDRAW_PAYMENT_TOKEN_OPERATION,
    abi: paymentTokenAbi,
    maxAttempts: 8,
    retryBaseMs: 2_000,
    // The indexer does not follow the payment token: its transaction mined is the last fact.
    confirmedBySend: true,
    send: (op, ctx) => this.send(op, ctx),
    // Sent before (its hash lost): the authorization is used (MockStablecoin's custom error, USDC's require message); the chain's state confirms it.
    settled: (err) => isRevertWith(err, "MockStablecoinAuthorizationUsed") || (err instanceof PermanentChainError && /authorization is used/i.test(err.reason ?? "")),
    readIndexed: async () => [],
    lookupIndexed: (ops) => this.authorizationsUsed(ops),
    readFromChain: (ops) => this.authorizationsUsed(ops),
  });

  private async send(op: ChainOperation, ctx: SendContext): Promise<void> {
    const { publicClient, relayer, custody, chain } = this.deps;
    const token = chain.paymentToken;
    if (!token) throw new ChainOperationFailure("transient", "PAYMENT_TOKEN_ADDRESS is not configured");
    const p = op.payload as unknown as TokenPayload;
    const [name, block] = await Promise.all([publicClient.readContract({ address: token, abi: paymentTokenAbi, functionName: "name" }), publicClient.getBlock({ blockTag: "latest" })]);
    const args = await signTransferAuthorization(
      custody.accountAt(p.custody_index),
      { name, version: PAYMENT_TOKEN_EIP712_VERSION, chainId: chain.id, verifyingContract: token },
      { to: p.to, value: BigInt(p.amount_units), validBefore: block.timestamp + AUTHORIZATION_TTL_S, nonce: authorizationNonce(p.withdrawal_id) },
    );
    await relayer.write({
      address: token,
      abi: paymentTokenAbi,
      functionName: "transferWithAuthorization",
      args,
      label: op.key,
      onSubmitted: ({ hash }) => ctx.recordSent([op.key], hash),
    });
  }

  /** The withdrawals among `ops` whose transfer is on-chain (their authorization used), with their transaction. */
  private async authorizationsUsed(ops: ChainOperation[]): Promise<KeyedFacts<TransferFacts>[]> {
    const token = this.deps.chain.paymentToken;
    if (!token) return [];
    const out: KeyedFacts<TransferFacts>[] = [];
    for (const op of ops) {
      const p = op.payload as unknown as TokenPayload;
      const used = await this.deps.publicClient.readContract({ address: token, abi: paymentTokenAbi, functionName: "authorizationState", args: [p.from, authorizationNonce(p.withdrawal_id)] });
      if (used) out.push({ key: op.key, facts: { txHash: transactionOf(op) } });
    }
    return out;
  }
}
