import type { Kysely, Transaction } from "kysely";
import type { Logger } from "pino";
import { type Address, type Chain, encodeFunctionData, erc20Abi, formatUnits, getAddress, type Hex, hashTypedData, type PublicClient, type Transport, zeroAddress } from "viem";
import { artCertificateAbi } from "../../../../contracts/abi/ArtCertificate.ts";
import { artExchangeAbi } from "../../../../contracts/abi/ArtExchange.ts";
import { isRevertWith } from "../../chain/errors.ts";
import { type ExchangeOrder, exchangeDomain, ORDER_TYPES, UNITS_PER_CENT } from "../../chain/exchange.ts";
import { type ChainOperationKind, ChainOperationFailure, type ChainOperations, type KeyedFacts } from "../../chain/operations.ts";
import type { Relayer } from "../../chain/relayer.ts";
import type { Database, Db } from "../../db/database.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId } from "../../lib/ids.ts";
import { centsToUsd } from "../../lib/money.ts";
import { iso } from "../../lib/time.ts";
import { custodyIndexOf, type OwnershipService } from "../artworks/ownership.service.ts";
import type { UsersService } from "../users/users.service.ts";
import * as orders from "./exchange.repository.ts";
import * as listings from "./marketplace.repository.ts";
import { decideListingMove } from "./listing-moves.ts";
import type { ExchangeOrder as OrderRow } from "./marketplace.tables.ts";
import type { IndexedMarket } from "../../chain/indexer-views.ts";

/** The chain operation that has a custodial seller's wallet approve ArtExchange (once per wallet). */
export const EXCHANGE_APPROVAL_OPERATION = "marketplace_exchange_approval";
/** The chain operation that cancels an order on-chain (once per order). */
export const ORDER_CANCEL_OPERATION = "marketplace_order_cancel";

/** How long an order the steps hand out stays fillable, in the chain's time. */
const ORDER_TTL_S = 10n * 60n;
/** An open order is handed out again while it has at least this long left on the chain's clock (a wallet needs time to send two transactions). */
const ORDER_REUSE_MIN_S = 2n * 60n;
/**
 * How far behind our clock a block's timestamp may be when it is mined (a block's time and its
 * propagation). The chain's clock may be ahead of ours (a local node that mines more than a block a
 * second runs ahead, a second a block) or behind by a fixed offset, but it never runs slower: an
 * order signed to expire TTL after the chain's now cannot be filled once TTL and this margin have
 * passed on our clock.
 */
const CHAIN_CLOCK_MARGIN_MS = 60_000;
/** How long the steps wait for a custodial seller's first approval of the exchange before answering 503. */
const APPROVAL_WAIT_MS = 15_000;

export interface Step {
  id: "approve" | "fill";
  description: string;
  tx: { to: Address; data: Hex; value: "0" };
}

export interface ExchangeDeps {
  db: Kysely<Database>;
  logger: Logger;
  users: UsersService;
  operations: ChainOperations;
  views: IndexedMarket;
  publicClient: PublicClient<Transport, Chain>;
  /** Signs orders: its account holds ArtExchange's ORDER_SIGNER_ROLE (the platform's order key) and sends cancellations. */
  relayer: Relayer;
  chain: { id: number; certificate: Address | null; exchange: Address | null; paymentToken: Address | null };
  /** Decides the move `fill` (an order handed to a wallet) under the artwork's lock. */
  ownership: OwnershipService;
  /** Has a custodial wallet approve an operator through the forwarder (SalesService.approveForCustodial). */
  approveForCustodial(owner: Address, custodyIndex: number, operator: Address, onSubmitted: (hash: Hex) => Promise<void>): Promise<void>;
}

interface ApprovalPayload {
  owner: Address;
  custody_index: number;
}

interface CancelPayload {
  order_hash: string;
  order: Record<keyof ExchangeOrder, string | number>;
}

/**
 * Purchases paid on-chain by any wallet (docs/integrators/onchain-purchases.md). For an active
 * listing the platform's order key signs an EIP-712 order of ArtExchange (the listing's id, its
 * seller's wallet and token, its price in the payment token, the exchange's fee, an expiry; any
 * buyer), kept in `exchange_orders` and handed to every wallet that asks while it has time left; the
 * steps are the wallet's transactions (approve the payment token when the allowance is short, then
 * fill). A custodial seller's wallet approves the exchange once, as a chain operation requested when
 * it lists; a listing that closes otherwise (cancelled, sold by card, a card sale started) has its
 * open orders cancelled on-chain, each a chain operation. The fill itself becomes a sale in
 * SalesService.onchainFills, from what the indexer shows.
 */
