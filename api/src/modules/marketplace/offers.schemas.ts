import { chargeableUsd, usdValue } from "../../lib/money.ts";
import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { exampleId, idOf, idParam, plainString, text, timestamp } from "../../lib/schema.ts";
import { z } from "../../openapi/zod.ts";

export const OFFER_STATUSES = ["pending", "accepted", "completed", "payment_failed", "rejected", "withdrawn", "expired"] as const;

export const offerIdParams = z.object({ id: idParam("offer") });

export const offerCreateSchema = z
  .strictObject({
    listing_id: plainString({ min: 1, max: 64 }).openapi({ example: "lst_01JD3Y5V0Q3G7W7J6T4N4C2X1M", description: "An active listing that accepts offers, not yours" }),
    offer_amount_usd: chargeableUsd,
    message: text({ max: 1000, multiline: true }).optional().openapi({ description: "A note to the seller (at most 1,000 characters)" }),
    expires_in_hours: z.number().int().min(1).max(720).default(72).openapi({ description: "1..720, default 72: the offer expires then (`offer.expired`)" }),
    payment_method_id: plainString({ min: 1, max: 64 }).openapi({
      example: "pm_card_visa",
      description: "Charged only when the seller accepts: one of your saved methods (`pm_…`) or a test card id",
    }),
  })
  .openapi("OfferCreate", {
    example: { listing_id: exampleId("listing"), offer_amount_usd: 11000, message: "Would you take 11,000?", expires_in_hours: 48, payment_method_id: exampleId("paymentMethod") },
  });

export type OfferCreate = z.infer<typeof offerCreateSchema>;

export const offerSchema = z
  .object({
    offer_id: idOf("offer"),
    listing_id: idOf("listing"),
    buyer_id: idOf("user"),
    seller_id: idOf("user"),
    offer_amount_usd: usdValue,
    currency: z.literal("USD"),
    message: z.string().nullable(),
    status: z.enum(OFFER_STATUSES).openapi({
      description: "pending -> accepted -> completed | payment_failed; pending -> rejected (seller, or the listing sold or was cancelled) | withdrawn (buyer) | expired",
    }),
    expires_at: timestamp,
    created_at: timestamp,
    decided_at: timestamp.nullable().openapi({ description: "When it left pending" }),
    transaction_id: idOf("transaction").nullable().openapi({ description: "The sale an accepted offer started" }),
  })
  .openapi("Offer");

export const offersQuery = z.object({
  role: z.enum(["buyer", "seller"]).optional().openapi({ description: "Offers you made (buyer) or received (seller); default both" }),
  status: z.enum(OFFER_STATUSES).optional(),
  listing_id: plainString({ max: 64 }).optional(),
  ...paginationQuery(),
});

export type OffersQuery = z.infer<typeof offersQuery>;

export const offerListSchema = z.object({ data: z.array(offerSchema), pagination: paginationSchema }).openapi("OfferList");

export const purchaseSchema = z
  .strictObject({
    payment_method_id: plainString({ min: 1, max: 64 }).openapi({ example: "pm_card_visa", description: "One of your saved methods (`pm_…`) or a test card id" }),
  })
  .openapi("ListingPurchase", { example: { payment_method_id: exampleId("paymentMethod") } });

export const transactionIdParams = z.object({ id: idParam("transaction") });
export const disputeIdParams = z.object({ id: idParam("dispute") });

export const DISPUTE_STATUSES = ["open", "resolved"] as const;

export const disputeCreateSchema = z
  .strictObject({ reason: text({ min: 1, max: 2000, multiline: true }).openapi({ description: "What is wrong with the sale (at most 2,000 characters)" }) })
  .openapi("DisputeCreate", { example: { reason: "The canvas arrived with a tear along the lower edge." } });

export const disputeResolveSchema = z
  .strictObject({
    resolution: z.enum(["refund", "reject"]).openapi({
      description:
        "refund: the payment is refunded, the transaction (and its royalty payout) `refunded`, and the certificate returned on-chain from the buyer's custodial wallet to the seller; refused (409 `invalid_state` with `reason` `shares_issued`, `resold` or `external_wallet`) when that return is impossible, unless `force`. reject: nothing changes",
    }),
    note: text({ max: 2000, multiline: true }).optional().openapi({ description: "Why; required with `force`" }),
    force: z.boolean().optional().openapi({ description: "With `refund`: refund even though the certificate cannot go back (it stays where it is; `certificate_return` `waived`); recorded in the audit ledger with the note" }),
  })
  .openapi("DisputeResolve", { example: { resolution: "refund", note: "Damage confirmed from the buyer's photos." } });

export const disputeSchema = z
  .object({
    dispute_id: idOf("dispute"),
    transaction_id: idOf("transaction"),
    buyer_id: idOf("user"),
    seller_id: idOf("user"),
    reason: z.string(),
    status: z.enum(DISPUTE_STATUSES).openapi({ description: "open -> resolved" }),
    resolution: z.enum(["refund", "reject"]).nullable(),
    resolution_note: z.string().nullable(),
    refund_status: z.enum(["pending", "refunded"]).nullable().openapi({ description: "A refund's progress at the payment processor" }),
    certificate_return: z.enum(["pending", "returned", "not_possible", "waived"]).nullable().openapi({
      description: "A refund's return of the certificate to the seller on-chain: pending -> returned (or not_possible when the transfer failed); waived: a forced refund left it with the buyer",
    }),
    refund_forced: z.boolean().openapi({ description: "The refund was forced by an admin without the certificate's return" }),
    created_at: timestamp,
    resolved_at: timestamp.nullable(),
  })
  .openapi("Dispute");

export const disputesQuery = z.object({ status: z.enum(DISPUTE_STATUSES).optional(), ...paginationQuery(50, 200) });

export const disputeListSchema = z.object({ data: z.array(disputeSchema), pagination: paginationSchema }).openapi("DisputeList");
