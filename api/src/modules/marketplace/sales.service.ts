import { type Kysely, sql, type Transaction } from "kysely";
import type { Logger } from "pino";
import { type Address, type Chain, decodeEventLog, type Hash, type PublicClient, type Transport } from "viem";
import { artCertificateAbi } from "../../../../contracts/abi/ArtCertificate.ts";
import { artMarketAbi } from "../../../../contracts/abi/ArtMarket.ts";
import type { CustodyWallet } from "../../chain/custody.ts";
import { isRevertWith } from "../../chain/errors.ts";
import { relayForwarded, trustedForwarderOf } from "../../chain/forwarder.ts";
import { type ChainOperationKind, ChainOperationFailure, type ChainOperations, type IndexedProjection, type KeyedFacts, type SendContext } from "../../chain/operations.ts";
import type { Relayer } from "../../chain/relayer.ts";
import type { ChainOperation, Database, Db } from "../../db/database.ts";
import type { Transact } from "../../db/transact.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { centsToUsd } from "../../lib/money.ts";
import type { Page } from "../../lib/pagination.ts";
import { paginated } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import { custodyIndexOf, type OwnershipService } from "../artworks/ownership.ts";
import type { Actor } from "../../lib/actor.ts";
import type { LedgerAppend, LedgerService } from "../ledger/ledger.service.ts";
import type { PaymentsService } from "../payments/payments.service.ts";
import type { Refund } from "../payments/processor.ts";
import type { PurchaseKind, Purchases } from "../payments/purchases.ts";
import {
  findTransaction,
  isPartyOf,
  listTransactionsOf,
  type TransactionFilter,
  toTransaction,
} from "../payments/transactions.ts";
import type { User } from "../users/users.service.ts";
import type { UsersService } from "../users/users.service.ts";
import * as listings from "./marketplace.repository.ts";
import type { Listing, Sale } from "./marketplace.tables.ts";
import * as offers from "./offers.repository.ts";
import * as repo from "./sales.repository.ts";
import { UNITS_PER_CENT } from "../../chain/exchange.ts";
import type { ExchangeService } from "./exchange.service.ts";
import { decideListingMove } from "./listing-moves.ts";
import type { Fill, Settlement, SettlementViews } from "./settlement-views.ts";

/** The chain operation that moves a certificate through ArtMarket.settle, once per sale id. */
export const SETTLE_OPERATION = "marketplace_settle";


/**
 * What ArtMarket.settle is asked to do: the sale's id on the chain (`txn_…`, or `return:dsp_…` for
 * a refunded sale's certificate going back), the token and both wallets, the price in cents (what
 * royaltyInfo is asked about), and the custody index of `from` when the platform signs for it.
 */
export interface SettlePayload {
  sale_id: string;
  token_id: string;
  from: Address;
  to: Address;
  price_cents: string;
  from_custody_index: number | null;
}

export interface SalesDeps {
  db: Kysely<Database>;
  logger: Logger;
  payments: PaymentsService;
  purchases: Purchases;
  artworks: ArtworksService;
  users: UsersService;
  ledger: LedgerService;
  operations: ChainOperations;
  views: SettlementViews;
  ownership: OwnershipService;
  publicClient: PublicClient<Transport, Chain>;
  relayer: Relayer;
  custody: CustodyWallet;
  exchange: ExchangeService;
  chain: { id: number; certificate: Address | null; market: Address | null };
  /** How long a purchase waits for its outcome before answering 202 (the sale goes on). */
  purchaseWaitMs: number;
}


/**
 * Sales, from the reservation to the certificate on the buyer's wallet. A sale is started in the
 * request's transaction (buy-now, or a seller accepting an offer): the listing moves to
 * `pending_payment`, the sale's `sale` transaction is `pending`, and the charge job is enqueued.
 * The job charges the buyer (charge key `sale:<id>`: a retried job, or one resumed after a crash,
 * finds the same charge) and, in one transaction, marks the sale `paid` and requests the transfer
 * as a chain operation (`settle:<id>`: ArtMarket.settle refuses a second settlement of a sale id).
 * The sale is `completed` when the indexer shows ArtMarket's SaleSettled: the royalty is the
 * event's (the certificate's ERC-2981 royaltyInfo), the seller's payout is net of fee and royalty,
 * `payment.completed` is recorded. Every money step is appended to the audit ledger.
 */
export class SalesService {
  private readonly log: Logger;

  constructor(private readonly deps: SalesDeps) {
    this.log = deps.logger.child({ component: "marketplace-sales" });
  }

  // ---- starting a sale ----

