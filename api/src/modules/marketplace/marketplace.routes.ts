import type { ApiRouter } from "../../http/route.ts";
import * as s from "./marketplace.schemas.ts";
import type { MarketplaceService } from "./marketplace.service.ts";

const tags = ["Marketplace"];

export function registerMarketplaceRoutes(api: ApiRouter, marketplace: MarketplaceService): void {
  api.route({
    method: "post",
    path: "/v1/marketplace/listings",
    operationId: "createListing",
    summary: "List a certified artwork for sale",
    description: [
      "The seller must be the current on-chain owner of the artwork's certificate, as the indexer shows it (not a column of the artwork): another caller is 403 `forbidden`; an artwork not certified on-chain is 409 `invalid_state`; an unknown artwork is 400.",
      "One open listing per artwork: a second is 409 `conflict` (also when two arrive at once: exactly one is created). The listing's `listed` entry appears in the artwork's provenance.",
      "Only custodial wallets can list for now: a seller signed in with Ethereum (an external wallet) would first approve the platform's settlement contract on-chain, which does not exist yet, and is refused with 409 `invalid_state`.",
    ].join("\n\n"),
    tags,
    auth: { scope: "marketplace:write" },
    body: s.listingCreateSchema,
    errors: [409],
    status: 201,
    response: s.listingSchema,
    handler: ({ auth, body, transaction }) => marketplace.createListing({ userId: auth.userId, role: auth.role }, body, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/marketplace/listings",
    operationId: "listListings",
    summary: "List active listings",
    description: "Active listings only (of artworks not deleted). Filters: `price_min`, `price_max` (dollars, inclusive), `medium` (substring), `artist_id`; `sort` = `newest` (default) | `oldest` | `price_asc` | `price_desc`.",
    tags,
    auth: { public: true },
    query: s.listingsQuery,
    response: s.listingListSchema,
    handler: ({ query }) => {
      const { page, limit, ...filter } = query;
      return marketplace.list(filter, { page, limit });
    },
  });

  api.route({
    method: "get",
    path: "/v1/marketplace/listings/:id",
    operationId: "getListing",
    summary: "A listing",
    description: "Public, whatever its status: a cancelled or sold listing stays readable by id (with its `status`), as part of the artwork's history; only active ones are in the list.",
    tags,
    auth: { public: true },
    params: s.listingIdParams,
    errors: [404],
    response: s.listingSchema,
    handler: ({ params }) => marketplace.get(params.id),
  });

  api.route({
    method: "delete",
    path: "/v1/marketplace/listings/:id",
    operationId: "cancelListing",
    summary: "Cancel a listing",
    description:
      "The seller or an admin; another user is 403 `forbidden` (the listing is public, so its existence is no secret). Only an active listing can be cancelled: otherwise 409 `invalid_state`. Answers the listing with `status: cancelled`; the artwork's provenance gains `delisted`.",
    tags,
    auth: { scope: "marketplace:write" },
    params: s.listingIdParams,
    errors: [404, 409],
    response: s.listingSchema,
    handler: ({ auth, params }) => marketplace.cancel({ userId: auth.userId, role: auth.role }, params.id),
  });
}
