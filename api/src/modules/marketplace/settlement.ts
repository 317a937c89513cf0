import type { Logger } from "pino";
import type { Transaction } from "kysely";
import { type Address, type Chain, decodeEventLog, type Hash, type PublicClient, type Transport } from "viem";
import { artCertificateAbi } from "../../../../contracts/abi/ArtCertificate.ts";
import { artMarketAbi } from "../../../../contracts/abi/ArtMarket.ts";
import type { CustodyWallet } from "../../chain/custody.ts";
import { isRevertWith } from "../../chain/errors.ts";
import { relayForwarded, trustedForwarderOf } from "../../chain/forwarder.ts";
import { type ChainOperationKind, ChainOperationFailure, type ChainOperations, type KeyedFacts, type SendContext } from "../../chain/operations.ts";
import type { Relayer } from "../../chain/relayer.ts";
import type { ChainOperation, Database } from "../../db/database.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import { custodyIndexOf } from "../artworks/ownership.service.ts";
import type { LedgerAppend, LedgerService } from "../ledger/ledger.service.ts";
import type { Purchases } from "../payments/purchases.service.ts";
import type { User, UsersService } from "../users/users.service.ts";
import * as disputes from "./disputes.repository.ts";
import type { ExchangeService } from "./exchange.service.ts";
import * as listings from "./marketplace.repository.ts";
import type { Sale } from "./marketplace.tables.ts";
import * as offers from "./offers.repository.ts";
import { finishSale, partiesOf, payoutOf } from "./sale-records.ts";
import * as repo from "./sales.repository.ts";
import type { Settlement, IndexedMarket } from "../../chain/indexer-views.ts";

/** The chain operation that moves a certificate through ArtMarket.settle, once per sale id. */
export const SETTLE_OPERATION = "marketplace_settle";

/** A refunded sale's certificate going back settles as `return:<dispute id>`. */
const RETURN_PREFIX = "return:";

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

export interface SettlementDeps {
  logger: Logger;
  purchases: Purchases;
  artworks: ArtworksService;
  users: UsersService;
  ledger: LedgerService;
  operations: ChainOperations;
  views: IndexedMarket;
  publicClient: PublicClient<Transport, Chain>;
  relayer: Relayer;
  custody: CustodyWallet;
  exchange: Pick<ExchangeService, "cancelOpenOrders">;
  chain: { id: number; certificate: Address | null; market: Address | null };
}

export function settleKey(saleId: string): string {
  return `settle:${saleId}`;
}

/**
 * The certificate's transfer of a paid sale, a chain operation (`settle:<sale id>`): ArtMarket.settle
 * moves it from the seller's wallet to the buyer's (a custodial seller approves the market first,
 * gaslessly) and refuses a second settlement of a sale id. Confirmed when the indexer (or, while it
 * lags, the receipt) shows SaleSettled: the sale completes with the event's royalty, its purchase
 * completes, the listing is sold. A transfer failed for good cancels the listing and refunds the
 * charge. The same path returns a refunded sale's certificate (`return:<dispute id>`).
 */
export class Settlements {
  constructor(private readonly deps: SettlementDeps) {}

  /** The chain operation kind of certificate transfers through ArtMarket.settle. */
  readonly kind: ChainOperationKind<Settlement> = {
    kind: SETTLE_OPERATION,
    abi: artMarketAbi,
    maxAttempts: 8,
    retryBaseMs: 2_000,
    send: (op, ctx) => this.send(op, ctx),
    settled: (err) => isRevertWith(err, "ArtMarketAlreadySettled"),
    readIndexed: async (fromBlock, toBlock) => (await this.deps.views.inBlocks(fromBlock, toBlock)).map(keyed),
    lookupIndexed: async (ops) => (await this.deps.views.bySaleIds(ops.map((op) => payloadOf(op).sale_id))).map(keyed),
    readFromChain: (ops) => this.fromReceipts(ops),
    onConfirmed: (trx, confirmed) => this.onSettled(trx, confirmed.map((c) => c.facts)),
    onFailed: (trx, op, reason) => this.onFailed(trx, payloadOf(op), reason),
  };