  /** Buy now: reserves the listing and starts its sale in the request's transaction; answers once settled, or pending after the wait. */
  async purchase(actor: Actor, listingId: string, input: { payment_method_id: string }, transact: Transact) {
    const { users, payments } = this.deps;
    if (!isId("listing", listingId)) throw ApiError.notFound("Listing");
    this.requireChain();
    const buyer = await users.get(actor.userId);
    const method = await payments.resolvePaymentMethod(buyer.id, input.payment_method_id);
    const started = await transact(async (trx) => {
      const listing = found(await decideListingMove(this.deps.ownership, trx, listingId, "buy", actor), "Listing");
      const sale = await this.startSale(trx, { listing, buyer, paymentMethodId: method.id, priceCents: listing.price_cents, offerId: null }, { chargeInRequest: true });
      return toTransaction((await findTransaction(trx, sale.id))!);
    });
    await this.deps.purchases.charge(started.tx_id).catch((err: unknown) => this.log.error({ err, sale_id: started.tx_id }, "charging in the request failed; the job will"));
    return this.awaitOutcome(started.tx_id, this.deps.purchaseWaitMs);
  }

  /**
   * Starts the sale of a locked, active listing in `trx`: its purchase (pending, charged by the
   * request after the commit or, for an accepted offer, by its job at once), the sale row
   * (`pending_payment`: the partial unique index allows one live sale per listing) and the listing in
   * `pending_payment`. Only `trx` is used (callers decided the move under the artwork's lock first).
   */
  async startSale(
    trx: Transaction<Database>,
    input: { listing: Listing; buyer: User; paymentMethodId: string; priceCents: bigint; offerId: string | null },
    options: { chargeInRequest: boolean },
  ): Promise<Sale> {
    const { listing, buyer } = input;
    const id = newId("transaction");
    await this.deps.purchases.start(
      trx,
      {
        type: "sale",
        id,
        referenceId: id,
        artworkId: listing.artwork_id,
        amountCents: input.priceCents,
        buyerId: buyer.id,
        sellerId: listing.seller_id,
        recipientId: listing.seller_id,
        recipientWallet: listing.seller_wallet,
        paymentMethodId: input.paymentMethodId,
        description: `Artwork ${listing.artwork_id}`,
      },
      options,
    );
    const sale = await repo.insert(trx, {
      id,
      listing_id: listing.id,
      offer_id: input.offerId,
      artwork_id: listing.artwork_id,
      token_id: listing.token_id,
      buyer_id: buyer.id,
      seller_id: listing.seller_id,
      buyer_wallet: buyer.wallet_address.toLowerCase(),
      seller_wallet: listing.seller_wallet,
      price_cents: input.priceCents,
      payment_method_id: input.paymentMethodId,
      status: "pending_payment",
    });
    await trx.updateTable("listings").set({ status: "pending_payment", updated_at: sql<Date>`now()` }).where("id", "=", listing.id).execute();
    // Wallets could fill the listing's orders meanwhile: they are cancelled (a fill mined first still wins, and this sale is refunded).
    await this.deps.exchange.cancelOpenOrders(trx, listing.id);
    return sale;
  }

  private requireChain(): void {
    if (!this.deps.chain.market || !this.deps.chain.certificate) {
      throw new ApiError(503, "service_unavailable", "The marketplace's settlement contract is not configured (ART_MARKET_ADDRESS)");
    }
  }

  /**
   * The sale's transaction once it left `pending` (or as it is after `timeoutMs`), and whether it
   * failed at the payment (a decline: 402) rather than at the transfer (refunded), or lost the
   * listing to a wallet's fill on-chain (its charge, if any, refunded).
   */
  async awaitOutcome(saleId: string, timeoutMs: number) {
    const { db, operations } = this.deps;
    await operations.waitFor(settleKey(saleId), async () => {
      const sale = await repo.find(db, saleId);
      return !sale || (sale.status !== "pending_payment" && sale.status !== "paid");
    }, timeoutMs);
    const transaction = (await findTransaction(db, saleId))!;
    const sale = (await repo.find(db, saleId))!;
    // A wallet's fill that won the race closes a sale not yet charged as payment_failed: that is no decline.
    const soldOnchain = sale.failure_code === "sold_onchain";
    return { transaction: toTransaction(transaction), failureCode: sale.failure_code, paymentFailed: sale.status === "payment_failed" && !soldOnchain, soldOnchain };
  }

  // ---- the payment ----

