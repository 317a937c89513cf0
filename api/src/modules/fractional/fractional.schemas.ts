import { centsToUsd, USD_CHARGE_LIMITS, usdAmount, usdToCents, usdValue } from "../../lib/money.ts";
import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { exampleId, idOf, idParam, plainString, timestamp } from "../../lib/schema.ts";
import { z } from "../../openapi/zod.ts";

export const artworkIdParams = z.object({ id: idParam("artwork") });
export const purchaseIdParams = z.object({ id: idParam("fractionalPurchase") });
export const fractionalListQuery = z.object({ ...paginationQuery() });

const UINT256_MAX = (1n << 256n) - 1n;
/** 64 hex digits (ERC-1155's `{id}`: lower-case, zero-padded, no 0x; read as hex even when all digits), 0x-prefixed hex, or decimal. */
const SHARE_TOKEN_ID = /^(?:[0-9a-fA-F]{64}|0x[0-9a-fA-F]{1,64}|[0-9]{1,78})$/;

export const shareTokenParams = z.object({
  id: z
    .string()
    .regex(SHARE_TOKEN_ID, "must be a token id: 64 hex digits without 0x (ERC-1155's {id}), 0x-prefixed hex, or decimal")
    .transform((v) => BigInt(v.length === 64 && !v.startsWith("0x") ? `0x${v}` : v))
    .refine((n) => n <= UINT256_MAX, "must be at most 2^256 - 1")
    .openapi({
      description:
        "The share token's id, as wallets substitute ERC-1155's `{id}`: 64 lower-case hex digits, zero-padded, without `0x` (always read as hex). Also `0x`-prefixed hex or decimal (`1`, `0x1`). It is the certificate's token id.",
      example: "0000000000000000000000000000000000000000000000000000000000000001",
    }),
});

export const fractionalizeSchema = z
  .strictObject({
    artwork_id: plainString({ min: 1, max: 64 }).openapi({ example: "art_01JD3Y5V0Q3G7W7J6T4N4C2X1M", description: "A certified artwork whose certificate your wallet holds (admins: any)" }),
    total_shares: z.number().int().min(1).max(1_000_000).openapi({ description: "The class's cap, fixed on-chain once (1..1,000,000)" }),
    price_per_share_usd: usdAmount
      .refine((v) => v > 0, { message: "must be greater than 0" })
      .refine((v) => usdToCents(v) <= USD_CHARGE_LIMITS.maxCents, { message: `must be at most ${centsToUsd(USD_CHARGE_LIMITS.maxCents)} (the largest card charge)` })
      .openapi({ description: `US dollars, 0.01..${centsToUsd(USD_CHARGE_LIMITS.maxCents)}; a purchase's total (shares × price) must be a card charge (at least ${centsToUsd(USD_CHARGE_LIMITS.minCents)})` }),
  })
  .openapi("Fractionalize", { example: { artwork_id: exampleId("artwork"), total_shares: 1000, price_per_share_usd: 12.5 } });

export const fractionalArtworkSchema = z
  .object({
    artwork_id: idOf("artwork"),
    title: z.string(),
    artist: z.string().openapi({ description: "The artist's display name" }),
    artist_id: idOf("user"),
    owner_id: idOf("user").openapi({ description: "The certificate's holder as of the class's last sale (who fractionalized it, before any): the recipient of the share proceeds, which always go to the holder at the time of the purchase" }),
    token_id: z.string().openapi({ description: "The certificate's token id, also the ArtShares class id" }),
    total_shares: z.number().int(),
    shares_available: z.number().int().openapi({ description: "Not reserved by a pending purchase nor sold" }),
    price_per_share_usd: usdValue,
    total_value_usd: usdValue.openapi({ description: "total_shares × price_per_share_usd" }),
    funded_pct: z.number().openapi({ description: "Shares sold and minted, as a percentage of total_shares" }),
    status: z.enum(["pending", "active", "failed"]).openapi({ description: "pending until the share class is on-chain, then active" }),
    created_at: timestamp,
  })
  .openapi("FractionalArtwork");

export const fractionalListSchema = z.object({ data: z.array(fractionalArtworkSchema), pagination: paginationSchema }).openapi("FractionalArtworkList");

export const shareholdingListSchema = z
  .object({
    artwork_id: idOf("artwork"),
    total_shares: z.number().int(),
    shareholders: z.array(
      z.object({
        user_id: idOf("user").nullable().openapi({ description: "null for a wallet no user of the platform has" }),
        wallet: z.string(),
        shares_owned: z.number().int(),
        ownership_pct: z.number(),
        acquired_at: timestamp.openapi({ description: "Since when the wallet has held shares without interruption (on-chain)" }),
      }),
    ),
    pagination: paginationSchema,
  })
  .openapi("ShareholdingList");

export const purchaseSchema = z
  .strictObject({
    shares_quantity: z.number().int().min(1).max(1_000_000),
    payment_method_id: plainString({ min: 1, max: 64 }).openapi({ example: "pm_card_visa", description: "One of your saved methods (`pm_…`) or a test card id" }),
  })
  .openapi("FractionalPurchaseCreate", { example: { shares_quantity: 10, payment_method_id: exampleId("paymentMethod") } });

export const fractionalPurchaseSchema = z
  .object({
    purchase_id: idOf("fractionalPurchase"),
    artwork_id: idOf("artwork"),
    buyer_id: idOf("user"),
    shares_purchased: z.number().int(),
    price_per_share_usd: usdValue,
    total_paid_usd: usdValue,
    status: z.enum(["pending", "confirmed", "failed"]).openapi({ description: "pending -> confirmed (minted on-chain) / failed (payment refunded, shares released)" }),
    on_chain_tx: z.string().nullable().openapi({ description: "The mint's transaction" }),
    new_ownership_pct: z.number().nullable().openapi({ description: "The buyer's share of the class once confirmed" }),
    transaction_id: idOf("transaction").openapi({ description: "The `share_purchase` transaction" }),
    failure_reason: z.string().nullable(),
    created_at: timestamp,
    confirmed_at: timestamp.nullable(),
  })
  .openapi("FractionalPurchase");

export const shareMetadataSchema = z
  .object({
    name: z.string(),
    description: z.string(),
    image: z.string().openapi({ description: "The artwork's image, served by the API (absolute URL)" }),
    external_url: z.string().openapi({ description: "The artwork's verification page" }),
    decimals: z.literal(0).openapi({ description: "Shares are whole" }),
    properties: z.object({
      artwork_id: idOf("artwork"),
      title: z.string(),
      artist: z.string().openapi({ description: "The artist's display name" }),
      artist_id: idOf("user"),
      certificate_token_id: z.string().openapi({ description: "The ArtCertificate token id (decimal), which is also this share token's id" }),
      share_class: z.object({
        total_supply: z.number().int().openapi({ description: "Shares minted (confirmed on-chain)" }),
        cap: z.number().int().openapi({ description: "The class's cap, fixed on-chain" }),
        shares_available: z.number().int().openapi({ description: "Not reserved by a pending purchase nor sold" }),
        price_per_share_usd: usdValue,
      }),
    }),
  })
  .openapi("ShareTokenMetadata", { description: "ERC-1155 metadata JSON of a share token (ArtShares `uri(id)`)" });
