/**
 * The end-to-end tests' way into the API: the TypeScript SDK (clients/typescript), as an
 * integrator calls it: API keys exchanged for tokens by the client, an Idempotency-Key on every
 * POST, problems raised as ApiError.
 */
import { expect } from "vitest";
import { type ArtPlatformClient, type ArtPlatformOptions, ApiError, type components, createArtPlatformClient, type Scope } from "../../clients/typescript/index.ts";
import { ADMIN_API_KEY, type TestUser, uniqueName } from "./api.ts";
import { artworkInput, formFields, pngImage } from "./artworks.ts";

export type { ArtPlatformClient };

/** The SDK on `baseUrl`: anonymous, or with an API key (`scope` default ["write"]) or a token. */
export function sdk(baseUrl: string, credentials: Omit<ArtPlatformOptions, "baseUrl"> = {}): ArtPlatformClient {
  return createArtPlatformClient({ baseUrl, ...credentials, scope: credentials.scope ?? (credentials.apiKey ? ["write"] : undefined) });
}

/** The SDK as the platform's bootstrap admin (`apiKey`: the test servers' shared key unless given). */
export const adminSdk = (baseUrl: string, apiKey = ADMIN_API_KEY) => sdk(baseUrl, { apiKey, scope: ["admin"] });

export interface SdkUser extends TestUser {
  /** The SDK as this user: its API key, exchanged for tokens of the scope the user was created with. */
  api: ArtPlatformClient;
}

/**
 * A fresh user created through the admin API, and the SDK as that user (scope `write` unless
 * given); `token` is the token the client exchanged, for the helpers that take a TestUser.
 */
export async function createSdkUser(baseUrl: string, opts: { role?: "collector" | "artist" | "admin"; scope?: Scope[]; admin?: ArtPlatformClient } = {}): Promise<SdkUser> {
  const username = uniqueName();
  const email = `${username}@example.test`;
  const { data: created } = await (opts.admin ?? adminSdk(baseUrl)).POST("/v1/admin/users", { body: { username, email, role: opts.role ?? "collector" } });
  const apiKey = created.api_key.secret;
  const api = sdk(baseUrl, { apiKey, scope: opts.scope ?? ["write"] });
  return { id: created.id, apiKey, username, email, token: (await api.accessToken())!, api };
}

/** The SDK as a TestUser (its token). */
export const sdkOf = (baseUrl: string, user: Pick<TestUser, "token">) => sdk(baseUrl, { token: user.token });

/**
 * POST /v1/artworks' multipart body: the fields of artworkInput(extra) as text parts and a fresh PNG
 * (or `image`) as the file part, which the SDK sends as multipart/form-data.
 */
export function artworkForm(extra: Record<string, unknown> = {}, image: Blob = new File([pngImage()], "artwork.png", { type: "image/png" })): components["schemas"]["ArtworkCreateForm"] {
  return { ...(formFields(artworkInput(extra)) as Omit<components["schemas"]["ArtworkCreateForm"], "image">), image };
}

/** POST /v1/artworks' JSON body (an `image_url` for the pipeline to fetch): artworkInput(extra). */
export const artworkJson = (extra: Record<string, unknown> = {}) => artworkInput(extra) as components["schemas"]["ArtworkCreate"];

/** What a call raised: the ApiError (anything else, or no error, fails the test). */
export async function apiError(call: Promise<unknown>): Promise<ApiError> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

/**
 * That the call failed with the problem `status` `code`, as expectProblem checks a raw answer: a
 * problem+json body with its status, code, type, request id, title and detail.
 */
export async function expectApiError(call: Promise<unknown>, status: number, code: string): Promise<ApiError> {
  const error = await apiError(call);
  expect({ status: error.status, code: error.code, contentType: error.response.headers.get("content-type") }).toEqual({
    status,
    code,
    contentType: expect.stringMatching(/^application\/problem\+json/),
  });
  expect(error.body).toMatchObject({ status, code, type: `/problems/${code}`, request_id: expect.any(String), title: expect.any(String), detail: expect.any(String) });
  return error;
}
