import type { Address } from "viem";
import { artCertificateAbi } from "../../../../contracts/abi/ArtCertificate.ts";
import { relayForwarded, trustedForwarderOf } from "../../chain/forwarder.ts";
import { type ChainOperationKind, ChainOperationFailure, type SendContext } from "../../chain/operations.ts";
import type { ChainOperation } from "../../db/database.ts";
import type { Transact } from "../../db/transact.ts";
import type { Actor } from "../../lib/actor.ts";
import { ApiError } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import * as repo from "./withdrawals.repository.ts";
import type { WithdrawalCreate } from "./withdrawals.schemas.ts";
import { keyed, linkedTarget, pendingTransactions, toWithdrawal, transferKind, type TransferFacts, type WithdrawalsDeps, withdrawKey } from "./withdrawal-transfers.ts";

/** The chain operation that moves a withdrawn certificate, once per withdrawal. */
export const WITHDRAW_OPERATION = "withdrawal";

/** What the transfer needs: the certificate, the custodial wallet that signs for it (its custody index) and the linked wallet. */
interface WithdrawPayload {
  withdrawal_id: string;
  token_id: string;
  from: Address;
  to: Address;
  custody_index: number;
}

/** A retried send finds the certificate on the linked wallet already (the first send's hash was lost): done. */
class AlreadyWithdrawn extends Error {
  override name = "AlreadyWithdrawn";
}

/**
 * A certificate's withdrawal. The move `withdraw` is decided under the artwork's lock
 * (OwnershipService.decide: not while anything hangs off it; a removed artwork's certificate too),
 * and the withdrawal and its chain operation recorded in that transaction. The operation has the
 * custodial key sign `safeTransferFrom(custodial, linked, tokenId)` as an ERC-2771 request that the
 * relayer submits through ArtForwarder (ArtCertificate trusts it: the custodial wallet needs no
 * ETH), as the approvals of custodial sales are. Completed when the indexer shows the transfer.
 */
export class CertificateWithdrawals {
  constructor(private readonly deps: WithdrawalsDeps) {}

  async create(actor: Actor, input: WithdrawalCreate, transact: Transact) {
    const { ownership, operations } = this.deps;
    const misplaced = input.amount !== undefined ? [{ field: "amount", code: "not_allowed", message: "only a payment_token withdrawal has an amount" }] : [];
    if (input.artwork_id === undefined) misplaced.push({ field: "artwork_id", code: "required", message: "a certificate withdrawal names its artwork" });
    if (input.quantity !== undefined && input.quantity !== 1) misplaced.push({ field: "quantity", code: "invalid", message: "a certificate withdrawal moves 1" });
    if (misplaced.length > 0) throw ApiError.validation(misplaced);
    const to = await linkedTarget(this.deps.users, actor.userId, input.to);
    if (!this.deps.chain.certificate) throw new ApiError(503, "service_unavailable", "The certificate contract is not configured (ART_CERTIFICATE_ADDRESS)");
    const noSuchArtwork = ApiError.validation([{ field: "artwork_id", code: "not_found", message: "no such artwork" }]);
    if (!isId("artwork", input.artwork_id!)) throw noSuchArtwork;
    // The head before the holder is read (under the lock below): the transfer this withdrawal asks for is mined after it.
    const afterBlock = await this.deps.publicClient.getBlockNumber({ cacheTime: 0 });
    return transact(async (trx) => {
      // The move `withdraw`, under the artwork's lock: the holder is read there, after every pending
      // state (another withdrawal of it still under way refuses this one; one done shows as the new holder).
      const decided = await ownership.decide(trx, input.artwork_id!, "withdraw", actor);
      if (!decided) throw noSuchArtwork;
      const { artwork, holder } = decided;
      const user = holder.user!;
      const withdrawal = await repo.insert(trx, {
        id: newId("withdrawal"),
        user_id: user.id,
        artwork_id: artwork.id,
        asset: "certificate",
        token_id: artwork.token_id!,
        quantity: 1,
        from_wallet: holder.wallet,
        to_wallet: to,
        after_block: afterBlock,
      });
      const payload: WithdrawPayload = { withdrawal_id: withdrawal.id, token_id: withdrawal.token_id!.toString(), from: withdrawal.from_wallet as Address, to: to as Address, custody_index: user.custody_index! };
      await operations.request(trx, { key: withdrawKey(withdrawal.id), kind: WITHDRAW_OPERATION, payload: { ...payload } });
      return toWithdrawal(withdrawal, null, null);
    });
  }

  readonly kind: ChainOperationKind<TransferFacts> = transferKind({
    kind: WITHDRAW_OPERATION,
    abi: artCertificateAbi,
    maxAttempts: 8,
    retryBaseMs: 2_000,
    send: (op, ctx) => this.send(op, ctx),
    settled: (err) => err instanceof AlreadyWithdrawn,
    readIndexed: async (fromBlock, toBlock) =>
      keyed(await repo.indexedTransfers(this.deps.db, this.deps.viewsSchema, { blocks: [fromBlock, toBlock] }, await pendingTransactions(this.deps, "certificate"))),
    lookupIndexed: async (ops) => {
      const ids = ops.map((op) => payloadOf(op).withdrawal_id);
      return keyed(await repo.indexedTransfers(this.deps.db, this.deps.viewsSchema, { ids }, await pendingTransactions(this.deps, "certificate", ids)));
    },
    // `completed` means the indexer has the transfer: while it lags, the withdrawal stays pending.
    readFromChain: async () => [],
  });

  private async send(op: ChainOperation, ctx: SendContext): Promise<void> {
    const { db, publicClient, relayer, custody, ownership, chain } = this.deps;
    const p = payloadOf(op);
    const certificate = chain.certificate;
    if (!certificate) throw new ChainOperationFailure("transient", "ART_CERTIFICATE_ADDRESS is not configured");
    const tokenId = BigInt(p.token_id);
    const withdrawal = await repo.find(db, p.withdrawal_id);
    if (!withdrawal) throw new ChainOperationFailure("permanent", `withdrawal ${p.withdrawal_id} does not exist`);
    const { wallet } = await ownership.walletHolding(withdrawal.artwork_id!, tokenId);
    if (wallet === p.to.toLowerCase()) throw new AlreadyWithdrawn(`token ${tokenId} is at ${p.to} already`);
    await relayForwarded({ relayer, publicClient, forwarder: await trustedForwarderOf(publicClient, certificate), chainId: chain.id }, custody.accountAt(p.custody_index), {
      address: certificate,
      abi: artCertificateAbi,
      functionName: "safeTransferFrom",
      args: [p.from, p.to, tokenId],
      label: op.key,
      onSubmitted: ({ hash }) => ctx.recordSent([op.key], hash),
    });
  }
}

function payloadOf(op: ChainOperation): WithdrawPayload {
  return op.payload as unknown as WithdrawPayload;
}
