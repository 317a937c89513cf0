import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { exampleId, idOf, idParam, plainString, timestamp } from "../../lib/schema.ts";
import { z } from "../../openapi/zod.ts";

export const withdrawalIdParams = z.object({ id: idParam("withdrawal") });
export const withdrawalListQuery = z.object({ ...paginationQuery() });

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address");

export const withdrawalCreateSchema = z
  .strictObject({
    artwork_id: plainString({ min: 1, max: 64 }).openapi({ description: "A certified artwork whose certificate your custodial wallet holds" }),
    asset: z.enum(["certificate"]).openapi({ description: "What leaves your custodial wallet: the artwork's certificate (ERC-721)" }),
    quantity: z.literal(1).optional().openapi({ description: "1 for a certificate (the default)" }),
    to: address.openapi({ description: "One of your linked wallets (GET /v1/users/me/wallets)" }),
  })
  .openapi("WithdrawalCreate", { example: { artwork_id: exampleId("artwork"), asset: "certificate", to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" } });

export const withdrawalSchema = z
  .object({
    id: idOf("withdrawal"),
    status: z.enum(["pending", "completed", "failed"]).openapi({ description: "pending until the indexer shows the transfer on-chain, then completed; failed when the transfer could not be made (failure_reason)" }),
    asset: z.enum(["certificate"]),
    artwork_id: idOf("artwork"),
    quantity: z.number().int(),
    to: z.string().openapi({ description: "The linked wallet it goes to (EIP-55)", example: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" }),
    tx_hash: z.string().nullable().openapi({ description: "The transfer's transaction, once sent" }),
    failure_reason: z.string().nullable(),
    created_at: timestamp,
    completed_at: timestamp.nullable(),
  })
  .openapi("Withdrawal");

export const withdrawalListSchema = z.object({ data: z.array(withdrawalSchema), pagination: paginationSchema }).openapi("WithdrawalList");
