import { MAX_IMAGE_BYTES } from "../../lib/images.ts";
import { usdAmount, usdValue } from "../../lib/money.ts";
import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { decimalText, httpUrl, idOf, idParam, plainString, queryBoolean, text, timestamp } from "../../lib/schema.ts";
import { z } from "../../openapi/zod.ts";

export const ARTWORK_STATUSES = ["pending_certification", "certified", "certification_failed"] as const;
export const DIMENSION_UNITS = ["mm", "cm", "m", "in", "ft", "px"] as const;
/** Fields of the certificate document: never changed after creation (409 immutable_field). */
export const IMMUTABLE_FIELDS = ["title", "year", "medium", "dimensions", "image", "image_url", "artist_id", "artist"] as const;

const artworkId = idOf("artwork");
const hash32 = z.string().openapi({ example: "0x3f1c9b6a0d2e4f8a7c5b1e9d0a6f3c2b8e7d4a1f0c9b8e7d6a5f4e3d2c1b0a9f" });

export const artworkIdParams = z.object({ id: idParam("artwork") });

const year = z
  .number()
  .int()
  .min(1000)
  .refine((y) => y <= new Date().getUTCFullYear(), { message: "must not be after the current year" })
  .openapi({ description: "1000..current year", example: 2024 });

export const dimensionsSchema = z
  .strictObject({
    width: z.number().positive().max(1_000_000),
    height: z.number().positive().max(1_000_000),
    unit: z.enum(DIMENSION_UNITS),
  })
  .openapi("Dimensions", { example: { width: 60, height: 80, unit: "cm" } });

const artworkFields = {
  // Trimmed and in Unicode NFC (text()), so that the certificate hash does not depend on how it was typed.
  title: text({ max: 200 }).openapi({ description: "1..200 characters", example: "Harbour at Dawn" }),
  year,
  medium: text({ max: 200 }).openapi({ example: "Oil on canvas" }),
  dimensions: dimensionsSchema,
  description: text({ max: 5000, multiline: true }).nullable().optional().openapi({ description: "Up to 5,000 characters" }),
  price_usd: usdAmount.nullable().optional(),
  for_sale: z.boolean().optional().openapi({ description: "Default false; true needs a price_usd" }),
  artist_id: plainString({ max: 64 })
    .optional()
    .openapi({ description: "Admins only: register the artwork for this artist (default: the caller)" }),
};

/** An artwork for sale names its price. */
function forSaleNeedsPrice<S extends z.ZodType<{ for_sale?: boolean; price_usd?: number | null }>>(schema: S) {
  return schema.refine((v) => !(v.for_sale === true && (v.price_usd === undefined || v.price_usd === null)), {
    message: "an artwork for sale needs a price_usd",
    path: ["for_sale"],
  });
}

/**
 * The fields of a form (multipart) creation, after `artworkFormToBody`: the JSON body's, less
 * `image_url`, which the `image` file replaces (sent in a form, it is an unknown field).
 */
export const artworkFormBodySchema = forSaleNeedsPrice(z.strictObject(artworkFields));

/** A creation's body: JSON with `image_url`, or a form's fields with the image file beside them. */
export type ArtworkCreate = z.infer<typeof artworkFormBodySchema> & { image_url?: string };

/** The JSON body: a JSON request can only name its image by URL, so `image_url` is required here. */
export const artworkCreateSchema: z.ZodType<ArtworkCreate> = forSaleNeedsPrice(
  z.strictObject({
    ...artworkFields,
    image_url: httpUrl({ max: 2048 }).openapi({
      description: "Fetched by the certification pipeline (https, public addresses only; JPEG/PNG/WebP/GIF up to 20 MiB). Multipart requests send the `image` file instead.",
    }),
  }),
).openapi("ArtworkCreate", {
  example: {
    title: "Harbour at Dawn",
    year: 2024,
    medium: "Oil on canvas",
    dimensions: { width: 60, height: 80, unit: "cm" },
    description: "The old harbour of Hamburg at first light.",
    price_usd: 12500,
    for_sale: true,
    image_url: "https://images.example.com/harbour-at-dawn.jpg",
  },
});

/**
 * The multipart form, as documented. Field names are the JSON ones; `dimensions` is a JSON string
 * or three fields `dimensions[width]`, `dimensions[height]`, `dimensions[unit]`; numbers and
 * booleans are their text forms.
 */
export const artworkCreateFormSchema = z
  .object({
    image: z.string().openapi({ type: "string", format: "binary", description: `JPEG, PNG, WebP or GIF (checked by content), up to ${MAX_IMAGE_BYTES / 1024 / 1024} MiB` }),
    title: z.string(),
    year: z.string().openapi({ example: "2024" }),
    medium: z.string(),
    dimensions: z.string().optional().openapi({ description: 'JSON, e.g. {"width":60,"height":80,"unit":"cm"}' }),
    "dimensions[width]": z.string().optional(),
    "dimensions[height]": z.string().optional(),
    "dimensions[unit]": z.string().optional(),
    description: z.string().optional(),
    price_usd: z.string().optional().openapi({ example: "12500.00" }),
    for_sale: z.enum(["true", "false"]).optional(),
    artist_id: z.string().optional(),
  })
  .openapi("ArtworkCreateForm", {
    example: { image: "(the image file)", title: "Harbour at Dawn", year: "2024", medium: "Oil on canvas", dimensions: '{"width":60,"height":80,"unit":"cm"}', price_usd: "12500.00", for_sale: "true" },
  });

