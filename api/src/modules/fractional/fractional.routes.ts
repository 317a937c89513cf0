import { paymentDeclinedProblem } from "../../http/problem.ts";
import { type ApiRouter, Reply } from "../../http/route.ts";
import * as s from "./fractional.schemas.ts";
import type { FractionalService } from "./fractional.service.ts";

const tags = ["Fractional"];

export function registerFractionalRoutes(api: ApiRouter, fractional: FractionalService): void {
  api.route({
    method: "post",
    path: "/v1/fractional/artworks",
    operationId: "fractionalizeArtwork",
    summary: "Fractionalize an artwork",
    description: [
      "The on-chain owner of a certified artwork's certificate (or an admin) splits it into `total_shares` shares at `price_per_share_usd`: the ArtShares class is created on-chain with that cap, once. Its proceeds go to that owner (`owner_id`).",
      "201 when the class is on-chain within a short wait (`status: active`), 202 while `pending`. Refused: an artwork not certified on-chain or listed whole in the marketplace (409 `invalid_state`), fractionalized already (409 `conflict`), another user (403), an unknown artwork (400). A fractionalized artwork cannot be listed whole.",
    ].join("\n\n"),
    tags,
    auth: { scope: "fractional:write" },
    body: s.fractionalizeSchema,
    errors: [409, 503],
    status: 201,
    response: s.fractionalArtworkSchema,
    alternatives: { 202: { description: "The share class is being created on-chain", schema: s.fractionalArtworkSchema } },
    statusOf: (r: { status: string }) => (r.status === "pending" ? 202 : 201),
    handler: ({ auth, body, transaction }) => fractional.fractionalize({ userId: auth.userId, role: auth.role }, body, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/fractional/artworks",
    operationId: "listFractionalArtworks",
    summary: "Fractional artworks",
    description: "Artworks whose shares are for sale (active share classes), newest first.",
    tags,
    auth: { public: true },
    query: s.fractionalListQuery,
    response: s.fractionalListSchema,
    handler: ({ query }) => fractional.list(query),
  });

  api.route({
    method: "get",
    path: "/v1/fractional/artworks/:id",
    operationId: "getFractionalArtwork",
    summary: "A fractional artwork",
    description: "`:id` is the artwork's id; any status.",
    tags,
    auth: { public: true },
    params: s.artworkIdParams,
    errors: [404],
    response: s.fractionalArtworkSchema,
    handler: ({ params }) => fractional.get(params.id),
  });

  api.route({
    method: "get",
    path: "/v1/fractional/:id/shares",
    operationId: "listShareholders",
    summary: "Shareholders",
    description:
      "`:id` is the artwork's id. Read from the indexer's on-chain balances (the chain is the truth: shares a wallet transfers directly move with them), largest first, each joined to its user by wallet (`user_id` null for a wallet no user has).",
    tags,
    auth: { public: true },
    params: s.artworkIdParams,
    query: s.fractionalListQuery,
    errors: [404],
    response: s.shareholdingListSchema,
    handler: ({ params, query }) => fractional.shareholders(params.id, query),
  });

  api.route({
    method: "get",
    path: "/v1/fractional/metadata/:id.json",
    operationId: "getShareTokenMetadata",
    summary: "ERC-1155 metadata of a share token (ArtShares `uri(id)`)",
    description: [
      "The URI ArtShares' `uri(id)` answers, `…/v1/fractional/metadata/{id}.json`, where wallets and marketplaces put the token id as 64 lower-case hex digits without `0x` (ERC-1155); `0x`-prefixed hex and decimal ids are read too. Share token `n` is the share class of certificate `n`.",
      "Its artwork (id, title, artist, image), the certificate's token id and the class: shares minted (`total_supply`), `cap`, availability and price. Public and cacheable (ETag). 404 for a token id without a share class on-chain.",
    ].join("\n\n"),
    tags,
    auth: { public: true },
    params: s.shareTokenParams,
    errors: [404],
    response: s.shareMetadataSchema,
    handler: ({ params }) => fractional.shareMetadata(params.id),
  });

  api.route({
    method: "post",
    path: "/v1/fractional/:id/purchase",
    operationId: "buyShares",
    summary: "Buy shares",
    description: [
      "Reserves `shares_quantity` shares atomically (never more than the cap, whatever the concurrency: more than available is 409 `insufficient_shares` and nothing is charged), charges `payment_method_id`, and mints the shares to your wallet on-chain (a purchase mints once). Send an `Idempotency-Key`.",
      "201 `confirmed` when the indexer has the mint within a short wait (FRACTIONAL_PURCHASE_WAIT_MS), 202 `pending` otherwise (`GET /v1/fractional/purchases/:id`; `fractional.purchase_confirmed` to you and the owner), 402 `payment_declined` when the card was declined (the shares are released). A mint that fails for good makes the purchase `failed` (answered 201 with that status when it happens within the wait), releases the shares and refunds the charge.",
    ].join("\n\n"),
    tags,
    auth: { scope: "fractional:write" },
    params: s.artworkIdParams,
    body: s.purchaseSchema,
    errors: [402, 404, 409, 503],
    status: 201,
    response: s.fractionalPurchaseSchema,
    alternatives: { 202: { description: "Paid or being paid; the mint is under way", schema: s.fractionalPurchaseSchema } },
    // The answer stored with the reservation (what a crash before the wait ends leaves to replay).
    statusOf: (p: { status: string }) => (p.status === "pending" ? 202 : 201),
    handler: async ({ auth, params, body, transaction, res }) => {
      const { purchase, failureCode, paymentFailed } = await fractional.purchase({ userId: auth.userId, role: auth.role }, params.id, body, transaction);
      if (paymentFailed) {
        return new Reply(402, paymentDeclinedProblem(res, purchase.failure_reason ?? "The payment failed", failureCode, { purchase_id: purchase.purchase_id }));
      }
      // Confirmed, or failed at the mint (refunded: `status` failed, `failure_reason` says so): 201; under way: 202.
      return new Reply(purchase.status === "pending" ? 202 : 201, purchase);
    },
  });

  api.route({
    method: "get",
    path: "/v1/fractional/purchases/:id",
    operationId: "getSharePurchase",
    summary: "A share purchase",
    description: "Its buyer and admins; anyone else 404.",
    tags,
    auth: { scope: "fractional:read" },
    params: s.purchaseIdParams,
    errors: [404],
    response: s.fractionalPurchaseSchema,
    handler: ({ auth, params }) => fractional.getPurchase({ userId: auth.userId, role: auth.role }, params.id),
  });
}