export class ExchangeService {
  private readonly log: Logger;

  constructor(private readonly deps: ExchangeDeps) {
    this.log = deps.logger.child({ component: "marketplace-exchange" });
  }

  get configured(): boolean {
    const { certificate, exchange, paymentToken } = this.deps.chain;
    return Boolean(certificate && exchange && paymentToken);
  }

  /**
   * What `buyer` sends to buy the listing on-chain: the steps, and the order they fill. The move
   * `fill`, decided under the artwork's lock with the order's signing (docs/ownership-and-money.md#moves:
   * refused for an unknown listing (404), one not active, or one of the buyer's own account, by any
   * of its wallets (409)). Besides: no exchange on this chain (503), a seller's own wallet that has
   * not approved the exchange (409 reason `seller_not_approved`); a custodial seller's first approval
   * still on its way (503, Retry-After).
   */
  async steps(listingId: string, buyerInput: string) {
    const { db, publicClient } = this.deps;
    if (!isId("listing", listingId)) throw ApiError.notFound("Listing");
    const { exchange, paymentToken } = this.requireExchange();
    const buyer = getAddress(buyerInput);
    const seen = found(await listings.find(db, listingId), "Listing");
    // The order's expiry is the chain's: ArtExchange compares it with block.timestamp, whatever our clock says.
    const [feeBps, head] = await Promise.all([
      publicClient.readContract({ address: exchange, abi: artExchangeAbi, functionName: "feeBps" }),
      publicClient.getBlock({ blockTag: "latest" }),
      this.requireWholeCentSplits(exchange),
    ]);
    let order = await this.openOrder(seen.id, buyer, feeBps, head.timestamp);
    if (order === "approving") {
      // Listed before the exchange existed here: the custodial wallet's approval was requested now, and is waited for a while.
      const approved = () => this.isApproved(seen.seller_wallet);
      if (await this.deps.operations.waitFor(approvalKey(seen.seller_wallet), approved, APPROVAL_WAIT_MS)) order = await this.openOrder(seen.id, buyer, feeBps, head.timestamp);
      if (order === "approving") throw new ApiError(503, "service_unavailable", "The seller's wallet is approving the exchange contract on-chain; retry in a few seconds", { headers: { "Retry-After": "5" } });
    }
    const struct = structOf(order);
    const allowance = await publicClient.readContract({ address: paymentToken, abi: erc20Abi, functionName: "allowance", args: [buyer, exchange] });
    const steps: Step[] = [];
    if (allowance < struct.price) {
      steps.push({
        id: "approve",
        description: `Approve the exchange ${exchange} to take ${formatUnits(struct.price, 6)} of the payment token ${paymentToken} (your allowance is ${formatUnits(allowance, 6)})`,
        tx: { to: paymentToken, data: encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [exchange, struct.price] }), value: "0" },
      });
    }
    steps.push({
      id: "fill",
      description: `Fill the order: pay ${formatUnits(struct.price, 6)} and receive the certificate (token ${struct.tokenId})`,
      tx: { to: exchange, data: encodeFunctionData({ abi: artExchangeAbi, functionName: "fill", args: [struct, order.signature as Hex] }), value: "0" },
    });
    return {
      listing_id: seen.id,
      buyer,
      chain_id: this.deps.chain.id,
      order: {
        hash: order.order_hash,
        exchange,
        currency: paymentToken,
        price: struct.price.toString(),
        price_usd: centsToUsd(order.price_units / UNITS_PER_CENT),
        fee_bps: order.fee_bps,
        seller: getAddress(order.seller_wallet),
        token_id: struct.tokenId.toString(),
        signature: order.signature,
      },
      steps,
      expires_at: iso(order.expires_at),
    };
  }

  /**
   * The listing's open order at its price and the exchange's fee that has time left on the chain's
   * clock (`chainNow`, the latest block's timestamp), or a new one signed now to expire ORDER_TTL_S
   * after it; the move `fill` decided first, under the artwork's lock, so that an order is never
   * handed out after the listing closed (closing cancels the open orders under the same lock).
   * `approving`: the custodial seller's approval of the exchange was requested in this transaction.
   */
  private async openOrder(listingId: string, buyer: Address, feeBps: number, chainNow: bigint): Promise<OrderRow | "approving"> {
    const { db, relayer, chain } = this.deps;
    return db.transaction().execute(async (trx) => {
      const listing = found(await decideListingMove(this.deps.ownership, trx, listingId, "fill", null, buyer), "Listing");
      if (!(await this.isApproved(listing.seller_wallet))) {
        const seller = await this.deps.users.findByWallet(trx, listing.seller_wallet);
        const custodyIndex = custodyIndexOf(seller, listing.seller_wallet);
        if (custodyIndex === null) {
          throw ApiError.refused(
            "seller_not_approved",
            `The seller's wallet ${listing.seller_wallet} has not approved the exchange contract ${chain.exchange} on the certificate contract: the listing can be bought by card, or on-chain once the seller calls setApprovalForAll(${chain.exchange}, true)`,
          );
        }
        await this.prepareSeller(trx, listing.seller_wallet, custodyIndex);
        return "approving" as const;
      }
      const priceUnits = listing.price_cents * UNITS_PER_CENT;
      const reusable = await orders.reusableOrder(trx, listing.id, priceUnits, feeBps, dateOf(chainNow + ORDER_REUSE_MIN_S));
      if (reusable) return reusable;
      const typedAt = (expiry: bigint) => {
        const struct: ExchangeOrder = {
          listingId: listing.id,
          seller: getAddress(listing.seller_wallet),
          buyer: zeroAddress,
          tokenId: listing.token_id,
          currency: chain.paymentToken!,
          price: priceUnits,
          feeBps,
          expiry,
        };
        return { domain: exchangeDomain(chain.id, chain.exchange!), types: ORDER_TYPES, primaryType: "Order", message: { ...struct } } as const;
      };
      // The order has no nonce: one signed again within a second of an earlier one (cancelled, which a
      // declined card leaves) would be that order, so its expiry moves on a second until it is new.
      let expiry = chainNow + ORDER_TTL_S;
      while (await orders.find(trx, hashTypedData(typedAt(expiry)))) expiry += 1n;
      const typed = typedAt(expiry);
      return orders.insert(trx, {
        order_hash: hashTypedData(typed),
        listing_id: listing.id,
        seller_wallet: listing.seller_wallet,
        token_id: listing.token_id,
        price_units: priceUnits,
        currency: chain.paymentToken!.toLowerCase(),
        fee_bps: feeBps,
        expires_at: dateOf(expiry),
        fillable_until: new Date(Date.now() + Number(expiry - chainNow) * 1000 + CHAIN_CLOCK_MARGIN_MS),
        signature: await relayer.signTypedData(typed),
      });
    });
  }

  /**
   * The sales' ledger keeps cents: an exchange that splits in fractions of a cent (deployed before
   * ArtExchange rounded its royalty and fee to whole cents) would pay what the ledger cannot say, so
   * no order is handed out for it (503). Asked once per process.
   */
  private requireWholeCentSplits(exchange: Address): Promise<void> {
    this.wholeCents ??= this.deps.publicClient.readContract({ address: exchange, abi: artExchangeAbi, functionName: "unitsPerCent" }).then(
      (units) => units === UNITS_PER_CENT,
      () => false,
    );
    return this.wholeCents.then((ok) => {
      if (ok) return;
      this.wholeCents = null;
      throw new ApiError(503, "service_unavailable", `The exchange contract ${exchange} on this chain splits sales in fractions of a cent (it predates whole-cent splits): on-chain purchases are off until it is redeployed (locally: npm start -- --fresh)`);
    });
  }

  private wholeCents: Promise<boolean> | null = null;

  /** Whether the seller's wallet has approved the exchange on the certificate contract, read from the chain now. */
  private isApproved(sellerWallet: string): Promise<boolean> {
    const { publicClient, chain } = this.deps;
    return publicClient.readContract({ address: chain.certificate!, abi: artCertificateAbi, functionName: "isApprovedForAll", args: [getAddress(sellerWallet), chain.exchange!] });
  }

  // ---- the seller's approval of the exchange ----

  /**
   * A custodial seller's wallet approves the exchange when it lists (a chain operation, once per
   * wallet), so that wallets can fill its orders. A wallet of the seller's own approves itself.
   */
  async prepareSeller(trx: Transaction<Database>, wallet: string, custodyIndex: number | null): Promise<void> {
    if (!this.configured || custodyIndex === null) return;
    await this.deps.operations.request(trx, { key: approvalKey(wallet), kind: EXCHANGE_APPROVAL_OPERATION, payload: { owner: getAddress(wallet), custody_index: custodyIndex } });
  }

  readonly approvalKind: ChainOperationKind<{ owner: string }> = {
    kind: EXCHANGE_APPROVAL_OPERATION,
    abi: artCertificateAbi,
    maxAttempts: 8,
    retryBaseMs: 2_000,
    send: async (op, ctx) => {
      const p = op.payload as unknown as ApprovalPayload;
      const exchange = this.deps.chain.exchange;
      if (!exchange) throw new ChainOperationFailure("permanent", "ART_EXCHANGE_ADDRESS is not configured");
      await this.deps.approveForCustodial(p.owner, p.custody_index, exchange, (hash) => ctx.recordSent([op.key], hash));
    },
    readIndexed: async (fromBlock, toBlock) => this.approvals({ blocks: [fromBlock, toBlock] }),
    lookupIndexed: async (ops) => this.approvals({ owners: ops.map((op) => (op.payload as unknown as ApprovalPayload).owner) }),
    // An approval that was already there sends nothing: the chain's answer confirms it.
    readFromChain: async (ops) => {
      const out: KeyedFacts<{ owner: string }>[] = [];
      for (const op of ops) {
        const { owner } = op.payload as unknown as ApprovalPayload;
        const ok = await this.deps.publicClient.readContract({ address: this.deps.chain.certificate!, abi: artCertificateAbi, functionName: "isApprovedForAll", args: [owner, this.deps.chain.exchange!] });
        if (ok) out.push({ key: approvalKey(owner), facts: { owner: owner.toLowerCase() } });
      }
      return out;
    },
    onConfirmed: async () => {},
    onFailed: async (_trx, op, reason) => {
      this.log.error({ key: op.key, reason }, "a custodial wallet could not approve the exchange: its listings cannot be bought on-chain");
    },
  };

  private async approvals(where: { owners: readonly string[] } | { blocks: [bigint, bigint] }): Promise<KeyedFacts<{ owner: string }>[]> {
    const exchange = this.deps.chain.exchange;
    if (!exchange) return [];
    return (await this.deps.views.approvalsOf(exchange, where)).map((owner) => ({ key: approvalKey(owner), facts: { owner } }));
  }

  // ---- cancelling orders ----

  /**
   * The listing closed (cancelled, its token moved, a card sale started or completed): its orders a
   * wallet could still fill are cancelled on-chain, each a chain operation, in the caller's
   * transaction (under the listing's row lock). A fill mined before the cancellation is still a sale
   * (the chain's answer): SalesService.onchainFills closes a card sale it beat, and refunds it.
   */
  async cancelOpenOrders(trx: Transaction<Database>, listingId: string, exceptHash: string | null = null): Promise<void> {
    const open = await orders.fillableOf(trx, listingId, exceptHash);
    if (open.length === 0) return;
    // Closed here at once, so that no wallet is handed one again (the listing may be active again after a declined card).
    for (const o of open) await orders.close(trx, o.order_hash, "cancelled");
    await this.deps.operations.requestMany(
      trx,
      open.map((o) => ({ key: cancelKey(o.order_hash), kind: ORDER_CANCEL_OPERATION, payload: { order_hash: o.order_hash, order: serialize(structOf(o)) } satisfies CancelPayload })),
    );
  }

  /**
   * An order of the artwork's closed listing that a wallet can still fill, if any: closed here as
   * cancelled, its time not up, and its cancellation not yet confirmed on-chain (the artwork is
   * `order_fillable` meanwhile: docs/ownership-and-money.md#moves). The latest to stop being fillable.
   */
  async fillableAfterClosing(db: Db, artworkId: string): Promise<OrderRow | undefined> {
    const closed = await orders.cancelledFillableOfArtwork(db, artworkId);
    if (closed.length === 0) return undefined;
    const confirmed = await this.deps.operations.confirmedOf(db, closed.map((o) => cancelKey(o.order_hash)));
    return closed.find((o) => !confirmed.has(cancelKey(o.order_hash)));
  }

  /** A fill's order is closed, in the fill's transaction: the sale that recorded it. */
  async markFilled(trx: Transaction<Database>, orderHash: string, saleId: string): Promise<void> {
    await orders.close(trx, orderHash, "filled", saleId);
  }

  readonly cancelKind: ChainOperationKind<{ txHash: string }> = {
    kind: ORDER_CANCEL_OPERATION,
    abi: artExchangeAbi,
    maxAttempts: 8,
    retryBaseMs: 2_000,
    send: async (op, ctx) => {
      const p = op.payload as unknown as CancelPayload;
      const exchange = this.deps.chain.exchange;
      if (!exchange) throw new ChainOperationFailure("permanent", "ART_EXCHANGE_ADDRESS is not configured");
      await this.deps.relayer.write({
        address: exchange,
        abi: artExchangeAbi,
        functionName: "cancel",
        args: [deserialize(p.order)],
        label: op.key,
        onSubmitted: ({ hash }) => ctx.recordSent([op.key], hash),
      });
    },
    // Filled first: nothing to cancel, the operation fails saying so (the fill is the sale). Cancelled already: the indexer confirms it.
    settled: (err) => isRevertWith(err, "ArtExchangeOrderCancelled"),
    readIndexed: async (fromBlock, toBlock) => keyedCancels(await this.deps.views.cancels({ blocks: [fromBlock, toBlock] })),
    lookupIndexed: async (ops) => keyedCancels(await this.deps.views.cancels({ orderHashes: ops.map((op) => (op.payload as unknown as CancelPayload).order_hash) })),
    readFromChain: async () => [],
    // The order was closed when its cancellation was asked for.
    onConfirmed: async () => {},
    onFailed: async (_trx, op, reason) => {
      this.log.info({ key: op.key, reason }, "order not cancelled on-chain (filled first, or expired)");
    },
  };

  private requireExchange(): { exchange: Address; paymentToken: Address } {
    const { exchange, paymentToken, certificate } = this.deps.chain;
    if (!exchange || !paymentToken || !certificate) {
      throw new ApiError(503, "service_unavailable", "On-chain purchases are not configured on this deployment (ART_EXCHANGE_ADDRESS, PAYMENT_TOKEN_ADDRESS)");
    }
    return { exchange, paymentToken };
  }
}