/** Text parts of the form -> the JSON body `artworkCreateSchema` validates (bad text stays text and fails there). */
export function artworkFormToBody(fields: Record<string, unknown>): unknown {
  const body: Record<string, unknown> = { ...fields };
  for (const key of ["year", "price_usd"]) if (key in body) body[key] = decimalText(body[key]);
  if (body.price_usd === "") body.price_usd = null;
  if (body.for_sale === "true" || body.for_sale === "false") body.for_sale = body.for_sale === "true";
  if (typeof body.dimensions === "string") {
    try {
      body.dimensions = JSON.parse(body.dimensions);
    } catch {
      // left as text: validation names the field
    }
  } else if (typeof body.dimensions === "object" && body.dimensions !== null) {
    const d = body.dimensions as Record<string, unknown>;
    body.dimensions = { ...d, ...("width" in d ? { width: decimalText(d.width) } : {}), ...("height" in d ? { height: decimalText(d.height) } : {}) };
  }
  return body;
}

export const artworkCreatedSchema = z
  .object({
    id: artworkId,
    title: z.string(),
    artist_id: z.string(),
    status: z.enum(ARTWORK_STATUSES),
    certificate_hash: z.null(),
    estimated_certification_time: z.string().openapi({
      example: "2-5 seconds",
      description: "The spread of the latest certifications' times from request to certified (10th to 90th percentile)",
    }),
    created_at: timestamp,
  })
  .openapi("ArtworkCreated");

const immutable = z
  .unknown()
  .optional()
  .openapi({ description: "A certified field: always refused with 409 immutable_field" });

export const artworkPatchSchema = z
  .strictObject({
    price_usd: usdAmount.nullable().optional(),
    description: text({ max: 5000, multiline: true }).nullable().optional(),
    for_sale: z.boolean().optional(),
    title: immutable,
    year: immutable,
    medium: immutable,
    dimensions: immutable,
    image: immutable,
    image_url: immutable,
    artist_id: immutable,
    artist: immutable,
  })
  .refine((v) => Object.keys(v).length > 0, { message: "send at least one of price_usd, description, for_sale" })
  .openapi("ArtworkUpdate", { minProperties: 1,
    description: "Only price_usd, description and for_sale change; the certified fields are immutable.",
    example: { price_usd: 14000, for_sale: true },
  });

export type ArtworkPatch = z.infer<typeof artworkPatchSchema>;

export const artworkPatchResultSchema = z
  .object({
    id: artworkId,
    price_usd: usdValue.nullable().optional(),
    description: z.string().nullable().optional(),
    for_sale: z.boolean().optional(),
    updated_at: timestamp,
  })
  .openapi("ArtworkUpdateResult");


export const artworksQuery = z
  .object({
    medium: text({ max: 200 }).optional().openapi({ description: "Case-insensitive substring of the medium" }),
    price_min: z.coerce.number().min(0).max(1e9).optional(),
    price_max: z.coerce.number().min(0).max(1e9).optional(),
    artist_id: plainString({ max: 64 }).optional(),
    verified: queryBoolean.optional().openapi({ description: "true: certified only; false: not (yet) certified" }),
    for_sale: queryBoolean.optional(),
    q: text({ max: 200 }).optional().openapi({ description: "Searches title, description and medium" }),
    ...paginationQuery(),
  })
  .refine((v) => v.price_min === undefined || v.price_max === undefined || v.price_min <= v.price_max, {
    message: "price_min must not exceed price_max",
    path: ["price_min"],
  });

// The holder's ask (docs/decisions.md#for-sale; artwork-asks.service.ts).
const askFields = {
  price_usd: usdValue.nullable().openapi({ description: "The holder's asking price (an active listing's price while it stands); null once the certificate moved to another wallet, until its new holder asks" }),
  for_sale: z.boolean().openapi({ description: "True while the holder offers it: set by them (upload, PATCH) or by their active listing; false once they delist it or the certificate moves to another wallet (a sale, a transfer, a withdrawal)" }),
};

export const artworkListItemSchema = z
  .object({
    id: artworkId,
    title: z.string(),
    artist_id: z.string(),
    year: z.number().int(),
    medium: z.string(),
    ...askFields,
    verified: z.boolean(),
    fractional_available: z.boolean(),
    thumbnail_url: z.string().openapi({ description: "The image URL (no resized thumbnails yet)" }),
    status: z.enum(ARTWORK_STATUSES),
    created_at: timestamp,
  })
  .openapi("ArtworkListItem");