  /** Requests the transfer of a sale just paid, in the transaction that records its charge. */
  async request(trx: Transaction<Database>, sale: Sale): Promise<void> {
    const seller = await this.deps.users.findByWallet(trx, sale.seller_wallet);
    const payload: SettlePayload = {
      sale_id: sale.id,
      token_id: sale.token_id.toString(),
      from: sale.seller_wallet as Address,
      to: sale.buyer_wallet as Address,
      price_cents: sale.price_cents.toString(),
      from_custody_index: custodyIndexOf(seller, sale.seller_wallet),
    };
    await this.deps.operations.request(trx, { key: settleKey(sale.id), kind: SETTLE_OPERATION, payload: { ...payload } });
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

  private async send(op: ChainOperation, ctx: SendContext): Promise<void> {
    const p = payloadOf(op);
    const market = this.deps.chain.market;
    if (!market) throw new ChainOperationFailure("transient", "ART_MARKET_ADDRESS is not configured");
    if (p.from_custody_index !== null) await this.approveForCustodial(p.from, p.from_custody_index, market);
    await this.deps.relayer.write({
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
  private async fromReceipts(ops: ChainOperation[]): Promise<KeyedFacts<Settlement>[]> {
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
    const { purchases, users } = this.deps;
    const sale = await repo.lock(trx, s.saleId);
    if (!sale || sale.status !== "paid") return;
    // ERC-2981 pays the artist on secondary sales: a primary sale (the receiver sells) carries none.
    const royaltyApplies = s.royaltyCents > 0n && s.royaltyReceiver !== sale.seller_wallet;
    const royaltyCents = royaltyApplies ? s.royaltyCents : 0n;
    const feeCents = (await purchases.find(trx, sale.id))!.fee_cents;
    const payoutCents = payoutOf(sale.price_cents, feeCents, royaltyCents);
    const completed = (await repo.move(trx, sale.id, ["paid"], "completed"))!;
    const royaltyRecipient = royaltyApplies ? await users.findByWallet(trx, s.royaltyReceiver) : undefined;
    const purchase = (await purchases.complete(trx, sale.id, {
      royaltyCents,
      payoutCents,
      payouts: royaltyApplies ? [{ amountCents: royaltyCents, recipientId: royaltyRecipient?.id ?? null, recipientWallet: s.royaltyReceiver }] : [],
    }))!;
    const figures = { feeCents, royaltyCents, payoutCents, royaltyReceiver: royaltyApplies ? s.royaltyReceiver : null, royaltyRecipientId: royaltyRecipient?.id ?? null, txHash: s.txHash, completedAt: purchase.completed_at! };
    await finishSale(this.deps, trx, completed, figures, appends);
  }

  /**
   * The transfer failed for good (the seller's wallet no longer holds the token, or an external
   * wallet withdrew its approval): the sale is `settlement_failed`, the listing cancelled, an offer
   * `payment_failed`, and the charge is refunded by a job (the purchase records why).
   */
  private async onFailed(trx: Transaction<Database>, p: SettlePayload, reason: string): Promise<void> {
    if (p.sale_id.startsWith(RETURN_PREFIX)) {
      await disputes.endReturn(trx, p.sale_id.slice(RETURN_PREFIX.length), "not_possible");
      return;
    }
    const sale = await repo.move(trx, p.sale_id, ["paid"], "settlement_failed");
    if (!sale) return;
    await listings.moveBySale(trx, sale.listing_id, "cancelled", "pending_payment");
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
    const dispute = await disputes.endReturn(trx, disputeId, "returned");
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
}

function keyed(s: Settlement): KeyedFacts<Settlement> {
  return { key: settleKey(s.saleId), facts: s };
}

function payloadOf(op: ChainOperation): SettlePayload {
  return op.payload as unknown as SettlePayload;
}
