import { usdAmount, usdValue } from "../../lib/money.ts";
import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { exampleId, idOf, idParam, plainString, timestamp, walletAddress } from "../../lib/schema.ts";
import { z } from "../../openapi/zod.ts";

export const withdrawalIdParams = z.object({ id: idParam("withdrawal") });
export const withdrawalListQuery = z.object({ ...paginationQuery() });

export const withdrawalCreateSchema = z
  .strictObject({
    artwork_id: plainString({ min: 1, max: 64 }).optional().openapi({ description: "asset `certificate`: a certified artwork whose certificate your custodial wallet holds; asset `shares`: the artwork whose shares" }),
    asset: z.enum(["certificate", "shares", "payment_token"]).openapi({ description: "What leaves your custodial wallet: an artwork's certificate (ERC-721), some of its shares (ERC-1155), or an amount of the payment token (the proceeds of sales paid on-chain)" }),
    quantity: z.number().int().min(1).max(1_000_000).optional().openapi({ description: "asset `shares`: how many (required), at most what your custodial wallet holds less what is being withdrawn; asset `certificate`: 1 (the default)" }),
    amount: usdAmount.optional().openapi({ description: "asset `payment_token`: how much, in US dollars (the token's units: amount x 10^6), at most your custodial wallet's balance less what is being withdrawn" }),
    to: walletAddress.openapi({ description: "One of your linked wallets (GET /v1/users/me/wallets)" }),
  })
  .openapi("WithdrawalCreate", { example: { artwork_id: exampleId("artwork"), asset: "certificate", to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" } });

export type WithdrawalCreate = z.infer<typeof withdrawalCreateSchema>;

export const withdrawalSchema = z
  .object({
    id: idOf("withdrawal"),
    status: z.enum(["pending", "completed", "failed"]).openapi({ description: "pending until the transfer is on-chain (a certificate's or shares': when the indexer shows it; the payment token's: when its transaction is mined), then completed; failed when the transfer could not be made (failure_reason)" }),
    asset: z.enum(["certificate", "shares", "payment_token"]),
    artwork_id: idOf("artwork").nullable().openapi({ description: "The certificate's artwork, or the artwork whose shares; null for the payment token" }),
    quantity: z.number().int().openapi({ description: "1 for a certificate; the number of shares; 0 for the payment token (its `amount`)" }),
    amount: usdValue.nullable().openapi({ description: "The payment token's amount in US dollars; null for a certificate" }),
    to: z.string().openapi({ description: "The linked wallet it goes to (EIP-55)", example: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" }),
    tx_hash: z.string().nullable().openapi({ description: "The transfer's transaction, once sent" }),
    failure_reason: z.string().nullable(),
    created_at: timestamp,
    completed_at: timestamp.nullable(),
  })
  .openapi("Withdrawal");

export const withdrawalListSchema = z.object({ data: z.array(withdrawalSchema), pagination: paginationSchema }).openapi("WithdrawalList");
