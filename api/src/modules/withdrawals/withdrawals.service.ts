import type { Kysely, Transaction } from "kysely";
import type { Logger } from "pino";
import { type Address, type Chain, encodeFunctionData, formatUnits, getAddress, type Hex, keccak256, parseTransaction, type PublicClient, type Transport } from "viem";
import { artCertificateAbi } from "../../../../contracts/abi/ArtCertificate.ts";
import { artSharesAbi } from "../../../../contracts/abi/ArtShares.ts";
import type { CustodyWallet } from "../../chain/custody.ts";
import { isRevertWith } from "../../chain/errors.ts";
import { UNITS_PER_CENT } from "../../chain/exchange.ts";
import { relayForwarded, trustedForwarderOf } from "../../chain/forwarder.ts";
import { authorizationNonce, paymentTokenAbi, signTransferAuthorization } from "../../chain/payment-token.ts";
import { type ChainOperationKind, ChainOperationFailure, type ChainOperations, type KeyedFacts, type SendContext } from "../../chain/operations.ts";
import type { Relayer } from "../../chain/relayer.ts";
import type { ChainOperation, Database, Db } from "../../db/database.ts";
import { lockNamed } from "../../db/locks.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import type { Actor } from "../../lib/actor.ts";
import { ApiError } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { centsToUsd, usdToCents } from "../../lib/money.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { StateFact } from "../artworks/artwork-moves.ts";
import type { OwnershipService } from "../artworks/ownership.ts";
import type { UsersService } from "../users/users.service.ts";
import * as repo from "./withdrawals.repository.ts";
import type { WithdrawalCreate } from "./withdrawals.schemas.ts";
import type { Withdrawal } from "./withdrawals.tables.ts";

/** The chain operation that moves a withdrawn certificate, once per withdrawal. */
export const WITHDRAW_OPERATION = "withdrawal";
/** The chain operation that moves withdrawn shares (a transaction the custodial wallet signs), once per withdrawal. */
export const WITHDRAW_SHARES_OPERATION = "withdrawal_shares";
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

/** What the transfer needs: the certificate, the custodial wallet that signs for it (its custody index) and the linked wallet. */
interface WithdrawPayload {
  withdrawal_id: string;
  token_id: string;
  from: Address;
  to: Address;
  custody_index: number;
}

interface TransferFacts {
  /** Null when the transfer's hash was lost and the chain's state alone says it happened. */
  txHash: string | null;
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
  chain: { id: number; certificate: Address | null; shares: Address | null; paymentToken: Address | null };
}

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

/** A retried send finds the certificate on the linked wallet already (the first send's hash was lost): done. */
class AlreadyWithdrawn extends Error {
  override name = "AlreadyWithdrawn";
}

/**
 * Withdrawals (docs/wallets.md#taking-your-assets-to-your-own-wallet): a custodial user's
 * certificate leaves the wallet the platform holds for a wallet the user linked. The move `withdraw`
 * is decided under the artwork's lock (OwnershipService.decide: not while anything hangs off it; a
 * removed artwork's certificate too), and the withdrawal and its chain operation recorded in that transaction. The
 * operation has the custodial key sign `safeTransferFrom(custodial, linked, tokenId)` as an ERC-2771
 * request that the relayer submits through ArtForwarder (ArtCertificate trusts it: the custodial
 * wallet needs no ETH), as the approvals of custodial sales are. The withdrawal is `completed` when
 * the indexer shows the transfer; `asset.withdrawn` goes to the user. Shares and the payment token
 * follow their own paths (createShares, createPaymentToken): ArtShares trusts no forwarder, the
 * token has EIP-3009.
 */
export class WithdrawalsService {
  constructor(private readonly deps: WithdrawalsDeps) {}

