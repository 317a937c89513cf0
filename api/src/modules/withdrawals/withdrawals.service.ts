import type { Kysely } from "kysely";
import type { Logger } from "pino";
import { type Address, type Chain, getAddress, type PublicClient, type Transport } from "viem";
import { artCertificateAbi } from "../../chain/abi/ArtCertificate.ts";
import type { CustodyWallet } from "../../chain/custody.ts";
import { relayForwarded } from "../../chain/forwarder.ts";
import { type ChainOperationKind, ChainOperationFailure, type ChainOperations, type KeyedFacts, type SendContext } from "../../chain/operations.ts";
import type { Relayer } from "../../chain/relayer.ts";
import type { ChainOperation, Database, Db } from "../../db/database.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import type { Actor } from "../../lib/actor.ts";
import { ApiError } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { ArtworkLock, OwnershipService } from "../artworks/ownership.ts";
import type { UsersService } from "../users/users.service.ts";
import * as repo from "./withdrawals.repository.ts";
import type { Withdrawal } from "./withdrawals.tables.ts";

/** The chain operation that moves a withdrawn asset, once per withdrawal. */
export const WITHDRAW_OPERATION = "withdrawal";

/** What the transfer needs: the certificate, the custodial wallet that signs for it (its custody index) and the linked wallet. */
interface WithdrawPayload {
  withdrawal_id: string;
  token_id: string;
  from: Address;
  to: Address;
  custody_index: number;
}

interface TransferFacts {
  txHash: string;
}

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
  chain: { id: number; certificate: Address | null };
}

/** A retried send finds the certificate on the linked wallet already (the first send's hash was lost): done. */
class AlreadyWithdrawn extends Error {
  override name = "AlreadyWithdrawn";
}

/**
 * Withdrawals (docs/wallets.md#taking-your-assets-to-your-own-wallet): a custodial user's
 * certificate leaves the wallet the platform holds for a wallet the user linked. The request locks the
 * artwork (OwnershipService.lockFor, move `withdraw`: not while listed, disputed, fractionalized or
 * being withdrawn), records the withdrawal and requests its chain operation in one transaction. The
 * operation has the custodial key sign `safeTransferFrom(custodial, linked, tokenId)` as an ERC-2771
 * request that the relayer submits through ArtForwarder (ArtCertificate trusts it: the custodial
 * wallet needs no ETH), as the approvals of custodial sales are. The withdrawal is `completed` when
 * the indexer shows the transfer; `asset.withdrawn` goes to the user.
 */
export class WithdrawalsService {
  private forwarder: Promise<Address> | null = null;

  constructor(private readonly deps: WithdrawalsDeps) {}

  async create(actor: Actor, input: { artwork_id: string; asset: "certificate"; to: string }, transact: Transact = transactOn(this.deps.db)) {
    const { artworks, ownership, users, operations } = this.deps;
    const to = input.to.toLowerCase();
    const linked = await users.linkedWallets(actor.userId);
    if (!linked.some((w) => w.address === to)) {
      throw ApiError.validation([{ field: "to", code: "not_linked", message: "must be one of your linked wallets (POST /v1/users/me/wallets)" }]);
    }
    const artwork = await artworks.findAny(input.artwork_id);
    if (!artwork || artwork.deleted_at) throw ApiError.validation([{ field: "artwork_id", code: "not_found", message: "no such artwork" }]);
    if (artwork.status !== "certified" || artwork.token_id === null) {
      throw ApiError.conflict("invalid_state", `The artwork is not certified on-chain (status ${artwork.status}): only a certificate can be withdrawn`);
    }
    if (!this.deps.chain.certificate) throw new ApiError(503, "service_unavailable", "The certificate contract is not configured (ART_CERTIFICATE_ADDRESS)");
    // Counted before the holder is read: a withdrawal asked for since (and perhaps done already, so
    // that the holder read was stale) shows as another count under the lock.
    const seen = await repo.countOf(this.deps.db, artwork.id);
    const holder = await ownership.holderOf(artwork);
    if (!holder.user || holder.user.id !== actor.userId) {
      throw ApiError.forbidden(`Only the holder of the artwork's certificate (token ${holder.tokenId}) may withdraw it; your wallets do not hold it`);
    }
    const user = holder.user;
    if (user.wallet_kind !== "custodial" || user.custody_index === null || user.wallet_address.toLowerCase() !== holder.wallet) {
      throw ApiError.conflict("invalid_state", `The certificate is in your own wallet ${holder.wallet} already: only what your custodial wallet holds is withdrawn`);
    }
    return transact(async (trx) => {
      await ownership.lockFor(trx, artwork.id, "withdraw");
      if ((await repo.countOf(trx, artwork.id)) !== seen) throw ApiError.refused("withdrawing", "The certificate cannot be withdrawn: another withdrawal of it was asked for meanwhile");
      const withdrawal = await repo.insert(trx, {
        id: newId("withdrawal"),
        user_id: user.id,
        artwork_id: artwork.id,
        asset: "certificate",
        token_id: artwork.token_id!,
        quantity: 1,
        from_wallet: holder.wallet!,
        to_wallet: to,
      });
      const payload: WithdrawPayload = { withdrawal_id: withdrawal.id, token_id: withdrawal.token_id.toString(), from: withdrawal.from_wallet as Address, to: to as Address, custody_index: user.custody_index! };
      await operations.request(trx, { key: withdrawKey(withdrawal.id), kind: WITHDRAW_OPERATION, payload: { ...payload } });
      return toWithdrawal(withdrawal);
    });
  }

