/**
 * @art-platform/sdk: a typed client of the Art Platform API.
 *
 *   const api = createArtPlatformClient({ baseUrl: "https://api.example.com", apiKey: "sk_…", scope: ["write"] });
 *   const { data: me } = await api.GET("/v1/users/me");
 */
export { type ArtPlatformClient, type ArtPlatformOptions, type CallMethod, createArtPlatformClient, type ListPage, type ListPath } from "./client.ts";
export { ApiError, type ErrorCode, type FieldError, type Problem } from "./errors.ts";
export { type Fetch, type RetryOptions, retryingFetch } from "./retry.ts";
export type { components, operations, paths } from "./schema.ts";
export { type Scope, type Token, TokenSource, type TokenSourceOptions } from "./tokens.ts";
export { type VerifyWebhookOptions, verifyWebhookSignature, type WebhookHeaders } from "./webhooks.ts";