  /** Sales as a kind of purchase: what happens at each step of their payment (payments/purchases.ts). */
  readonly purchaseKind: PurchaseKind = {
    type: "sale",
    keyPrefix: "sale",
    // Paid: the transfer is requested, in the transaction that records the charge.
    onCharged: async (trx, purchase, charge) => {
      const sale = await repo.move(trx, purchase.id, ["pending_payment"], "paid", { charge_id: charge.chargeId, fee_cents: charge.feeCents, paid_at: sql<Date>`now()` });
      if (!sale) return { refund: { code: "sale_closed", reason: "The sale was closed before its payment" } };
      await this.deps.operations.request(trx, { key: settleKey(sale.id), kind: SETTLE_OPERATION, payload: await this.settlePayload(trx, sale) });
    },
    // Declined (or refused, or retries spent): the listing is active again, an offer `payment_failed`.
    onPaymentFailed: async (trx, purchase, failure) => {
      const sale = await repo.move(trx, purchase.id, ["pending_payment"], "payment_failed", { failure_code: failure.code, failure_reason: failure.reason, failed_at: sql<Date>`now()` });
      if (!sale) return;
      await trx.updateTable("listings").set({ status: "active", updated_at: sql<Date>`now()` }).where("id", "=", sale.listing_id).where("status", "=", "pending_payment").execute();
      if (sale.offer_id) await offers.move(trx, sale.offer_id, "accepted", "payment_failed");
    },
  };

  /**
   * A completed sale refunded (a dispute's refund went through), in the refund's transaction: the
   * sale `refunded`, and `sale.refunded` to its buyer and seller (what it earned them is taken back).
   */
  async markRefunded(trx: Transaction<Database>, saleId: string, refund: Refund): Promise<void> {
    const sale = await repo.move(trx, saleId, ["completed"], "refunded");
    if (!sale) return;
    await recordEvent(
      trx,
      "sale.refunded",
      { tx_id: sale.id, artwork_id: sale.artwork_id, buyer_id: sale.buyer_id, seller_id: sale.seller_id, refunded_usd: centsToUsd(refund.amountCents), reason: "The sale was refunded (a dispute)", refunded_at: iso(new Date()) },
      partiesOf(sale),
    );
  }

  /** What the transfer of a paid sale asks ArtMarket, read in the caller's transaction (never a second connection). */
  private async settlePayload(db: Db, sale: Sale): Promise<Record<string, unknown>> {
    const seller = await this.deps.users.findByWallet(db, sale.seller_wallet);
    const payload: SettlePayload = {
      sale_id: sale.id,
      token_id: sale.token_id.toString(),
      from: sale.seller_wallet as Address,
      to: sale.buyer_wallet as Address,
      price_cents: sale.price_cents.toString(),
      from_custody_index: custodyIndexOf(seller, sale.seller_wallet),
    };
    return { ...payload };
  }

  // ---- the transfer (a chain operation) ----

  /** The chain operation kind of certificate transfers through ArtMarket.settle. */
  readonly settlementKind: ChainOperationKind<Settlement> = {
    kind: SETTLE_OPERATION,
    abi: artMarketAbi,
    maxAttempts: 8,
    retryBaseMs: 2_000,
    send: (op, ctx) => this.sendSettlement(op, ctx),
    settled: (err) => isRevertWith(err, "ArtMarketAlreadySettled"),
    readIndexed: async (fromBlock, toBlock) => (await this.deps.views.inBlocks(fromBlock, toBlock)).map(keyed),
    lookupIndexed: async (ops) => (await this.deps.views.bySaleIds(ops.map((op) => payloadOf(op).sale_id))).map(keyed),
    readFromChain: (ops) => this.settlementsFromReceipts(ops),
    onConfirmed: (trx, confirmed) => this.onSettled(trx, confirmed.map((c) => c.facts)),
    onFailed: (trx, op, reason) => this.onSettlementFailed(trx, payloadOf(op), reason),
  };

  private async sendSettlement(op: ChainOperation, ctx: SendContext): Promise<void> {
    const { relayer } = this.deps;
    const p = payloadOf(op);
    const market = this.deps.chain.market;
    if (!market) throw new ChainOperationFailure("transient", "ART_MARKET_ADDRESS is not configured");
    if (p.from_custody_index !== null) await this.approveForCustodial(p.from, p.from_custody_index, market);
    await relayer.write({
      address: market,
      abi: artMarketAbi,
      functionName: "settle",
      args: [p.sale_id, BigInt(p.token_id), p.from, p.to, BigInt(p.price_cents)],
      label: op.key,
      onSubmitted: ({ hash }) => ctx.recordSent([op.key], hash),
    });
  }

