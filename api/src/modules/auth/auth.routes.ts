import type { ApiRouter } from "../../http/route.ts";
import { z } from "../../openapi/zod.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import * as s from "./auth.schemas.ts";
import * as usersSchemas from "../users/users.schemas.ts";
import type { AccountsService } from "./accounts.service.ts";
import type { AuthService } from "./auth.service.ts";
import type { LinkedWalletsService } from "./wallets.service.ts";

export function registerAuthRoutes(api: ApiRouter, auth: AuthService, accounts: AccountsService, linkedWallets: LinkedWalletsService): void {
  api.route({
    method: "post",
    path: "/v1/auth/token",
    operationId: "createToken",
    summary: "Exchange an API key for a bearer token",
    description: "The token lives 24 hours and carries the requested scopes. Asking for a scope your role may not hold is 403.",
    tags: ["Auth"],
    auth: { public: true },
    body: s.tokenRequestSchema,
    status: 201,
    response: s.tokenResponseSchema,
    handler: ({ body, transaction }) => auth.exchangeApiKey(body.api_key, body.scope, transaction),
  });

  api.route({
    method: "delete",
    path: "/v1/auth/token",
    operationId: "revokeToken",
    summary: "Revoke the presented token at once",
    description: "Any valid token may revoke itself, whatever its scopes.",
    tags: ["Auth"],
    auth: { scope: null },
    response: s.revokeResponseSchema,
    handler: async ({ auth: caller }) => {
      const r = await auth.revoke(caller);
      return { revoked: r.revoked, revoked_at: iso(r.revoked_at) };
    },
  });

  api.route({
    method: "post",
    path: "/v1/auth/siwe/nonce",
    operationId: "createSiweNonce",
    summary: "Get a Sign-In with Ethereum nonce",
    tags: ["Auth"],
    auth: { public: true },
    status: 201,
    response: s.nonceResponseSchema,
    handler: ({ transaction }) => auth.createNonce(transaction),
  });

  api.route({
    method: "post",
    path: "/v1/auth/siwe/verify",
    operationId: "verifySiwe",
    summary: "Sign in with Ethereum (EIP-4361)",
    description:
      "Verifies the signed message (EOA, ERC-1271 and ERC-6492 smart wallets), its domain, chain id, expiry and single-use nonce, and answers like POST /v1/auth/token. The first sign-in of an address creates a collector account with that wallet.",
    tags: ["Auth"],
    auth: { public: true },
    body: s.siweVerifySchema,
    status: 201,
    response: s.tokenResponseSchema,
    handler: ({ body, transaction }) => auth.verifySiwe(body.message, body.signature, body.scope ?? ["write"], transaction),
  });

  api.route({
    method: "post",
    path: "/v1/api-keys",
    operationId: "createApiKey",
    summary: "Create an API key",
    description:
      "Needs a token with the coarse `write` (or `admin`) scope. The key is capped at `scope` (default: the scopes of the token that makes it), which that token must cover, and it is revoked with the key that token came from.",
    tags: ["API keys"],
    auth: { scope: "write" },
    body: s.apiKeyCreateSchema,
    status: 201,
    response: s.apiKeyCreatedSchema,
    handler: ({ body, auth: caller, transaction }) => auth.createApiKeyFor(caller, body.name ?? null, body.scope, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/api-keys",
    operationId: "listApiKeys",
    summary: "List your active API keys",
    tags: ["API keys"],
    auth: { scope: "users:read" },
    response: z.object({ data: z.array(s.apiKeySchema) }),
    handler: async ({ auth: caller }) => ({
      data: (await auth.listApiKeys(caller.userId, caller.role)).map((k) => ({
        id: k.id,
        name: k.name,
        secret_hint: k.secret_hint,
        scopes: k.scopes,
        parent_key_id: k.parent_api_key_id,
        created_at: iso(k.created_at),
        last_used_at: isoOrNull(k.last_used_at),
      })),
    }),
  });

  api.route({
    method: "delete",
    path: "/v1/api-keys/:id",
    operationId: "revokeApiKey",
    summary: "Revoke an API key, the keys made with its tokens, and all their tokens",
    description: "Needs a token with the coarse `write` (or `admin`) scope, as creating a key does.",
    tags: ["API keys"],
    auth: { scope: "write" },
    params: s.apiKeyIdParams,
    errors: [404],
    response: z.object({ id: z.string(), revoked: z.literal(true), revoked_at: z.string() }),
    handler: async ({ params, auth: caller }) => ({
      id: params.id,
      revoked: true as const,
      revoked_at: iso(await auth.revokeApiKey(caller.userId, params.id)),
    }),
  });

  // Wallets of one's own: where withdrawals may go, so writes need the coarse `write`, as API keys do.
  api.route({
    method: "post",
    path: "/v1/users/me/wallets",
    operationId: "linkWallet",
    summary: "Link a wallet of your own",
    description:
      "Proves control of a wallet with a SIWE message it signed (nonce from POST /v1/auth/siwe/nonce; domain, chain, expiry and signature checked as at sign-in, ERC-1271 and ERC-6492 wallets included) and links it to your account: what it holds is yours on the platform (the owner's rights of a certificate it holds), and withdrawals may go to it. It does not sign in (a sign-in with it is 401). Linking a wallet linked to you already answers it as it is; a wallet of another account (linked there, or its sign-in wallet) is 409 `conflict`, a refused proof 400 `validation_failed`.",
    tags: ["Users"],
    auth: { scope: "write" },
    body: s.walletLinkSchema,
    status: 201,
    errors: [409],
    response: s.linkedWalletSchema,
    handler: ({ auth: caller, body, transaction }) => linkedWallets.link(caller.userId, body, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/users/me/wallets",
    operationId: "listLinkedWallets",
    summary: "Your linked wallets",
    tags: ["Users"],
    auth: { scope: "users:read" },
    response: s.linkedWalletListSchema,
    handler: ({ auth: caller }) => linkedWallets.list(caller.userId),
  });

  api.route({
    method: "delete",
    path: "/v1/users/me/wallets/:address",
    operationId: "unlinkWallet",
    summary: "Unlink a wallet",
    description: "The wallet keeps what it holds on-chain; the platform no longer counts it as yours. Another account's wallet, or one not linked, is 404.",
    tags: ["Users"],
    auth: { scope: "write" },
    params: s.walletAddressParams,
    errors: [404],
    response: s.walletUnlinkedSchema,
    handler: ({ auth: caller, params }) => linkedWallets.unlink(caller.userId, params.address),
  });

  // An admin endpoint of this feature: the account comes with its first credential.
  api.route({
    method: "post",
    path: "/v1/admin/users",
    operationId: "createUser",
    summary: "Create a user with a custodial wallet and a first API key",
    tags: ["Admin"],
    auth: { scope: "admin:write", roles: ["admin"] },
    body: usersSchemas.adminUserCreateSchema,
    status: 201,
    response: usersSchemas.adminUserCreatedSchema,
    handler: ({ body, transaction }) => accounts.createUser(body, transaction),
  });
}
