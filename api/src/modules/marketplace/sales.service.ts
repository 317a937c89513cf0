import type { Kysely, Transaction } from "kysely";
import type { Logger } from "pino";
import type { Address, Hash } from "viem";
import type { IndexedProjection } from "../../chain/operations.ts";
import type { Database } from "../../db/database.ts";
import type { Transact } from "../../db/transact.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import type { Actor } from "../../lib/actor.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { centsToUsd } from "../../lib/money.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { PaymentsService, TransactionFilter } from "../payments/payments.service.ts";
import type { PurchaseKind, Refund } from "../payments/purchases.service.ts";
import type { User } from "../users/users.service.ts";
import type { ExchangeService } from "./exchange.service.ts";
import { decideListingMove } from "./listing-moves.ts";
import * as listings from "./marketplace.repository.ts";
import type { Listing, Sale } from "./marketplace.tables.ts";
import * as offers from "./offers.repository.ts";
import { OnchainFills, type OnchainFillsDeps } from "./onchain-fills.ts";
import { partiesOf } from "./sale-records.ts";
import * as repo from "./sales.repository.ts";
import { type SettlementDeps, settleKey, Settlements } from "./settlement.ts";
import type { Fill } from "../../chain/indexer-views.ts";

export { SETTLE_OPERATION, type SettlePayload } from "./settlement.ts";

/** What sales need: the settlement's and the fills' parts, and what starting a sale takes. */
export interface SalesDeps extends SettlementDeps, OnchainFillsDeps {
  db: Kysely<Database>;
  payments: PaymentsService;
  exchange: ExchangeService;
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
  private readonly settlements: Settlements;
  private readonly fills: OnchainFills;

  constructor(private readonly deps: SalesDeps) {
    this.log = deps.logger.child({ component: "marketplace-sales" });
    this.settlements = new Settlements(deps);
    this.fills = new OnchainFills(deps);
  }

  /** The chain operation kind of certificate transfers through ArtMarket.settle (settlement.ts). */
  get settlementKind() {
    return this.settlements.kind;
  }

  /** Wallets' fills of the platform's orders, projected from the indexer (onchain-fills.ts). */
  get onchainFills(): IndexedProjection<Fill> {
    return this.fills.projection;
  }

  /** A custodial wallet approves `operator` once, gaslessly (settlement.ts). */
  approveForCustodial(owner: Address, custodyIndex: number, operator: Address, onSubmitted?: (hash: Hash) => Promise<void>): Promise<void> {
    return this.settlements.approveForCustodial(owner, custodyIndex, operator, onSubmitted);
  }

  /** Requests the return of a refunded sale's certificate to its seller (settlement.ts). */
  requestReturn(trx: Transaction<Database>, disputeId: string, sale: Sale, buyer: User): Promise<void> {
    return this.settlements.requestReturn(trx, disputeId, sale, buyer);
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
      return (await this.deps.purchases.transactions(trx, [(await this.deps.purchases.find(trx, sale.id))!]))[0]!;
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
    await listings.moveBySale(trx, listing.id, "pending_payment");
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
    const transaction = (await this.deps.purchases.find(db, saleId))!;
    const sale = (await repo.find(db, saleId))!;
    // A wallet's fill that won the race closes the sale (`lost_to_fill`), charged or not: that is no decline.
    const soldOnchain = sale.status === "lost_to_fill";
    const [answer] = await this.deps.purchases.transactions(db, [transaction]);
    return { transaction: answer!, failureCode: soldOnchain ? "sold_onchain" : transaction.failure_code, paymentFailed: sale.status === "payment_failed", soldOnchain };
  }

  // ---- the payment ----

  /** Sales as a kind of purchase: what happens at each step of their payment (payments/purchases.service.ts). */
  readonly purchaseKind: PurchaseKind = {
    type: "sale",
    keyPrefix: "sale",
    // A card sale's transaction is its settlement's; a wallet's fill is the purchase's own (`chain_tx`).
    chainOperationOf: (purchase) => (purchase.payment_method === "card" ? settleKey(purchase.id) : null),
    // Paid: the transfer is requested, in the transaction that records the charge.
    onCharged: async (trx, purchase) => {
      const sale = await repo.move(trx, purchase.id, ["pending_payment"], "paid");
      if (!sale) {
        const closed = await repo.find(trx, purchase.id);
        if (closed?.status === "lost_to_fill") return { refund: { code: "sold_onchain", reason: "A wallet bought the listing on-chain first" } };
        return { refund: { code: "sale_closed", reason: "The sale was closed before its payment" } };
      }
      await this.settlements.request(trx, sale);
    },
    // Declined (or refused, or retries spent): the listing is active again, an offer `payment_failed`.
    onPaymentFailed: async (trx, purchase) => {
      const sale = await repo.move(trx, purchase.id, ["pending_payment"], "payment_failed");
      if (!sale) return;
      await listings.moveBySale(trx, sale.listing_id, "active", "pending_payment");
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

  // ---- reads ----

  async listTransactions(userId: string, filter: TransactionFilter, page: Page) {
    const { rows, total } = await this.deps.payments.listTransactions(userId, filter, page);
    return paginated(await this.deps.purchases.transactions(this.deps.db, rows), page, total);
  }

  async getTransaction(actor: Actor, id: string) {
    const row = await this.deps.payments.getTransaction(actor, id);
    return (await this.deps.purchases.transactions(this.deps.db, [row]))[0]!;
  }
}