  /**
   * A custodial wallet approves `operator` (ArtMarket, ArtExchange) once, gaslessly: the platform
   * signs the wallet's setApprovalForAll as an ERC-2771 request and the relayer submits it through
   * the forwarder.
   */
  async approveForCustodial(owner: Address, custodyIndex: number, operator: Address, onSubmitted?: (hash: Hash) => Promise<void>): Promise<void> {
    const { publicClient, relayer, custody, chain } = this.deps;
    const certificate = chain.certificate!;
    const approved = () => publicClient.readContract({ address: certificate, abi: artCertificateAbi, functionName: "isApprovedForAll", args: [owner, operator] });
    if (await approved()) return;
    try {
      await relayForwarded(
        { relayer, publicClient, forwarder: await trustedForwarderOf(publicClient, certificate), chainId: chain.id },
        custody.accountAt(custodyIndex),
        {
          address: certificate,
          abi: artCertificateAbi,
          functionName: "setApprovalForAll",
          args: [operator, true],
          label: `approve ${operator} for ${owner}`,
          onSubmitted: onSubmitted ? ({ hash }) => onSubmitted(hash) : undefined,
        },
      );
    } catch (err) {
      // Two sales of one seller at once: the other's approval may have won the forwarder's nonce.
      if (await approved()) return;
      throw err;
    }
  }

