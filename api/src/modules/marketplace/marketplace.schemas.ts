import { chargeableUsd, usdValue } from "../../lib/money.ts";
import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { exampleId, idOf, idParam, plainString, text, timestamp } from "../../lib/schema.ts";
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
