import { type Address, encodeFunctionData, getAddress, type Hex } from "viem";
import { artSharesAbi } from "../../../../contracts/abi/ArtShares.ts";
import { CustodialSender, type SignedTransactionStore, signedTransactionHash } from "../../chain/custodial-sender.ts";
import { type ChainOperationKind, ChainOperationFailure, type SendContext } from "../../chain/operations.ts";
import type { ChainOperation } from "../../db/database.ts";
import { lockNamed } from "../../db/locks.ts";
import type { Transact } from "../../db/transact.ts";
import type { Actor } from "../../lib/actor.ts";
import { ApiError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import * as repo from "./withdrawals.repository.ts";
import type { WithdrawalCreate } from "./withdrawals.schemas.ts";
import { custodialUser, keyed, linkedTarget, pendingTransactions, toWithdrawal, transferKind, type TransferFacts, type WithdrawalsDeps, withdrawable, withdrawKey } from "./withdrawal-transfers.ts";

/** The chain operation that moves withdrawn shares (a transaction the custodial wallet signs), once per withdrawal. */
export const WITHDRAW_SHARES_OPERATION = "withdrawal_shares";

/** What a shares withdrawal's transfer needs: the share class (the certificate's token id), the custodial wallet that signs (its custody index), the linked wallet, how many. */
interface SharesPayload {
  withdrawal_id: string;
  token_id: string;
  from: Address;
  to: Address;
  quantity: number;
  custody_index: number;
}

/** Gas a shares transfer is signed with: an ERC-1155 transfer to a wallet that runs no code costs about 55,000. */
const SHARE_TRANSFER_GAS = 120_000n;

/**
 * Shares of an artwork (ERC-1155, the certificate's token id) from the custodial wallet to a linked
 * one. ArtShares trusts no forwarder, so the custodial wallet sends the transfer itself, through
 * the CustodialSender (chain/custodial-sender.ts): signed once with the wallet's next nonce and kept
 * on the withdrawal (`signed_tx`, `sender_nonce`; its hash is the withdrawal's transaction) before
 * it is sent, the same transaction on every attempt, so the shares move at most once whatever is
 * retried; one signed, unsettled withdrawal per wallet at a time. Completed when the indexer shows
 * the transfer.
 */
export class ShareWithdrawals {
  readonly sender: CustodialSender;

  constructor(private readonly deps: WithdrawalsDeps) {
    this.sender = new CustodialSender({ db: deps.db, publicClient: deps.publicClient, relayer: deps.relayer, chainId: deps.chain.id });
  }

  /**
   * At most what the wallet holds less what is being withdrawn and not yet mined (withdrawable),
   * counted under the user's lock for that class. Shares carry no owner's rights over the artwork:
   * nothing of it is locked.
   */
  async create(actor: Actor, input: WithdrawalCreate, transact: Transact) {
    const { artworks, users, operations, publicClient, chain } = this.deps;
    const misplaced = [
      ...(input.amount !== undefined ? [{ field: "amount", code: "not_allowed", message: "only a payment_token withdrawal has an amount" }] : []),
      ...(input.artwork_id === undefined ? [{ field: "artwork_id", code: "required", message: "a shares withdrawal names the artwork whose shares" }] : []),
      ...(input.quantity === undefined ? [{ field: "quantity", code: "required", message: "a shares withdrawal says how many shares" }] : []),
    ];
    if (misplaced.length > 0) throw ApiError.validation(misplaced);
    const shares = chain.shares;
    if (!shares) throw new ApiError(503, "service_unavailable", "The shares contract is not configured (ART_SHARES_ADDRESS)");
    const to = await linkedTarget(users, actor.userId, input.to);
    const artwork = await artworks.findAny(input.artwork_id!);
    if (!artwork || artwork.deleted_at) throw ApiError.validation([{ field: "artwork_id", code: "not_found", message: "no such artwork" }]);
    if (artwork.token_id === null) throw ApiError.conflict("invalid_state", `The artwork is not certified on-chain (status ${artwork.status}): it has no shares`);
    const user = await custodialUser(users, actor.userId);
    const from = user.wallet_address.toLowerCase();
    const tokenId = artwork.token_id;
    const quantity = BigInt(input.quantity!);
    return transact(async (trx) => {
      await lockNamed(trx, `withdraw_shares:${user.id}:${tokenId}`);
      const rows = await repo.pendingOfUser(trx, user.id, "shares", tokenId);
      const block = await publicClient.getBlockNumber({ cacheTime: 0 });
      const balance = await publicClient.readContract({ address: shares, abi: artSharesAbi, functionName: "balanceOf", args: [getAddress(from), tokenId], blockNumber: block });
      const { available, pending } = await withdrawable(this.deps, trx, rows, balance, block, (w) => BigInt(w.quantity));
      if (quantity > available) {
        throw ApiError.refused("insufficient_balance", `Your custodial wallet has ${available > 0n ? available : 0n} shares of this artwork to withdraw (it holds ${balance}, less ${pending} being withdrawn)`);
      }
      const withdrawal = await repo.insert(trx, { id: newId("withdrawal"), user_id: user.id, artwork_id: artwork.id, asset: "shares", token_id: tokenId, quantity: input.quantity!, from_wallet: from, to_wallet: to });
      const payload: SharesPayload = { withdrawal_id: withdrawal.id, token_id: tokenId.toString(), from: getAddress(from), to: getAddress(to), quantity: input.quantity!, custody_index: user.custody_index };
      await operations.request(trx, { key: withdrawKey(withdrawal.id), kind: WITHDRAW_SHARES_OPERATION, payload: { ...payload } });
      return toWithdrawal(withdrawal, null, null);
    });
  }

  /**
   * The shares' transfer (a chain operation): `safeTransferFrom(custodial, linked, id, quantity)`
   * signed by the custodial wallet itself, once, and sent as it is on every attempt; done when the
   * indexer shows it.
   */
  readonly kind: ChainOperationKind<TransferFacts> = transferKind({
    kind: WITHDRAW_SHARES_OPERATION,
    abi: artSharesAbi,
    // An attempt that waits for the wallet's previous withdrawal counts as one: room for many.
    maxAttempts: 16,
    retryBaseMs: 1_000,
    send: (op, ctx) => this.send(op, ctx),
    readIndexed: async (fromBlock, toBlock) => keyed(await repo.indexedShareTransfers(this.deps.db, this.deps.viewsSchema, await pendingTransactions(this.deps, "shares"), [fromBlock, toBlock])),
    lookupIndexed: async (ops) => keyed(await repo.indexedShareTransfers(this.deps.db, this.deps.viewsSchema, await pendingTransactions(this.deps, "shares", ops.map((op) => payloadOf(op).withdrawal_id)))),
    readFromChain: async () => [],
  });

  private async send(op: ChainOperation, ctx: SendContext): Promise<void> {
    const { db, custody, chain } = this.deps;
    const p = payloadOf(op);
    const shares = chain.shares;
    if (!shares) throw new ChainOperationFailure("transient", "ART_SHARES_ADDRESS is not configured");
    const w = await repo.find(db, p.withdrawal_id);
    if (!w || w.status !== "pending") return;
    await this.sender.send(
      {
        account: custody.accountAt(p.custody_index),
        to: shares,
        data: encodeFunctionData({ abi: artSharesAbi, functionName: "safeTransferFrom", args: [p.from, p.to, BigInt(p.token_id), BigInt(p.quantity), "0x"] }),
        gas: SHARE_TRANSFER_GAS,
        abi: artSharesAbi,
        label: op.key,
        onSubmitted: (hash) => ctx.recordSent([op.key], hash),
      },
      signedOn(p),
    );
  }
}

/** The withdrawal's row keeps its signed transaction; the wallet's other signed, pending withdrawal goes first. */
function signedOn(p: SharesPayload): SignedTransactionStore {
  const from = p.from.toLowerCase();
  return {
    signed: async (db) => {
      const w = await repo.find(db, p.withdrawal_id);
      return w?.signed_tx ? { raw: w.signed_tx as Hex, hash: signedTransactionHash(w.signed_tx as Hex), nonce: w.sender_nonce! } : null;
    },
    unsettled: async (db) => {
      const other = await repo.signingOf(db, from, p.withdrawal_id);
      return other ? `the wallet's withdrawal ${other.id}` : null;
    },
    keep: (db, signed) => repo.recordSigned(db, p.withdrawal_id, { sender_nonce: signed.nonce, signed_tx: signed.raw }),
  };
}

function payloadOf(op: ChainOperation): SharesPayload {
  return op.payload as unknown as SharesPayload;
}
