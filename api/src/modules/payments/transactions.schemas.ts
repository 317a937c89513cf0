import { centsToUsd, usdValue } from "../../lib/money.ts";
import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { idOf, timestamp } from "../../lib/schema.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import { z } from "../../openapi/zod.ts";
import type { TransactionRow } from "./payments.tables.ts";

/**
 * The Transaction resource the money records answer as (`transactions`, written only by the
 * purchase lifecycle, purchases.service.ts; read through PaymentsService). Who may see one: its buyer,
 * seller and recipient, and admins.
 */

export const TRANSACTION_TYPES = ["sale", "royalty_payout", "share_purchase", "ticket_purchase"] as const;
export const TRANSACTION_STATUSES = ["pending", "completed", "failed", "refunded"] as const;

export function isPartyOf(t: TransactionRow, userId: string): boolean {
  return t.buyer_id === userId || t.seller_id === userId || t.recipient_id === userId;
}

export const transactionSchema = z
  .object({
    tx_id: idOf("transaction"),
    type: z.enum(TRANSACTION_TYPES).openapi({ description: "sale (buyer and seller), royalty_payout (to the artist, on a secondary sale), share_purchase, ticket_purchase" }),
    artwork_id: idOf("artwork").nullable(),
    amount_usd: usdValue.openapi({ description: "What was paid (a sale's price, a royalty payout's amount)" }),
    currency: z.literal("USD"),
    status: z.enum(TRANSACTION_STATUSES).openapi({ description: "pending -> completed / failed / refunded" }),
    buyer_id: idOf("user").nullable().openapi({ description: "Null when an on-chain buyer's wallet belongs to no account" }),
    buyer_wallet: z.string().nullable().openapi({ description: "The wallet that paid on-chain (`payment_method: onchain`); null for a card" }),
    payment_method: z.enum(["card", "onchain"]).openapi({ description: "card: charged by the card processor; onchain: paid by a wallet in the payment token through the exchange contract (docs/integrators/onchain-purchases.md)" }),
    seller_id: idOf("user").nullable(),
    recipient_id: idOf("user").nullable().openapi({ description: "Who receives the money: the seller of a sale, the artist of a royalty payout" }),
    related_tx_id: idOf("transaction").nullable().openapi({ description: "A royalty payout's sale" }),
    platform_fee_usd: usdValue.openapi({ description: "The platform's fee kept from a sale (PLATFORM_FEE_BPS)" }),
    royalty_usd: usdValue.openapi({ description: "The artist's royalty kept from a sale (ERC-2981 royaltyInfo of the certificate), 0 on a primary sale" }),
    payout_usd: usdValue.nullable().openapi({ description: "What the recipient is paid: a sale's price net of fee and royalty (the disbursement); null until completed" }),
    on_chain_tx: z.string().nullable().openapi({ description: "The transaction that moved the certificate (a sale) on-chain: ArtMarket's settlement of a card sale, the wallet's fill of an on-chain one" }),
    failure_reason: z.string().nullable(),
    created_at: timestamp,
    completed_at: timestamp.nullable(),
    refunded_at: timestamp.nullable(),
  })
  .openapi("Transaction");

export const transactionListSchema = z.object({ data: z.array(transactionSchema), pagination: paginationSchema }).openapi("TransactionList");

export const transactionsQuery = z.object({
  type: z.enum(TRANSACTION_TYPES).optional(),
  status: z.enum(TRANSACTION_STATUSES).optional(),
  role: z.enum(["buyer", "seller", "recipient"]).optional().openapi({ description: "Only those where you are the buyer, the seller or the recipient (default: any)" }),
  ...paginationQuery(),
});

/** A transaction as its resource; `chainTx` is its effect's chain transaction (transaction-reads.ts). */
export function toTransaction(t: TransactionRow, chainTx: string | null): z.infer<typeof transactionSchema> {
  return {
    tx_id: t.id,
    type: t.type,
    artwork_id: t.artwork_id,
    amount_usd: centsToUsd(t.amount_cents),
    currency: "USD",
    status: t.status,
    buyer_id: t.buyer_id,
    buyer_wallet: t.payment_method === "onchain" ? t.buyer_wallet : null,
    payment_method: t.payment_method,
    seller_id: t.seller_id,
    recipient_id: t.recipient_id,
    related_tx_id: t.parent_id,
    platform_fee_usd: centsToUsd(t.fee_cents),
    royalty_usd: centsToUsd(t.royalty_cents),
    payout_usd: t.payout_cents === null ? null : centsToUsd(t.payout_cents),
    on_chain_tx: chainTx,
    failure_reason: t.failure_reason,
    created_at: iso(t.created_at),
    completed_at: isoOrNull(t.completed_at),
    refunded_at: isoOrNull(t.refunded_at),
  };
}
