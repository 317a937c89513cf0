import { z } from "../../openapi/zod.ts";
import { ALL_SCOPES, isScope, type Scope } from "./scopes.ts";

const timestamp = z.string().openapi({ format: "date-time" });

export const scopeList = z
  .array(
    z.string().refine(isScope, { message: `unknown scope; valid scopes: ${ALL_SCOPES.join(", ")}` }).transform((s) => s as Scope),
  )
  .min(1)
  .max(ALL_SCOPES.length)
  .openapi({ example: ["artworks:read", "marketplace:write"], description: `Scopes: ${ALL_SCOPES.join(", ")}` });

export const tokenRequestSchema = z
  .strictObject({
    api_key: z.string().min(1).max(200).openapi({ example: "sk_…" }),
    scope: scopeList,
  })
  .openapi("TokenRequest");

export const tokenResponseSchema = z
  .object({
    token: z.string().openapi({ example: "at_…" }),
    token_type: z.literal("Bearer"),
    expires_at: timestamp,
    scope: z.array(z.string()),
  })
  .openapi("Token");

export const revokeResponseSchema = z.object({ revoked: z.literal(true), revoked_at: timestamp }).openapi("TokenRevoked");

export const nonceResponseSchema = z
  .object({ nonce: z.string(), expires_at: timestamp })
  .openapi("SiweNonce", { description: "Single use; expires in 10 minutes." });

export const siweVerifySchema = z
  .strictObject({
    message: z.string().min(1).max(4096).openapi({ description: "The EIP-4361 message that was signed" }),
    signature: z.string().regex(/^0x[0-9a-fA-F]+$/, "must be 0x-prefixed hex").max(20_000).transform((s) => s as `0x${string}`),
    scope: scopeList.optional().openapi({ description: "Scopes wanted (default: write)" }),
  })
  .openapi("SiweVerifyRequest");

export const apiKeyCreateSchema = z.strictObject({ name: z.string().trim().min(1).max(100).optional() }).openapi("ApiKeyCreate");

export const apiKeySchema = z
  .object({ id: z.string(), name: z.string().nullable(), secret_hint: z.string(), created_at: timestamp, last_used_at: timestamp.nullable() })
  .openapi("ApiKey");

export const apiKeyCreatedSchema = z
  .object({ id: z.string(), name: z.string().nullable(), secret: z.string().openapi({ description: "Shown once; store it now." }), created_at: timestamp })
  .openapi("ApiKeyCreated");

export const apiKeyIdParams = z.object({ id: z.string().min(1).max(64).openapi({ param: { name: "id", in: "path" } }) });