export const artworkListSchema = z
  .object({ data: z.array(artworkListItemSchema), pagination: paginationSchema })
  .openapi("ArtworkList");

export const provenanceEntrySchema = z
  .object({
    event: z.string().openapi({ example: "certified", description: "created, certified, verification_override, for_sale (the holder's ask, with price_usd), not_for_sale, listed, delisted, sold, returned, transferred, deleted" }),
    date: z.string().openapi({ format: "date", example: "2026-11-22" }),
    actor: z.string().optional().openapi({ description: "The user who acted (off-chain events)" }),
    tx: z.string().optional().openapi({ description: "The transaction (on-chain events)" }),
    from: z.string().optional(),
    to: z.string().optional(),
    reason: z.string().optional(),
    inspector_id: z.string().optional(),
    listing_id: z.string().optional().openapi({ description: "The marketplace listing (listed, delisted, sold)" }),
    price_usd: z.number().optional().openapi({ description: "The ask's price (for_sale), the listing's (listed) or the sale's (sold)" }),
    transaction_id: z.string().optional().openapi({ description: "The sale transaction (sold, returned)" }),
    buyer_id: z.string().optional().openapi({ description: "The buyer (sold)" }),
    seller_id: z.string().optional().openapi({ description: "The seller (sold)" }),
    dispute_id: z.string().optional().openapi({ description: "The dispute whose refund returned the certificate (returned)" }),
  })
  .openapi("ProvenanceEntry");

export const artworkDetailSchema = z
  .object({
    id: artworkId,
    title: z.string(),
    artist: z.object({ id: z.string(), name: z.string() }),
    artist_id: z.string(),
    year: z.number().int(),
    medium: z.string(),
    dimensions: dimensionsSchema,
    description: z.string().nullable(),
    ...askFields,
    verified: z.boolean(),
    fractional_available: z.boolean(),
    status: z.enum(ARTWORK_STATUSES),
    certificate_hash: hash32.nullable(),
    token_id: z.number().int().nullable(),
    certified_at: timestamp.nullable(),
    certification_error: z.string().nullable().openapi({ description: "Why the certification failed (status certification_failed)" }),
    image_download: z
      .object({
        attempts: z.number().int().openapi({ description: "Downloads of image_url tried so far" }),
        max_attempts: z.number().int().openapi({ description: "After this many the certification fails (certification_error, webhook artwork.certification_failed)" }),
        last_error: z.string().openapi({ description: "Why the last download failed (a name that does not resolve, a refused address, a timeout, a body that is not an image...)", example: "getaddrinfo ENOTFOUND images.example.invalid" }),
      })
      .optional()
      .openapi({ description: "Only for the artwork's holder (the artist before certification) and admins, while its image_url is being downloaded and an attempt failed: the download is retried with backoff; fix the URL by registering the artwork again if it cannot succeed" }),
    image_url: z.string().openapi({ description: "The stored image, served by the API (stable)" }),
    thumbnail_url: z.string(),
    image_sha256: z.string().nullable().openapi({ description: "SHA-256 of the image bytes; null until a given image_url was fetched" }),
    media: z.object({
      image_url: z.string(),
      thumbnail_url: z.string(),
      metadata_url: z.string().openapi({ description: "ERC-721 metadata (the token URI)" }),
      certificate_url: z.string(),
      certificate_document_url: z.string().openapi({ description: "The canonical certificate document whose keccak256 is the certificate hash" }),
      verify_url: z.string().openapi({ description: "Human-readable verification page" }),
    }),
    provenance: z.array(provenanceEntrySchema),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi("ArtworkDetail");

export const artworkDeletedSchema = z
  .object({ deleted: z.literal(true), id: artworkId, certificate_preserved: z.literal(true), deleted_at: timestamp })
  .openapi("ArtworkDeleted");

export const tokenMetadataSchema = z
  .object({
    name: z.string(),
    description: z.string(),
    image: z.string(),
    external_url: z.string(),
    attributes: z.array(z.object({ trait_type: z.string(), value: z.union([z.string(), z.number()]) })),
    certificate_hash: hash32,
    certificate_document: z.string(),
    image_sha256: z.string().nullable(),
  })
  .openapi("TokenMetadata", { description: "ERC-721 metadata JSON (the certificate token's URI)" });

export const adminVerifySchema = z
  .strictObject({
    override_reason: text({ max: 1000, multiline: true }),
    inspector_id: text({ max: 100 }).optional(),
  })
  .openapi("AdminVerify", { example: { override_reason: "Provenance confirmed by the gallery's inspection report", inspector_id: "insp-0042" } });

export const adminVerifyResultSchema = z
  .object({
    artwork_id: artworkId,
    status: z.enum(ARTWORK_STATUSES),
    certificate_hash: hash32.nullable(),
    certified_at: timestamp.nullable(),
    certified_by: z.string(),
  })
  .openapi("AdminVerifyResult");
