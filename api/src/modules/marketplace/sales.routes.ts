import { paymentDeclinedProblem } from "../../http/problem.ts";
import { ApiError } from "../../lib/errors.ts";
import { type ApiRouter, Reply } from "../../http/route.ts";
import { transactionListSchema, transactionSchema, transactionsQuery } from "../payments/transactions.schemas.ts";
import type { DisputesService } from "./disputes.service.ts";
import type { ExchangeService } from "./exchange.service.ts";
import { listingIdParams, onchainPurchaseSchema, onchainPurchaseStepsSchema } from "./marketplace.schemas.ts";
import * as s from "./offers.schemas.ts";
import type { OffersService } from "./offers.service.ts";
import type { SalesService } from "./sales.service.ts";

const tags = ["Marketplace"];

/** Buy-now, offers, transactions and disputes (the sale's path from reservation to the certificate on-chain). */
export function registerSalesRoutes(api: ApiRouter, services: { sales: SalesService; offers: OffersService; disputes: DisputesService; exchange: ExchangeService }): void {
  const { sales, offers, disputes, exchange } = services;

  api.route({
    method: "post",
    path: "/v1/marketplace/listings/:id/purchase",
    operationId: "buyListing",
    summary: "Buy a listing at its price",
    description: [
      "Reserves the listing (`pending_payment`), charges `payment_method_id` (one of your saved methods or a test card id; another user's method is 404) and transfers the certificate on-chain from the seller's wallet to yours through the ArtMarket contract, exactly once. Send an `Idempotency-Key`: a retry answers the same sale and never charges twice.",
      "Answers the sale's Transaction: 201 when it completed within a short wait (the indexer has the transfer), 202 while the payment or the transfer is under way (follow `GET /v1/marketplace/transactions/:id` or the `payment.completed` webhook), 402 `payment_declined` when the card was declined (the listing is active again).",
      "Refused with 409 `invalid_state` when the listing is not active (two buyers at once: exactly one sale, the other is refused), is your own, or its certificate left the seller's wallet, also when a wallet's fill of the listing's order on-chain won the race (with `transaction_id`: the sale failed, and a charge is refunded).",
    ].join("\n\n"),
    tags,
    auth: { scope: "marketplace:write" },
    params: listingIdParams,
    body: s.purchaseSchema,
    errors: [402, 404, 409, 503],
    status: 201,
    response: transactionSchema,
    alternatives: { 202: { description: "The sale is under way (status pending)", schema: transactionSchema } },
    // The answer stored with the reservation (what a crash before the wait ends leaves to replay).
    statusOf: (t: { status: string }) => (t.status === "pending" ? 202 : 201),
    handler: async ({ auth, params, body, transaction, res }) => {
      const outcome = await sales.purchase({ userId: auth.userId, role: auth.role }, params.id, body, transaction);
      const t = outcome.transaction;
      if (outcome.soldOnchain) {
        throw new ApiError(409, "invalid_state", `${t.failure_reason ?? "A wallet bought the listing on-chain first"}: your card is not charged, or the charge is refunded`, { transaction_id: t.tx_id });
      }
      if (outcome.paymentFailed) {
        return new Reply(402, paymentDeclinedProblem(res, t.failure_reason ?? "The payment failed", outcome.failureCode, { transaction_id: t.tx_id }));
      }
      // Completed, or failed at the transfer (refunded: `status` failed, `failure_reason` says so): 201; under way: 202.
      return new Reply(t.status === "pending" ? 202 : 201, t);
    },
  });

  api.route({
    method: "post",
    path: "/v1/marketplace/listings/:id/onchain-purchase",
    operationId: "onchainPurchaseSteps",
    summary: "Steps to buy a listing on-chain from a wallet",
    description: [
      "The transactions a wallet sends to buy the listing itself, paying in the payment token (a 6-decimal USD stablecoin) through the ArtExchange contract, with no account and no other API call: `approve` the exchange for the price when the wallet's allowance is short, then `fill` the order the platform signed for the listing. The fill pays the royalty, the platform's fee and the seller and moves the certificate to the wallet, in one transaction; it is valid for this price until `expires_at`, once.",
      "The sale appears as soon as the indexer has the fill: a `sale` transaction with `payment_method: onchain` (for the seller, and for the buyer when the wallet is an account's), the listing `sold`, provenance `sold`, `payment.completed`. One sale per listing: a card purchase started meanwhile cancels the order on-chain, and a fill mined first wins over a card purchase (which is refunded). A guide: docs/integrators/onchain-purchases.md.",
      "Refused with 409 `invalid_state` when the listing is not active, the buyer's wallet is the seller's, the certificate left the seller's wallet, or the seller's own wallet has not approved the exchange (reason `seller_not_approved`); 503 when this deployment has no exchange or a custodial seller's approval is still on its way (Retry-After).",
    ].join("\n\n"),
    tags,
    auth: { public: true },
    params: listingIdParams,
    body: onchainPurchaseSchema,
    errors: [404, 409, 503],
    response: onchainPurchaseStepsSchema,
    handler: ({ params, body }) => exchange.steps(params.id, body.buyer),
  });

  api.route({
    method: "post",
    path: "/v1/marketplace/offers",
    operationId: "createOffer",
    summary: "Make an offer",
    description: [
      "On an active listing that accepts offers and is not yours; `offer_amount_usd` > 0; `expires_in_hours` 1..720 (default 72). One pending offer per buyer and listing (a second is 409 `conflict`). `payment_method_id` is checked now and charged only if the seller accepts.",
      "The seller is notified (`offer.created`, to the buyer and the seller). Refusals change nothing: an unknown listing is 400, a listing not active or not accepting offers, or your own, is 409 `invalid_state`.",
    ].join("\n\n"),
    tags,
    auth: { scope: "marketplace:write" },
    body: s.offerCreateSchema,
    errors: [404, 409],
    status: 201,
    response: s.offerSchema,
    handler: ({ auth, body, transaction }) => offers.create({ userId: auth.userId, role: auth.role }, body, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/marketplace/offers",
    operationId: "listOffers",
    summary: "Your offers",
    description: "Offers you made (`role=buyer`) or received (`role=seller`), both by default; filters `status`, `listing_id`. Newest first.",
    tags,
    auth: { scope: "marketplace:read" },
    query: s.offersQuery,
    response: s.offerListSchema,
    handler: ({ auth, query }) => {
      const { page, limit, ...filter } = query;
      return offers.list({ userId: auth.userId, role: auth.role }, filter, { page, limit });
    },
  });

  api.route({
    method: "get",
    path: "/v1/marketplace/offers/:id",
    operationId: "getOffer",
    summary: "An offer",
    description: "Its buyer, its seller and admins; anyone else 404.",
    tags,
    auth: { scope: "marketplace:read" },
    params: s.offerIdParams,
    errors: [404],
    response: s.offerSchema,
    handler: ({ auth, params }) => offers.get({ userId: auth.userId, role: auth.role }, params.id),
  });

  const move = (action: "accept" | "reject" | "withdraw", summary: string, description: string) =>
    api.route({
      method: "post",
      path: `/v1/marketplace/offers/:id/${action}`,
      operationId: `${action}Offer`,
      summary,
      description: `${description}\n\nOnly a pending offer that has not expired moves: otherwise 409 \`invalid_state\`, and nothing changes. Someone who is not a party gets 404; the other party 403.`,
      tags,
      auth: { scope: "marketplace:write" },
      params: s.offerIdParams,
      errors: [404, 409],
      response: s.offerSchema,
      handler: ({ auth, params, transaction }) => offers[action]({ userId: auth.userId, role: auth.role }, params.id, transaction),
    });
  move(
    "accept",
    "Accept an offer (seller)",
    "The offer becomes `accepted` (`offer.accepted`: payment collection starts) and the listing `pending_payment`; the buyer's payment method is charged and the certificate moves on-chain to the buyer, then the offer is `completed` (`payment.completed`) or, on a decline, `payment_failed` with the listing active again. The listing must be active: two accepts on one listing, or an accept during a buy-now, make exactly one sale.",
  );
  move("reject", "Reject an offer (seller)", "The offer becomes `rejected` (`offer.rejected` to the buyer and the seller).");
  move("withdraw", "Withdraw your offer (buyer)", "The offer becomes `withdrawn`.");

  api.route({
    method: "get",
    path: "/v1/marketplace/transactions",
    operationId: "listTransactions",
    summary: "Your transactions",
    description:
      "The transactions you are a party of: sales you bought or sold, royalty payouts you received as the artist (and later share and ticket purchases). Filters `type`, `status`, `role` (buyer, seller, recipient). Newest first.",
    tags,
    auth: { scope: "marketplace:read" },
    query: transactionsQuery,
    response: transactionListSchema,
    handler: ({ auth, query }) => {
      const { page, limit, ...filter } = query;
      return sales.listTransactions(auth.userId, filter, { page, limit });
    },
  });

  api.route({
    method: "get",
    path: "/v1/marketplace/transactions/:id",
    operationId: "getTransaction",
    summary: "A transaction",
    description: "Its buyer, seller, recipient and admins; anyone else 404.",
    tags,
    auth: { scope: "marketplace:read" },
    params: s.transactionIdParams,
    errors: [404],
    response: transactionSchema,
    handler: ({ auth, params }) => sales.getTransaction({ userId: auth.userId, role: auth.role }, params.id),
  });

  api.route({
    method: "post",
    path: "/v1/marketplace/transactions/:id/disputes",
    operationId: "createDispute",
    summary: "Dispute a sale (buyer)",
    description: `The buyer of a completed sale, within 14 days of its completion; one open dispute per sale (409 \`conflict\`). A sale not completed, or past the window, is 409 \`invalid_state\`. The seller and admins get 403, anyone else 404. An admin resolves it (\`POST /v1/admin/disputes/:id/resolve\`).`,
    tags,
    auth: { scope: "marketplace:write" },
    params: s.transactionIdParams,
    body: s.disputeCreateSchema,
    errors: [404, 409],
    status: 201,
    response: s.disputeSchema,
    handler: ({ auth, params, body, transaction }) => disputes.open({ userId: auth.userId, role: auth.role }, params.id, body, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/marketplace/disputes/:id",
    operationId: "getDispute",
    summary: "A dispute",
    description: "Its buyer, its seller and admins; anyone else 404.",
    tags,
    auth: { scope: "marketplace:read" },
    params: s.disputeIdParams,
    errors: [404],
    response: s.disputeSchema,
    handler: ({ auth, params }) => disputes.get({ userId: auth.userId, role: auth.role }, params.id),
  });

  api.route({
    method: "get",
    path: "/v1/admin/disputes",
    operationId: "listDisputes",
    summary: "Disputes (admin)",
    description: "Every dispute, newest first; filter `status` (open, resolved).",
    tags: ["Admin"],
    auth: { scope: "admin:read", roles: ["admin"] },
    query: s.disputesQuery,
    response: s.disputeListSchema,
    handler: ({ query }) => {
      const { page, limit, ...filter } = query;
      return disputes.list(filter, { page, limit });
    },
  });

  api.route({
    method: "post",
    path: "/v1/admin/disputes/:id/resolve",
    operationId: "resolveDispute",
    summary: "Resolve a dispute (admin)",
    description:
      "`refund`: the charge is refunded (by a job: `refund_status` pending -> refunded), the sale's transaction and its royalty payout become `refunded`, and when the buyer's wallet is custodial the certificate goes back to the seller on-chain (`certificate_return`). `reject`: the sale stands. A resolved dispute is 409 `invalid_state`.",
    tags: ["Admin"],
    auth: { scope: "admin:write", roles: ["admin"] },
    params: s.disputeIdParams,
    body: s.disputeResolveSchema,
    errors: [404, 409],
    response: s.disputeSchema,
    handler: ({ auth, params, body, transaction }) => disputes.resolve({ userId: auth.userId, role: auth.role }, params.id, body, transaction),
  });
}
