import type { Transaction } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import { centsToUsd } from "../../lib/money.ts";
import { iso } from "../../lib/time.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { ExchangeService } from "./exchange.service.ts";
import type { LedgerAppend } from "../ledger/ledger.service.ts";
import * as listings from "./marketplace.repository.ts";
import type { Sale } from "./marketplace.tables.ts";
import * as offers from "./offers.repository.ts";

/** What a completed sale's records say of its money (the sale's transaction holds it; these are its figures at completion). */
export interface SaleFigures {
  feeCents: bigint;
  royaltyCents: bigint;
  payoutCents: bigint;
  royaltyReceiver: string | null;
  royaltyRecipientId: string | null;
  txHash: string;
  completedAt: Date;
  /** When the certificate moved (a fill's block time); now by default. */
  at?: Date;
}

export interface SaleRecordsDeps {
  artworks: ArtworksService;
  exchange: Pick<ExchangeService, "cancelOpenOrders">;
}

/**
 * What every completed sale does, paid by card or on-chain, in the transaction that completes it:
 * the listing sold (its orders a wallet could still fill cancelled on-chain), an accepted offer
 * completed and the listing's other pending offers rejected, provenance `sold`, `payment.completed`
 * to the buyer and the seller, and the sale's ledger entry.
 */
export async function finishSale(deps: SaleRecordsDeps, trx: Transaction<Database>, sale: Sale, f: SaleFigures, appends: LedgerAppend[]): Promise<void> {
  // A wallet's fill mined before the listing's cancellation here (by its seller, or by a card sale's
  // failed transfer) is still its sale: the chain's answer wins, and the cancellation is undone.
  await listings.moveBySale(trx, sale.listing_id, "sold");
  await deps.exchange.cancelOpenOrders(trx, sale.listing_id, sale.order_hash);
  if (sale.offer_id) await offers.move(trx, sale.offer_id, "accepted", "completed");
  // The listing sold: its other pending offers are rejected (docs/decisions.md#states).
  for (const offer of await offers.rejectPendingOf(trx, sale.listing_id, null)) {
    await recordOfferEvent(trx, "offer.rejected", offer, { reason: "listing_sold" });
    appends.push(offerLedgerEntry("offer.rejected", offer, null, { reason: "listing_sold" }));
  }
  await deps.artworks.recordMarketplaceProvenance(trx, {
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

/** What the seller is paid of a sale: its price net of fee and royalty, never below zero. */
export function payoutOf(priceCents: bigint, feeCents: bigint, royaltyCents: bigint): bigint {
  const net = priceCents - feeCents - royaltyCents;
  return net > 0n ? net : 0n;
}

/** The sale's parties that are users (an on-chain buyer may have no account). */
export function partiesOf(sale: Pick<Sale, "buyer_id" | "seller_id">): string[] {
  return [sale.buyer_id, sale.seller_id].filter((id): id is string => id !== null);
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