/** A chain timestamp (unix seconds) as a date. */
function dateOf(seconds: bigint): Date {
  return new Date(Number(seconds) * 1000);
}

function structOf(o: OrderRow): ExchangeOrder {
  return {
    listingId: o.listing_id,
    seller: getAddress(o.seller_wallet),
    buyer: zeroAddress,
    tokenId: BigInt(o.token_id),
    currency: getAddress(o.currency),
    price: BigInt(o.price_units),
    feeBps: o.fee_bps,
    expiry: BigInt(Math.floor(o.expires_at.getTime() / 1000)),
  };
}

function serialize(s: ExchangeOrder): CancelPayload["order"] {
  return { ...s, tokenId: s.tokenId.toString(), price: s.price.toString(), expiry: s.expiry.toString() };
}

function deserialize(o: CancelPayload["order"]): ExchangeOrder {
  return {
    listingId: String(o.listingId),
    seller: o.seller as Address,
    buyer: o.buyer as Address,
    tokenId: BigInt(o.tokenId),
    currency: o.currency as Address,
    price: BigInt(o.price),
    feeBps: Number(o.feeBps),
    expiry: BigInt(o.expiry),
  };
}

function keyedCancels(rows: { orderHash: string; txHash: string }[]): KeyedFacts<{ txHash: string }>[] {
  return rows.map((r) => ({ key: cancelKey(r.orderHash), facts: { txHash: r.txHash } }));
}

function approvalKey(wallet: string): string {
  return `exchange_approval:${wallet.toLowerCase()}`;
}

function cancelKey(orderHash: string): string {
  return `order_cancel:${orderHash.toLowerCase()}`;
}