  /** SaleSettled events in the receipts of sent operations (while the indexer lags). */
  private async settlementsFromReceipts(ops: ChainOperation[]): Promise<KeyedFacts<Settlement>[]> {
    const { publicClient, chain } = this.deps;
    const out: KeyedFacts<Settlement>[] = [];
    for (const op of ops) {
      if (!op.tx_hash) continue;
      const receipt = await publicClient.getTransactionReceipt({ hash: op.tx_hash as Hash }).catch(() => null);
      if (!receipt || receipt.status !== "success") continue;
      const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber });
      for (const log of receipt.logs) {
        if (log.address.toLowerCase() !== chain.market?.toLowerCase()) continue;
        try {
          const event = decodeEventLog({ abi: artMarketAbi, data: log.data, topics: log.topics });
          if (event.eventName !== "SaleSettled") continue;
          const a = event.args;
          out.push(
            keyed({
              saleId: a.saleId,
              tokenId: a.tokenId,
              from: a.from.toLowerCase(),
              to: a.to.toLowerCase(),
              priceCents: a.priceCents,
              royaltyReceiver: a.royaltyReceiver.toLowerCase(),
              royaltyCents: a.royaltyCents,
              txHash: receipt.transactionHash,
              blockNumber: receipt.blockNumber,
              at: new Date(Number(block.timestamp) * 1000),
            }),
          );
        } catch {
          // another event of the contract
        }
      }
    }
    return out;
  }

  /**
   * Confirmed settlements, in the confirming transaction. Ledger entries are appended last (the
   * ledger's lock is taken after every row lock, in every transaction that takes both).
   */
  private async onSettled(trx: Transaction<Database>, settlements: Settlement[]): Promise<void> {
    const appends: LedgerAppend[] = [];
    for (const s of settlements) {
      if (s.saleId.startsWith(RETURN_PREFIX)) await this.onReturned(trx, s.saleId.slice(RETURN_PREFIX.length), s, appends);
      else await this.completeSale(trx, s, appends);
    }
    for (const entry of appends) await this.deps.ledger.append(trx, entry);
  }

  private async completeSale(trx: Transaction<Database>, s: Settlement, appends: LedgerAppend[]): Promise<void> {
    const sale = await repo.lock(trx, s.saleId);
    if (!sale || sale.status !== "paid") return;
    // ERC-2981 pays the artist on secondary sales: a primary sale (the receiver sells) carries none.
    const royaltyApplies = s.royaltyCents > 0n && s.royaltyReceiver !== sale.seller_wallet;
    const royaltyCents = royaltyApplies ? s.royaltyCents : 0n;
    const feeCents = sale.fee_cents ?? 0n;
    const net = sale.price_cents - feeCents - royaltyCents;
    const payoutCents = net > 0n ? net : 0n;
    const completed = (await repo.move(trx, sale.id, ["paid"], "completed", {
      royalty_receiver: s.royaltyReceiver,
      royalty_cents: royaltyCents,
      payout_cents: payoutCents,
      settle_tx_hash: s.txHash,
      completed_at: sql<Date>`now()`,
    }))!;
    const royaltyRecipient = royaltyApplies ? await this.deps.users.findByWallet(trx, s.royaltyReceiver) : undefined;
    const purchase = (await this.deps.purchases.complete(trx, sale.id, {
      royaltyCents,
      payoutCents,
      chainTx: s.txHash,
      payouts: royaltyApplies ? [{ amountCents: royaltyCents, recipientId: royaltyRecipient?.id ?? null, recipientWallet: s.royaltyReceiver }] : [],
    }))!;
    await this.finishSale(trx, completed, { feeCents, royaltyCents, payoutCents, royaltyReceiver: royaltyApplies ? s.royaltyReceiver : null, royaltyRecipientId: royaltyRecipient?.id ?? null, txHash: s.txHash, completedAt: purchase.completed_at! }, appends);
  }

  /**
   * What every completed sale does, paid by card or on-chain, in the transaction that completes it:
   * the listing sold (its orders a wallet could still fill cancelled on-chain), an accepted offer
   * completed and the listing's other pending offers rejected, provenance `sold`, `payment.completed`
   * to the buyer and the seller, and the sale's ledger entry.
   */
  private async finishSale(
    trx: Transaction<Database>,
    sale: Sale,
    f: { feeCents: bigint; royaltyCents: bigint; payoutCents: bigint; royaltyReceiver: string | null; royaltyRecipientId: string | null; txHash: string; completedAt: Date; at?: Date },
    appends: LedgerAppend[],
  ): Promise<void> {
    // A wallet's fill mined before the listing's cancellation here (by its seller, or by a card sale's
    // failed transfer) is still its sale: the chain's answer wins, and the cancellation is undone.
    await trx.updateTable("listings").set({ status: "sold", cancelled_at: null, cancelled_by: null, updated_at: sql<Date>`now()` }).where("id", "=", sale.listing_id).execute();
    await this.deps.exchange.cancelOpenOrders(trx, sale.listing_id, sale.order_hash);
    if (sale.offer_id) await offers.move(trx, sale.offer_id, "accepted", "completed");
    // The listing sold: its other pending offers are rejected (docs/decisions.md#states).
    for (const offer of await offers.rejectPendingOf(trx, sale.listing_id, null)) {
      await recordOfferEvent(trx, "offer.rejected", offer, { reason: "listing_sold" });
      appends.push(offerLedgerEntry("offer.rejected", offer, null, { reason: "listing_sold" }));
    }
    await this.deps.artworks.recordMarketplaceProvenance(trx, {
      artworkId: sale.artwork_id,
      event: "sold",
      actorId: null,
      txHash: f.txHash,
      details: {
        listing_id: sale.listing_id,
        transaction_id: sale.id,
        price_usd: centsToUsd(sale.price_cents),
        // A wallet with no account is named by its address.
        ...(sale.buyer_id ? { buyer_id: sale.buyer_id } : { to: sale.buyer_wallet }),
        seller_id: sale.seller_id,
      },
      at: f.at ?? new Date(),
    });
    await recordEvent(
      trx,
      "payment.completed",
      {
        tx_id: sale.id,
        artwork_id: sale.artwork_id,
        amount_usd: centsToUsd(sale.price_cents),
        completed_at: iso(f.completedAt),
        listing_id: sale.listing_id,
        offer_id: sale.offer_id,
        buyer_id: sale.buyer_id,
        seller_id: sale.seller_id,
        platform_fee_usd: centsToUsd(f.feeCents),
        royalty_usd: centsToUsd(f.royaltyCents),
        seller_payout_usd: centsToUsd(f.payoutCents),
        on_chain_tx: f.txHash,
        payment_method: sale.payment_method,
        ...(sale.payment_method === "onchain" ? { buyer_wallet: sale.buyer_wallet } : {}),
      },
      partiesOf(sale),
    );
    appends.push({
      kind: "sale.completed",
      subjectId: sale.id,
      actorId: null,
      parties: [...partiesOf(sale), ...(f.royaltyRecipientId ? [f.royaltyRecipientId] : [])],
      data: {
        transaction_id: sale.id,
        listing_id: sale.listing_id,
        offer_id: sale.offer_id,
        token_id: sale.token_id.toString(),
        price_cents: sale.price_cents.toString(),
        fee_cents: f.feeCents.toString(),
        royalty_cents: f.royaltyCents.toString(),
        royalty_receiver: f.royaltyReceiver,
        payout_cents: f.payoutCents.toString(),
        chain_tx: f.txHash,
        payment_method: sale.payment_method,
        ...(sale.order_hash ? { order_hash: sale.order_hash, buyer_wallet: sale.buyer_wallet } : {}),
      },
    });
  }

  // ---- sales paid on-chain (ArtExchange fills) ----

  /**
   * Wallets' fills of the platform's orders, as the indexer shows them, each once (the order's hash
   * is unique among sales): the same records as a card sale (the `sale` transaction through the
   * purchase lifecycle, paid `onchain`; the royalty payout; the listing sold; provenance;
   * `payment.completed`; the ledger), the buyer's account found by its wallet (signed in, linked or
   * custodial) or none. A card sale of the listing still under way lost the race: it closes and its
   * charge goes back (docs/integrators/onchain-purchases.md#one-sale-per-listing).
   */
  readonly onchainFills: IndexedProjection<Fill> = {
    consumer: "marketplace_exchange_fills",
    read: (fromBlock, toBlock) => this.deps.views.fillsInBlocks(fromBlock, toBlock),
    apply: async (trx, fills) => {
      const appends: LedgerAppend[] = [];
      for (const fill of fills) await this.recordFill(trx, fill, appends);
      for (const entry of appends) await this.deps.ledger.append(trx, entry);
    },
  };

  private async recordFill(trx: Transaction<Database>, fill: Fill, appends: LedgerAppend[]): Promise<void> {
    const { users, purchases, exchange } = this.deps;
    const seen = isId("listing", fill.listingId) ? await listings.find(trx, fill.listingId) : undefined;
    // A fill mined is a chain fact: nothing refuses it, but it is written under the artwork's lock as
    // every move is. Then a card sale under way, then the listing: the order every sale's transfer
    // locks them in (a card sale's settlement failing at this very block takes the same locks).
    if (seen) await this.deps.ownership.lockForChainFact(trx, seen.artwork_id);
    const liveSale = () => trx.selectFrom("sales").selectAll().where("listing_id", "=", fill.listingId).where("status", "in", ["pending_payment", "paid"]).forUpdate().executeTakeFirst();
    let live = isId("listing", fill.listingId) ? await liveSale() : undefined;
    const listing = isId("listing", fill.listingId) ? await listings.lock(trx, fill.listingId) : undefined;
    // A card sale started while the listing's lock was awaited is seen now.
    if (listing && !live) live = await liveSale();
    const recorded = await trx.selectFrom("sales").select("id").where("order_hash", "=", fill.orderHash).executeTakeFirst();
    if (recorded) return;
    const sold = listing && (await trx.selectFrom("sales").select("id").where("listing_id", "=", listing.id).where("status", "=", "completed").executeTakeFirst());
    if (!listing || sold || listing.token_id !== fill.tokenId || listing.seller_wallet !== fill.seller) {
      // Not a sale of this platform: an order a self-custodied seller signed for itself with another
      // listing id, or one of another platform's database on the same contracts. The chain keeps it;
      // only an order this platform signed would be a fault here.
      const ours = await trx.selectFrom("exchange_orders").select("order_hash").where("order_hash", "=", fill.orderHash).executeTakeFirst();
      if (ours) this.log.error({ order_hash: fill.orderHash, listing_id: fill.listingId, tx_hash: fill.txHash }, "a fill of an order the platform signed matches no sellable listing");
      return;
    }
    if (live) appends.push(await this.loseToFill(trx, live, fill));

    // ArtExchange splits in whole cents (its royalty and fee rounded as a card sale's): the cents below are exact.
    if ([fill.price, fill.fee, fill.royalty].some((units) => units % UNITS_PER_CENT !== 0n)) {
      this.log.error({ order_hash: fill.orderHash, tx_hash: fill.txHash }, "a fill split in fractions of a cent (an exchange deployed before whole-cent splits): the sale's cents are rounded down");
    }
    const priceCents = fill.price / UNITS_PER_CENT;
    const feeCents = fill.fee / UNITS_PER_CENT;
    const royaltyApplies = fill.royalty > 0n && fill.royaltyReceiver !== fill.seller;
    const royaltyCents = royaltyApplies ? fill.royalty / UNITS_PER_CENT : 0n;
    const net = priceCents - feeCents - royaltyCents;
    const payoutCents = net > 0n ? net : 0n;
    const buyer = await users.findByWallet(trx, fill.buyer);
    const royaltyRecipient = royaltyApplies ? await users.findByWallet(trx, fill.royaltyReceiver) : undefined;
    const id = newId("transaction");
    const { purchase, ledger } = await purchases.recordPaidOnChain(
      trx,
      {
        type: "sale",
        id,
        referenceId: id,
        artworkId: listing.artwork_id,
        amountCents: priceCents,
        amountUnits: fill.price,
        currency: fill.currency,
        feeCents,
        buyerId: buyer?.id ?? null,
        buyerWallet: fill.buyer,
        sellerId: listing.seller_id,
        recipientId: listing.seller_id,
        recipientWallet: listing.seller_wallet,
      },
      {
        royaltyCents,
        payoutCents,
        chainTx: fill.txHash,
        payouts: royaltyApplies ? [{ amountCents: royaltyCents, recipientId: royaltyRecipient?.id ?? null, recipientWallet: fill.royaltyReceiver }] : [],
      },
    );
    const sale = await repo.insert(trx, {
      id,
      listing_id: listing.id,
      offer_id: null,
      artwork_id: listing.artwork_id,
      token_id: listing.token_id,
      buyer_id: buyer?.id ?? null,
      seller_id: listing.seller_id,
      buyer_wallet: fill.buyer,
      seller_wallet: listing.seller_wallet,
      price_cents: priceCents,
      payment_method_id: null,
      payment_method: "onchain",
      order_hash: fill.orderHash,
      status: "completed",
      fee_cents: feeCents,
      royalty_receiver: fill.royaltyReceiver,
      royalty_cents: royaltyCents,
      payout_cents: payoutCents,
      settle_tx_hash: fill.txHash,
      paid_at: fill.at,
      completed_at: purchase.completed_at,
    });
    await exchange.markFilled(trx, fill.orderHash, sale.id);
    appends.push(ledger);
    await this.finishSale(trx, sale, { feeCents, royaltyCents, payoutCents, royaltyReceiver: royaltyApplies ? fill.royaltyReceiver : null, royaltyRecipientId: royaltyRecipient?.id ?? null, txHash: fill.txHash, completedAt: purchase.completed_at!, at: fill.at }, appends);
  }

  /**
   * A card sale of the listing was under way when a wallet's fill took the certificate: it closes
   * with code `sold_onchain`. Paid: `settlement_failed`, its charge refunded now (its transfer, if
   * sent, fails on-chain and changes nothing more). Not yet charged: `payment_failed`; a charge that
   * still succeeds finds the sale closed and goes back (the purchase's onCharged), a decline just
   * fails it.
   */
  private async loseToFill(trx: Transaction<Database>, sale: Sale, fill: Fill): Promise<LedgerAppend> {
    const reason = `A wallet bought the listing on-chain first (${fill.txHash})`;
    const closed = { failure_code: "sold_onchain", failure_reason: reason, failed_at: sql<Date>`now()` };
    if (sale.status === "paid") {
      await repo.move(trx, sale.id, ["paid"], "settlement_failed", closed);
      await this.deps.purchases.failEffect(trx, sale.id, { code: "sold_onchain", reason: `The certificate could not be transferred: ${reason}` });
    } else {
      await repo.move(trx, sale.id, ["pending_payment"], "payment_failed", closed);
    }
    if (sale.offer_id) await offers.move(trx, sale.offer_id, "accepted", "payment_failed");
    return { kind: "settlement.failed", subjectId: sale.id, actorId: null, parties: partiesOf(sale), data: { transaction_id: sale.id, reason, code: "sold_onchain" } };
  }

  /**
   * The transfer failed for good (the seller's wallet no longer holds the token, or an external
   * wallet withdrew its approval): the sale is `settlement_failed`, the listing cancelled, an offer
   * `payment_failed`, and the charge is refunded by a job.
   */
  private async onSettlementFailed(trx: Transaction<Database>, p: SettlePayload, reason: string): Promise<void> {
    if (p.sale_id.startsWith(RETURN_PREFIX)) {
      await trx
        .updateTable("disputes")
        .set({ certificate_return: "not_possible", updated_at: sql<Date>`now()` })
        .where("id", "=", p.sale_id.slice(RETURN_PREFIX.length))
        .execute();
      return;
    }
    const sale = await repo.move(trx, p.sale_id, ["paid"], "settlement_failed", { failure_code: "settlement_failed", failure_reason: reason, failed_at: sql<Date>`now()` });
    if (!sale) return;
    await trx
      .updateTable("listings")
      .set({ status: "cancelled", cancelled_at: sql<Date>`now()`, cancelled_by: null, updated_at: sql<Date>`now()` })
      .where("id", "=", sale.listing_id)
      .where("status", "=", "pending_payment")
      .execute();
    if (sale.offer_id) await offers.move(trx, sale.offer_id, "accepted", "payment_failed");
    await this.deps.purchases.failEffect(trx, sale.id, { code: "settlement_failed", reason: `The certificate could not be transferred: ${reason}` });
    await this.deps.ledger.append(trx, {
      kind: "settlement.failed",
      subjectId: sale.id,
      actorId: null,
      parties: partiesOf(sale),
      data: { transaction_id: sale.id, reason },
    });
  }

  /** A refunded sale's certificate is back with its seller (a dispute's return). */
  private async onReturned(trx: Transaction<Database>, disputeId: string, s: Settlement, appends: LedgerAppend[]): Promise<void> {
    const dispute = await trx
      .updateTable("disputes")
      .set({ certificate_return: "returned", return_tx_hash: s.txHash, updated_at: sql<Date>`now()` })
      .where("id", "=", disputeId)
      .where("certificate_return", "=", "pending")
      .returningAll()
      .executeTakeFirst();
    if (!dispute) return;
    const sale = (await repo.find(trx, dispute.transaction_id))!;
    await this.deps.artworks.recordMarketplaceProvenance(trx, {
      artworkId: sale.artwork_id,
      event: "returned",
      actorId: null,
      txHash: s.txHash,
      details: { transaction_id: sale.id, dispute_id: dispute.id },
      at: new Date(),
    });
    appends.push({ kind: "certificate.returned", subjectId: dispute.id, actorId: null, parties: [dispute.buyer_id, dispute.seller_id], data: { transaction_id: sale.id, chain_tx: s.txHash } });
  }

  /** Requests the return of a refunded sale's certificate from the buyer's custodial wallet to the seller's. */
  async requestReturn(trx: Transaction<Database>, disputeId: string, sale: Sale, buyer: User): Promise<void> {
    const payload: SettlePayload = {
      sale_id: `${RETURN_PREFIX}${disputeId}`,
      token_id: sale.token_id.toString(),
      from: sale.buyer_wallet as Address,
      to: sale.seller_wallet as Address,
      price_cents: "0",
      from_custody_index: custodyIndexOf(buyer, sale.buyer_wallet),
    };
    await this.deps.operations.request(trx, { key: settleKey(payload.sale_id), kind: SETTLE_OPERATION, payload: { ...payload } });
  }

  // ---- reads ----

  async listTransactions(userId: string, filter: TransactionFilter, page: Page) {
    const { rows, total } = await listTransactionsOf(this.deps.db, userId, filter, page);
    return paginated(rows.map(toTransaction), page, total);
  }

  /** A transaction for one of its parties or an admin; anyone else 404 (it is private). */
  async getTransaction(actor: Actor, id: string) {
    const t = isId("transaction", id) ? await findTransaction(this.deps.db, id) : undefined;
    if (!t || (actor.role !== "admin" && !isPartyOf(t, actor.userId))) throw ApiError.notFound("Transaction");
    return toTransaction(t);
  }
}