  async create(actor: Actor, input: WithdrawalCreate, transact: Transact = transactOn(this.deps.db)) {
    if (input.asset === "payment_token") return this.createPaymentToken(actor, input, transact);
    if (input.asset === "shares") return this.createShares(actor, input, transact);
    const { ownership, operations } = this.deps;
    const misplaced = input.amount !== undefined ? [{ field: "amount", code: "not_allowed", message: "only a payment_token withdrawal has an amount" }] : [];
    if (input.artwork_id === undefined) misplaced.push({ field: "artwork_id", code: "required", message: "a certificate withdrawal names its artwork" });
    if (input.quantity !== undefined && input.quantity !== 1) misplaced.push({ field: "quantity", code: "invalid", message: "a certificate withdrawal moves 1" });
    if (misplaced.length > 0) throw ApiError.validation(misplaced);
    const to = await this.linkedTarget(actor.userId, input.to);
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
      return toWithdrawal(withdrawal);
    });
  }

  /**
   * The payment token (the proceeds of sales paid on-chain) from the custodial wallet to a linked
   * one: at most the wallet's balance less what is being withdrawn, counted under the user's lock
   * (what is pending read before the balance, so that a withdrawal mined meanwhile is counted twice,
   * never missed). One transfer per withdrawal: its EIP-3009 nonce is the withdrawal's.
   */
  private async createPaymentToken(actor: Actor, input: WithdrawalCreate, transact: Transact) {
    const { users, operations, publicClient, chain } = this.deps;
    const misplaced = [
      ...(input.artwork_id !== undefined ? [{ field: "artwork_id", code: "not_allowed", message: "a payment_token withdrawal names no artwork" }] : []),
      ...(input.quantity !== undefined ? [{ field: "quantity", code: "not_allowed", message: "a payment_token withdrawal has an amount, not a quantity" }] : []),
      ...(input.amount === undefined || input.amount <= 0 ? [{ field: "amount", code: "required", message: "a payment_token withdrawal needs an amount above 0" }] : []),
    ];
    if (misplaced.length > 0) throw ApiError.validation(misplaced);
    const token = chain.paymentToken;
    if (!token) throw new ApiError(503, "service_unavailable", "The payment token is not configured (PAYMENT_TOKEN_ADDRESS)");
    const to = await this.linkedTarget(actor.userId, input.to);
    const user = await users.get(actor.userId);
    if (user.wallet_kind !== "custodial" || user.custody_index === null) {
      throw ApiError.conflict("invalid_state", `Your wallet ${user.wallet_address.toLowerCase()} is your own: what it holds is yours to move already`);
    }
    const from = user.wallet_address.toLowerCase();
    const units = usdToCents(input.amount!) * UNITS_PER_CENT;
    return transact(async (trx) => {
      await lockNamed(trx, `withdraw_payment_token:${user.id}`);
      const pending = await repo.pendingPaymentTokenOf(trx, user.id);
      const balance = await publicClient.readContract({ address: token, abi: paymentTokenAbi, functionName: "balanceOf", args: [getAddress(from)] });
      const available = balance - pending;
      if (units > available) {
        throw ApiError.refused("insufficient_balance", `Your custodial wallet has ${formatUnits(available > 0n ? available : 0n, 6)} of the payment token to withdraw (its balance ${formatUnits(balance, 6)}, less ${formatUnits(pending, 6)} being withdrawn)`);
      }
      const withdrawal = await repo.insert(trx, { id: newId("withdrawal"), user_id: user.id, artwork_id: null, asset: "payment_token", token_id: null, amount_units: units, quantity: 1, from_wallet: from, to_wallet: to });
      const payload: TokenPayload = { withdrawal_id: withdrawal.id, from: getAddress(from), to: getAddress(to), amount_units: units.toString(), custody_index: user.custody_index! };
      await operations.request(trx, { key: withdrawKey(withdrawal.id), kind: WITHDRAW_PAYMENT_TOKEN_OPERATION, payload: { ...payload } });
      return toWithdrawal(withdrawal);
    });
  }

  /**
   * Shares of an artwork (ERC-1155, the certificate's token id) from the custodial wallet to a linked
   * one: at most what the wallet holds less what is being withdrawn, counted under the user's lock for
   * that class (pending read before the balance, as for the payment token). Shares carry no owner's
   * rights over the artwork, so nothing of the artwork is locked.
   */
  private async createShares(actor: Actor, input: WithdrawalCreate, transact: Transact) {
    const { artworks, users, operations, publicClient, chain } = this.deps;
    const misplaced = [
      ...(input.amount !== undefined ? [{ field: "amount", code: "not_allowed", message: "only a payment_token withdrawal has an amount" }] : []),
      ...(input.artwork_id === undefined ? [{ field: "artwork_id", code: "required", message: "a shares withdrawal names the artwork whose shares" }] : []),
      ...(input.quantity === undefined ? [{ field: "quantity", code: "required", message: "a shares withdrawal says how many shares" }] : []),
    ];
    if (misplaced.length > 0) throw ApiError.validation(misplaced);
    const shares = chain.shares;
    if (!shares) throw new ApiError(503, "service_unavailable", "The shares contract is not configured (ART_SHARES_ADDRESS)");
    const to = await this.linkedTarget(actor.userId, input.to);
    const artwork = await artworks.findAny(input.artwork_id!);
    if (!artwork || artwork.deleted_at) throw ApiError.validation([{ field: "artwork_id", code: "not_found", message: "no such artwork" }]);
    if (artwork.token_id === null) throw ApiError.conflict("invalid_state", `The artwork is not certified on-chain (status ${artwork.status}): it has no shares`);
    const user = await users.get(actor.userId);
    if (user.wallet_kind !== "custodial" || user.custody_index === null) {
      throw ApiError.conflict("invalid_state", `Your wallet ${user.wallet_address.toLowerCase()} is your own: what it holds is yours to move already`);
    }
    const from = user.wallet_address.toLowerCase();
    const tokenId = artwork.token_id;
    const quantity = BigInt(input.quantity!);
    return transact(async (trx) => {
      await lockNamed(trx, `withdraw_shares:${user.id}:${tokenId}`);
      const pending = await repo.pendingSharesOf(trx, user.id, tokenId);
      const balance = await publicClient.readContract({ address: shares, abi: artSharesAbi, functionName: "balanceOf", args: [getAddress(from), tokenId] });
      const available = balance - pending;
      if (quantity > available) {
        throw ApiError.refused("insufficient_balance", `Your custodial wallet has ${available > 0n ? available : 0n} shares of this artwork to withdraw (it holds ${balance}, less ${pending} being withdrawn)`);
      }
      const withdrawal = await repo.insert(trx, { id: newId("withdrawal"), user_id: user.id, artwork_id: artwork.id, asset: "shares", token_id: tokenId, quantity: input.quantity!, from_wallet: from, to_wallet: to });
      const payload: SharesPayload = { withdrawal_id: withdrawal.id, token_id: tokenId.toString(), from: getAddress(from), to: getAddress(to), quantity: input.quantity!, custody_index: user.custody_index! };
      await operations.request(trx, { key: withdrawKey(withdrawal.id), kind: WITHDRAW_SHARES_OPERATION, payload: { ...payload } });
      return toWithdrawal(withdrawal);
    });
  }

  /** `to` when it is one of the user's linked wallets (lower-case); 400 otherwise. */
  private async linkedTarget(userId: string, input: string): Promise<string> {
    const to = input.toLowerCase();
    if (!(await this.deps.users.linkedWallets(userId)).some((w) => w.address === to)) {
      throw ApiError.validation([{ field: "to", code: "not_linked", message: "must be one of your linked wallets (POST /v1/users/me/wallets)" }]);
    }
    return to;
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

  /** This module's state of an artwork: `withdrawing` while its certificate is on its way out. */
  async statesOf(db: Db, artworkId: string): Promise<StateFact[]> {
    const pending = await repo.pendingCertificateOf(db, artworkId);
    return pending ? [{ state: "withdrawing", detail: `its certificate is being withdrawn to ${pending.to_wallet} (${pending.id})` }] : [];
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
    onConfirmed: (trx, confirmed) => this.completed(trx, confirmed),
    onFailed: (trx, op, reason) => this.failed(trx, op, reason),
  };

  /**
   * The shares' transfer (a chain operation): `safeTransferFrom(custodial, linked, id, quantity)`
   * signed by the custodial wallet itself, once (WithdrawalsService.signShares), and sent as it is
   * on every attempt; done when the indexer shows it.
   */
  readonly sharesKind: ChainOperationKind<TransferFacts> = {
    kind: WITHDRAW_SHARES_OPERATION,
    abi: artSharesAbi,
    // An attempt that waits for the wallet's previous withdrawal counts as one: room for many.
    maxAttempts: 16,
    retryBaseMs: 1_000,
    send: (op, ctx) => this.sendShares(op, ctx),
    readIndexed: async (fromBlock, toBlock) => keyed(await repo.indexedShareTransfers(this.deps.db, this.deps.viewsSchema, { blocks: [fromBlock, toBlock] })),
    lookupIndexed: async (ops) => keyed(await repo.indexedShareTransfers(this.deps.db, this.deps.viewsSchema, { ids: ops.map((op) => payloadOf(op).withdrawal_id) })),
    readFromChain: async () => [],
    onConfirmed: (trx, confirmed) => this.completed(trx, confirmed),
    onFailed: (trx, op, reason) => this.failed(trx, op, reason),
  };

  /** The payment token's transfer (EIP-3009, a chain operation): done when its authorization is used on-chain. */
  readonly paymentTokenKind: ChainOperationKind<TransferFacts> = {
    kind: WITHDRAW_PAYMENT_TOKEN_OPERATION,
    abi: paymentTokenAbi,
    maxAttempts: 8,
    retryBaseMs: 2_000,
    // The indexer does not follow the payment token: its transaction mined is the last fact.
    confirmedBySend: true,
    send: (op, ctx) => this.sendPaymentToken(op, ctx),
    // Sent before (its hash lost): the authorization is used; the chain's state confirms it.
    settled: (err) => isRevertWith(err, "MockStablecoinAuthorizationUsed") || /authorization is used/i.test(String(err)),
    readIndexed: async () => [],
    lookupIndexed: (ops) => this.authorizationsUsed(ops),
    readFromChain: (ops) => this.authorizationsUsed(ops),
    onConfirmed: (trx, confirmed) => this.completed(trx, confirmed),
    onFailed: (trx, op, reason) => this.failed(trx, op, reason),
  };

  private async completed(trx: Transaction<Database>, confirmed: { op: ChainOperation; facts: TransferFacts }[]): Promise<void> {
    for (const { op, facts } of confirmed) {
      const w = await repo.settle(trx, payloadOf(op).withdrawal_id, { status: "completed", tx_hash: facts.txHash });
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

  private async failed(trx: Transaction<Database>, op: ChainOperation, reason: string): Promise<void> {
    await repo.settle(trx, payloadOf(op).withdrawal_id, { status: "failed", failure_reason: reason });
  }

  private async sendPaymentToken(op: ChainOperation, ctx: SendContext): Promise<void> {
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
      onSubmitted: async ({ hash }) => {
        await ctx.recordSent([op.key], hash);
        await repo.recordSent(this.deps.db, p.withdrawal_id, hash);
      },
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
      const txHash = op.tx_hash ?? (await repo.find(this.deps.db, p.withdrawal_id))?.tx_hash ?? null;
      if (used) out.push({ key: op.key, facts: { txHash } });
    }
    return out;
  }

  /**
   * ArtShares trusts no forwarder, so the custodial wallet sends the transfer itself: signed once,
   * with the wallet's next nonce, and kept (signed_tx) before it is sent; every attempt sends that
   * same transaction, so the shares move at most once whatever is retried. The wallet is first given
   * the ETH that transaction's gas can cost (by the relayer; a second top-up only leaves change).
   * One signed, unsettled transaction per wallet at a time: another withdrawal of the wallet waits
   * until it is settled, so that a nonce never waits behind one that may not be sent.
   */
  private async sendShares(op: ChainOperation, ctx: SendContext): Promise<void> {
    const { db, publicClient, relayer } = this.deps;
    const p = op.payload as unknown as SharesPayload;
    const w = await repo.find(db, p.withdrawal_id);
    if (!w || w.status !== "pending") return;
    const signed = w.signed_tx ? { raw: w.signed_tx as Hex, hash: w.tx_hash as Hex, nonce: w.sender_nonce! } : await this.signShares(p);
    const mined = await publicClient.getTransactionReceipt({ hash: signed.hash }).catch(() => null);
    if (!mined) {
      if ((await publicClient.getTransactionCount({ address: p.from, blockTag: "latest" })) > signed.nonce) {
        // The nonce is used and not by this transaction: nothing of this withdrawal can be sent any more.
        throw new ChainOperationFailure("permanent", `the custodial wallet's nonce ${signed.nonce} was used by another transaction`);
      }
      const tx = parseTransaction(signed.raw);
      const gasCost = SHARE_TRANSFER_GAS * (tx.maxFeePerGas ?? tx.gasPrice ?? 0n);
      const balance = await publicClient.getBalance({ address: p.from });
      if (balance < gasCost) await relayer.transferValue({ to: p.from, value: gasCost - balance, label: `${op.key} gas` });
      try {
        await publicClient.sendRawTransaction({ serializedTransaction: signed.raw });
      } catch (err) {
        // Sent before (the node has it, or mined it meanwhile): the receipt below tells.
        if (!/already known|nonce too low|known transaction/i.test(String(err))) throw err;
      }
    }
    await ctx.recordSent([op.key], signed.hash);
    await relayer.waitForReceipt(signed.hash, { abi: artSharesAbi, label: op.key });
  }

  /** Signs a shares withdrawal's transfer with its wallet's next nonce and keeps it, under the wallet's lock; waits while another of the wallet's is unsettled. */
  private async signShares(p: SharesPayload): Promise<{ raw: Hex; hash: Hex; nonce: number }> {
    const { db, publicClient, custody, chain } = this.deps;
    const shares = chain.shares;
    if (!shares) throw new ChainOperationFailure("transient", "ART_SHARES_ADDRESS is not configured");
    const from = p.from.toLowerCase();
    return db.transaction().execute(async (trx) => {
      await lockNamed(trx, `custody_sender:${from}`);
      // Signed meanwhile by another attempt of this withdrawal (a lease that ran out): that transaction, never a second.
      const mine = await repo.find(trx, p.withdrawal_id);
      if (mine?.signed_tx) return { raw: mine.signed_tx as Hex, hash: mine.tx_hash as Hex, nonce: mine.sender_nonce! };
      const other = await repo.signingOf(trx, from, p.withdrawal_id);
      if (other) throw new ChainOperationFailure("transient", `the wallet's withdrawal ${other.id} is being sent: this one follows it`);
      const [nonce, fees] = await Promise.all([publicClient.getTransactionCount({ address: p.from, blockTag: "pending" }), publicClient.estimateFeesPerGas({ type: "eip1559" })]);
      const raw = await custody.accountAt(p.custody_index).signTransaction({
        chainId: chain.id,
        type: "eip1559",
        to: shares,
        data: encodeFunctionData({ abi: artSharesAbi, functionName: "safeTransferFrom", args: [p.from, p.to, BigInt(p.token_id), BigInt(p.quantity), "0x"] }),
        value: 0n,
        gas: SHARE_TRANSFER_GAS,
        nonce,
        // Room for the base fee to double before it is mined: the transaction is never signed again.
        maxFeePerGas: fees.maxFeePerGas * 2n,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      });
      const hash = keccak256(raw);
      await repo.recordSigned(trx, p.withdrawal_id, { sender_nonce: nonce, signed_tx: raw, tx_hash: hash });
      return { raw, hash, nonce };
    });
  }

  private async send(op: ChainOperation, ctx: SendContext): Promise<void> {
    const { publicClient, relayer, custody, chain } = this.deps;
    const p = payloadOf(op);
    const certificate = chain.certificate;
    if (!certificate) throw new ChainOperationFailure("transient", "ART_CERTIFICATE_ADDRESS is not configured");
    const tokenId = BigInt(p.token_id);
    const owner = await publicClient.readContract({ address: certificate, abi: artCertificateAbi, functionName: "ownerOf", args: [tokenId] });
    if (owner.toLowerCase() === p.to.toLowerCase()) throw new AlreadyWithdrawn(`token ${tokenId} is at ${p.to} already`);
    await relayForwarded({ relayer, publicClient, forwarder: await trustedForwarderOf(publicClient, certificate), chainId: chain.id }, custody.accountAt(p.custody_index), {
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
    quantity: w.asset === "payment_token" ? 0 : w.quantity,
    amount: w.amount_units === null ? null : centsToUsd(w.amount_units / UNITS_PER_CENT),
    to: getAddress(w.to_wallet),
    tx_hash: w.tx_hash,
    failure_reason: w.failure_reason,
    created_at: iso(w.created_at),
    completed_at: isoOrNull(w.completed_at),
  };
}
