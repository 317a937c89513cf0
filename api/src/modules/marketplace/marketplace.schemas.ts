import { chargeableUsd, usdValue } from "../../lib/money.ts";
import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { exampleId, idOf, idParam, plainString, text, timestamp, walletAddress } from "../../lib/schema.ts";
import { z } from "../../openapi/zod.ts";

export const LISTING_STATUSES = ["active", "pending_payment", "sold", "cancelled"] as const;
export const LISTING_SORTS = ["newest", "oldest", "price_asc", "price_desc"] as const;

export const listingIdParams = z.object({ id: idParam("listing") });

export const listingCreateSchema = z
  .strictObject({
    artwork_id: plainString({ min: 1, max: 64 }).openapi({ example: "art_01JD3Y5V0Q3G7W7J6T4N4C2X1M", description: "A certified artwork whose certificate your wallet holds" }),
    price_usd: chargeableUsd,
    accepts_offers: z.boolean().openapi({ description: "Whether buyers may make offers below the price" }),
  })
  .openapi("ListingCreate", { example: { artwork_id: exampleId("artwork"), price_usd: 12500, accepts_offers: true } });

export type ListingCreate = z.infer<typeof listingCreateSchema>;

export const listingSchema = z
  .object({
    listing_id: idOf("listing"),
    artwork_id: idOf("artwork"),
    title: z.string().openapi({ description: "The artwork's title" }),
    seller_id: idOf("user"),
    price_usd: usdValue,
    currency: z.literal("USD"),
    accepts_offers: z.boolean(),
    listed_at: timestamp,
    status: z.enum(LISTING_STATUSES).openapi({ description: "active -> pending_payment -> sold; active -> cancelled" }),
  })
  .openapi("Listing");

export const listingsQuery = z
  .object({
    price_min: z.coerce.number().min(0).max(1e9).optional().openapi({ description: "US dollars, inclusive" }),
    price_max: z.coerce.number().min(0).max(1e9).optional().openapi({ description: "US dollars, inclusive" }),
    medium: text({ max: 200 }).optional().openapi({ description: "Case-insensitive substring of the artwork's medium" }),
    artist_id: plainString({ max: 64 }).optional().openapi({ description: "The artwork's artist" }),
    sort: z.enum(LISTING_SORTS).default("newest").openapi({ description: "newest (default), oldest, price_asc, price_desc" }),
    ...paginationQuery(),
  })
  .refine((v) => v.price_min === undefined || v.price_max === undefined || v.price_min <= v.price_max, {
    message: "price_min must not exceed price_max",
    path: ["price_min"],
  });

export type ListingsQuery = z.infer<typeof listingsQuery>;

export const listingListSchema = z.object({ data: z.array(listingSchema), pagination: paginationSchema }).openapi("ListingList");

export const onchainPurchaseSchema = z
  .strictObject({
    buyer: walletAddress.openapi({ description: "The wallet that will send the steps' transactions and receive the certificate" }),
  })
  .openapi("OnchainPurchaseRequest", { example: { buyer: "0x8ba1f109551bD432803012645Ac136ddd64DBA72" } });

const hex = z.string().regex(/^0x[0-9a-fA-F]*$/);

export const onchainPurchaseStepsSchema = z
  .object({
    listing_id: idOf("listing"),
    buyer: z.string().openapi({ description: "The buyer's wallet (EIP-55)" }),
    chain_id: z.number().int(),
    order: z
      .object({
        hash: hex.openapi({ description: "The EIP-712 hash of the order (ArtExchange.hashOrder): what `OrderFilled` and `OrderCancelled` name" }),
        exchange: z.string().openapi({ description: "The ArtExchange contract" }),
        currency: z.string().openapi({ description: "The payment token (a 6-decimal USD stablecoin)" }),
        price: z.string().openapi({ description: "The price in the payment token's base units (price_usd x 10^6), as a decimal string", example: "125000000000" }),
        price_usd: usdValue,
        fee_bps: z.number().int().openapi({ description: "The platform's fee in basis points, paid to the treasury out of the price" }),
        seller: z.string().openapi({ description: "The seller's wallet: the certificate's holder" }),
        token_id: z.string().openapi({ description: "The certificate's token id" }),
        signature: hex.openapi({ description: "The order's signature by the platform's order key" }),
      })
      .openapi({ description: "The order the fill step fills: valid for any buyer, once, until expires_at, at this price and fee" }),
    steps: z
      .array(
        z.object({
          id: z.enum(["approve", "fill"]),
          description: z.string(),
          tx: z.object({ to: z.string(), data: hex, value: z.literal("0") }).openapi({ description: "The transaction the buyer's wallet sends (eth_sendTransaction's to, data and value)" }),
        }),
      )
      .openapi({ description: "Send them in order from the buyer's wallet, each once mined: `approve` (only when the payment token's allowance to the exchange is below the price), then `fill`" }),
    expires_at: timestamp.openapi({ description: "The order's expiry in the chain's time (block timestamps): a fill mined in a later block reverts (ArtExchangeOrderExpired); ask for new steps" }),
  })
  .openapi("OnchainPurchaseSteps");
