import { z } from "../../openapi/zod.ts";
import { idParam, pathId, plainString, text, timestamp } from "../../lib/schema.ts";
import { ALL_SCOPES, isScope, type Scope } from "../../lib/scopes.ts";

export const scopeList = z
  .array(
    z.string().refine(isScope, { message: `unknown scope; valid scopes: ${ALL_SCOPES.join(", ")}` }).transform((s) => s as Scope),
  )
  .min(1)
  .max(ALL_SCOPES.length)
  .openapi({ example: ["artworks:read", "marketplace:write"], description: `Scopes: ${ALL_SCOPES.join(", ")}` });

export const tokenRequestSchema = z
  .strictObject({
    api_key: plainString({ min: 1, max: 200 }).openapi({ example: "sk_…" }),
    scope: scopeList.openapi({ description: `Required: the scopes the token may use (${ALL_SCOPES.join(", ")}), within the key's cap` }),
  })
  .openapi("TokenRequest", { example: { api_key: "sk_3q2-7wQxN0cV9pLkR4sT1uYb6ZfHjMa8eDg5iOnWvXo", scope: ["artworks:read", "marketplace:write"] } });

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

const siweSignature = z.string().regex(/^0x[0-9a-fA-F]+$/, "must be 0x-prefixed hex").max(20_000).transform((s) => s as `0x${string}`);

export const siweVerifySchema = z
  .strictObject({
    message: plainString({ min: 1, max: 4096, multiline: true }).openapi({ description: "The EIP-4361 message that was signed" }),
    signature: siweSignature,
    scope: scopeList.optional().openapi({ description: "Scopes wanted (default: write)" }),
  })
  .openapi("SiweVerifyRequest", {
    example: {
      message:
        "api.example.com wants you to sign in with your Ethereum account:\n0x70997970C51812dc3A010C7d01b50e0d17dc79C8\n\nSign in to the Art Platform API\n\nURI: https://api.example.com\nVersion: 1\nChain ID: 31337\nNonce: 8f3a2c91d4e7b605\nIssued At: 2026-11-22T10:00:00.000Z",
      signature: `0x${"4f".repeat(65)}`,
      scope: ["write"],
    },
  });

export const apiKeyCreateSchema = z
  .strictObject({
    name: text({ max: 100 }).optional(),
    scope: scopeList.optional().openapi({
      description: "The most a token of this key may hold (default: your token's scopes); your token must cover them, else 403 insufficient_scope.",
    }),
  })
  .openapi("ApiKeyCreate", { example: { name: "gallery-sync", scope: ["artworks:read"] } });

const keyScopes = z.array(z.string()).openapi({
  description: "The most a token of this key may hold: asking POST /v1/auth/token for more is 403 insufficient_scope.",
  example: ["write"],
});
const parentKeyId = z
  .string()
  .nullable()
  .openapi({
    description: "The key whose token made this one; revoking that key revokes this one too. Null for keys the platform issued and keys made with a Sign-In with Ethereum token.",
  });

export const apiKeySchema = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    secret_hint: z.string(),
    scopes: keyScopes,
    parent_key_id: parentKeyId,
    created_at: timestamp,
    last_used_at: timestamp.nullable(),
  })
  .openapi("ApiKey");

export const apiKeyCreatedSchema = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    secret: z.string().openapi({ description: "Shown once; store it now." }),
    scopes: keyScopes,
    parent_key_id: parentKeyId,
    created_at: timestamp,
  })
  .openapi("ApiKeyCreated");

export const apiKeyIdParams = z.object({ id: idParam("apiKey") });

export const walletLinkSchema = z
  .strictObject({
    message: plainString({ min: 1, max: 4096, multiline: true }).openapi({ description: "An EIP-4361 message naming the wallet, with a nonce from POST /v1/auth/siwe/nonce" }),
    signature: siweSignature.openapi({ description: "The wallet's signature of the message (EOA, ERC-1271 or ERC-6492)" }),
  })
  .openapi("WalletLinkRequest", {
    example: {
      message:
        "api.example.com wants you to sign in with your Ethereum account:\n0x70997970C51812dc3A010C7d01b50e0d17dc79C8\n\nLink this wallet to my Art Platform account\n\nURI: https://api.example.com\nVersion: 1\nChain ID: 31337\nNonce: 8f3a2c91d4e7b605\nIssued At: 2026-11-22T10:00:00.000Z",
      signature: `0x${"4f".repeat(65)}`,
    },
  });

const walletAddress = z.string().openapi({ description: "EIP-55 checksummed", example: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" });

export const linkedWalletSchema = z
  .object({ address: walletAddress, linked_at: timestamp })
  .openapi("LinkedWallet", { description: "A wallet of your own, linked by its signature: what it holds is yours on the platform, and withdrawals may go to it." });

export const linkedWalletListSchema = z.object({ data: z.array(linkedWalletSchema) }).openapi("LinkedWalletList");

export const walletAddressParams = z.object({
  address: pathId("address", "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "The linked wallet's address (any case)"),
});

export const walletUnlinkedSchema = z.object({ address: walletAddress, unlinked: z.literal(true) }).openapi("LinkedWalletRemoved");