const RETURN_PREFIX = "return:";

function settleKey(saleId: string): string {
  return `settle:${saleId}`;
}

/** The sale's parties that are users (an on-chain buyer may have no account). */
function partiesOf(sale: Pick<Sale, "buyer_id" | "seller_id">): string[] {
  return [sale.buyer_id, sale.seller_id].filter((id): id is string => id !== null);
}

function keyed(s: Settlement): KeyedFacts<Settlement> {
  return { key: settleKey(s.saleId), facts: s };
}

function payloadOf(op: ChainOperation): SettlePayload {
  return op.payload as unknown as SettlePayload;
}



/** An offer's webhook event, to its buyer and seller only. */
export async function recordOfferEvent(
  db: Db,
  type: "offer.created" | "offer.accepted" | "offer.rejected" | "offer.expired",
  offer: { id: string; listing_id: string; buyer_id: string; seller_id: string; amount_cents: bigint; expires_at: Date; decided_at: Date | null; transaction_id: string | null },
  extra: Record<string, unknown> = {},
): Promise<void> {
  const at = iso(offer.decided_at ?? new Date());
  const when = { "offer.created": { created_at: at }, "offer.accepted": { accepted_at: at }, "offer.rejected": { rejected_at: at }, "offer.expired": { expired_at: at } }[type];
  await recordEvent(
    db,
    type,
    {
      offer_id: offer.id,
      listing_id: offer.listing_id,
      amount_usd: centsToUsd(offer.amount_cents),
      buyer_id: offer.buyer_id,
      seller_id: offer.seller_id,
      expires_at: iso(offer.expires_at),
      ...(offer.transaction_id ? { transaction_id: offer.transaction_id } : {}),
      ...when,
      ...extra,
    },
    [offer.buyer_id, offer.seller_id],
  );
}

/** An offer's move as a ledger entry. */
export function offerLedgerEntry(
  kind: string,
  offer: { id: string; listing_id: string; buyer_id: string; seller_id: string; amount_cents: bigint; status: string },
  actorId: string | null,
  extra: Record<string, unknown> = {},
): LedgerAppend {
  return {
    kind,
    subjectId: offer.id,
    actorId,
    parties: [offer.buyer_id, offer.seller_id],
    data: { offer_id: offer.id, listing_id: offer.listing_id, amount_cents: offer.amount_cents.toString(), status: offer.status, ...extra },
  };
}