  async list(userId: string, page: Page) {
    const { rows, total } = await repo.listOf(this.deps.db, userId, page);
    return paginated(rows.map(toWithdrawal), page, total);
  }

  /** A withdrawal for its user or an admin; anyone else 404 (it is private). */
  async get(actor: Actor, id: string) {
    const w = isId("withdrawal", id) ? await repo.find(this.deps.db, id) : undefined;
    if (!w || (actor.role !== "admin" && w.user_id !== actor.userId)) throw ApiError.notFound("Withdrawal");
    return toWithdrawal(w);
  }

  /** What of withdrawals hangs off an artwork: a certificate on its way out. */
  async locksOf(db: Db, artworkId: string): Promise<ArtworkLock[]> {
    const pending = await repo.pendingCertificateOf(db, artworkId);
    return pending ? [{ reason: "withdrawing", detail: `its certificate is being withdrawn to ${pending.to_wallet} (${pending.id})` }] : [];
  }

  // ---- the transfer (a chain operation) ----

  readonly withdrawalKind: ChainOperationKind<TransferFacts> = {
    kind: WITHDRAW_OPERATION,
    abi: artCertificateAbi,
    maxAttempts: 8,
    retryBaseMs: 2_000,
    send: (op, ctx) => this.send(op, ctx),
    settled: (err) => err instanceof AlreadyWithdrawn,
    readIndexed: async (fromBlock, toBlock) => keyed(await repo.indexedTransfers(this.deps.db, this.deps.viewsSchema, { blocks: [fromBlock, toBlock] })),
    lookupIndexed: async (ops) => keyed(await repo.indexedTransfers(this.deps.db, this.deps.viewsSchema, { ids: ops.map((op) => payloadOf(op).withdrawal_id) })),
    // `completed` means the indexer has the transfer: while it lags, the withdrawal stays pending.
    readFromChain: async () => [],
    onConfirmed: async (trx, confirmed) => {
      for (const { op, facts } of confirmed) {
        const w = await repo.settle(trx, payloadOf(op).withdrawal_id, { status: "completed", tx_hash: facts.txHash });
        if (!w) continue;
        await recordEvent(
          trx,
          "asset.withdrawn",
          { withdrawal_id: w.id, artwork_id: w.artwork_id, asset: w.asset, quantity: w.quantity, from: w.from_wallet, to: w.to_wallet, tx_hash: w.tx_hash, completed_at: iso(w.completed_at!) },
          [w.user_id],
        );
      }
    },
    onFailed: async (trx, op, reason) => {
      await repo.settle(trx, payloadOf(op).withdrawal_id, { status: "failed", failure_reason: reason });
    },
  };

  private async send(op: ChainOperation, ctx: SendContext): Promise<void> {
    const { publicClient, relayer, custody, chain } = this.deps;
    const p = payloadOf(op);
    const certificate = chain.certificate;
    if (!certificate) throw new ChainOperationFailure("transient", "ART_CERTIFICATE_ADDRESS is not configured");
    const tokenId = BigInt(p.token_id);
    const owner = await publicClient.readContract({ address: certificate, abi: artCertificateAbi, functionName: "ownerOf", args: [tokenId] });
    if (owner.toLowerCase() === p.to.toLowerCase()) throw new AlreadyWithdrawn(`token ${tokenId} is at ${p.to} already`);
    await relayForwarded({ relayer, publicClient, forwarder: await this.forwarderAddress(certificate), chainId: chain.id }, custody.accountAt(p.custody_index), {
      address: certificate,
      abi: artCertificateAbi,
      functionName: "safeTransferFrom",
      args: [p.from, p.to, tokenId],
      label: op.key,
      onSubmitted: async ({ hash }) => {
        await ctx.recordSent([op.key], hash);
        await repo.recordSent(this.deps.db, p.withdrawal_id, hash);
      },
    });
  }

  private forwarderAddress(certificate: Address): Promise<Address> {
    this.forwarder ??= this.deps.publicClient.readContract({ address: certificate, abi: artCertificateAbi, functionName: "trustedForwarder" }).catch((err: unknown) => {
      this.forwarder = null;
      throw err;
    });
    return this.forwarder;
  }
}

function withdrawKey(id: string): string {
  return `withdraw:${id}`;
}

function payloadOf(op: ChainOperation): WithdrawPayload {
  return op.payload as unknown as WithdrawPayload;
}

function keyed(rows: repo.IndexedWithdrawal[]): KeyedFacts<TransferFacts>[] {
  return rows.map((r) => ({ key: withdrawKey(r.withdrawal_id), facts: { txHash: r.tx_hash } }));
}

function toWithdrawal(w: Withdrawal) {
  return {
    id: w.id,
    status: w.status,
    asset: w.asset,
    artwork_id: w.artwork_id,
    quantity: w.quantity,
    to: getAddress(w.to_wallet),
    tx_hash: w.tx_hash,
    failure_reason: w.failure_reason,
    created_at: iso(w.created_at),
    completed_at: isoOrNull(w.completed_at),
  };
}
