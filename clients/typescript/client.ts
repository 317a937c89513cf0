import createClient, { defaultBodySerializer, type Client, type ClientPathsWithMethod, type FetchResponse, type MaybeOptionalInit, type Middleware } from "openapi-fetch";
import { ApiError } from "./errors.ts";
import { type Fetch, type RetryOptions, retryingFetch } from "./retry.ts";
import type { components, paths } from "./schema.ts";
import { type Scope, type Token, TokenSource } from "./tokens.ts";

export interface ArtPlatformOptions {
  /** The API's origin, `https://api.example.com` (paths start with /v1). */
  baseUrl: string;
  /** An API key (`sk_…`): exchanged for tokens of `scope`, renewed before they expire. */
  apiKey?: string | undefined;
  /** The scopes to ask for with `apiKey` (default `["read"]`). */
  scope?: Scope[] | undefined;
  /** Or a bearer token you manage yourself (a SIWE login's, say). Neither: anonymous calls (public endpoints only). */
  token?: string | undefined;
  /** Renew a token this long before its `expires_at` (default 300 s). */
  renewBeforeSeconds?: number | undefined;
  /** Retries of lost connections, 429, 502-504 and requests still in progress (see RetryOptions). */
  retry?: RetryOptions | undefined;
  /** The fetch to send with (default globalThis.fetch). */
  fetch?: Fetch | undefined;
  /** The clock the token renewal reads, in milliseconds since the epoch (default Date.now). */
  now?: (() => number) | undefined;
}

type Method = "get" | "put" | "post" | "delete" | "patch";
type Init<Args> = Args & { [key: string]: unknown };
type InitArgs<Args> = {} extends Args ? [Init<Args>?] : [Init<Args>];
/** openapi-fetch's answer when it succeeded (failures are raised as ApiError): `data` is the body, as its MethodResponse. */
type Success<R extends { data?: unknown }> = { data: NonNullable<R["data"]>; response: Response };

/** One of openapi-fetch's methods, typed from the document, whose `data` is always the success body. */
export type CallMethod<M extends Method> = <P extends ClientPathsWithMethod<Client<paths>, M>, Args extends MaybeOptionalInit<paths[P], M>>(
  url: P,
  ...init: InitArgs<Args>
) => Promise<Success<FetchResponse<Extract<paths[P][M], Record<string | number, any>>, Args, `${string}/${string}`>>>;

/** The JSON body of a 200 (unknown when there is none, so that such paths are no lists). */
type JsonOk<Operation> = Operation extends { responses: { 200: { content: { "application/json": infer Body } } } } ? Body : unknown;

/** The list endpoints: a GET answering `pagination` (with `data`, or a list of its own: `shareholders`). */
export type ListPath = {
  [P in keyof paths]: paths[P] extends { get: infer Operation } ? ([JsonOk<Operation>] extends [{ pagination: components["schemas"]["Pagination"] }] ? P : never) : never;
}[keyof paths];

export type ListPage<P extends ListPath> = JsonOk<paths[P]["get"]>;

export interface ArtPlatformClient {
  GET: CallMethod<"get">;
  POST: CallMethod<"post">;
  PUT: CallMethod<"put">;
  PATCH: CallMethod<"patch">;
  DELETE: CallMethod<"delete">;
  /**
   * Every page of a list, from `page` (default 1) until `has_more` is false; `limit` and filters
   * as given. Pages are offsets: rows created while iterating may shift an item to the next page.
   */
  pages<P extends ListPath>(path: P, ...init: InitArgs<MaybeOptionalInit<paths[P], "get">>): AsyncGenerator<ListPage<P>, void, undefined>;
  /** The token the next call sends (exchanged or renewed first if needed); null without credentials. */
  accessToken(): Promise<string | null>;
  /** openapi-fetch's client underneath, with the same middleware (for `use()` or raw answers). */
  readonly raw: Client<paths>;
}

/**
 * A client of the API: every path, parameter and body typed from its OpenAPI document
 * (schema.ts), on openapi-fetch. Each POST carries an Idempotency-Key (a random UUID unless you
 * send one), so retries never repeat an effect; answers of 400 and above are raised as ApiError.
 */
export function createArtPlatformClient(options: ArtPlatformOptions): ArtPlatformClient {
  const fetch = retryingFetch(options.fetch ?? ((request) => globalThis.fetch(request)), options.retry);
  const base = () => {
    const client = createClient<paths>({ baseUrl: options.baseUrl, fetch, bodySerializer: serializeBody });
    client.use(idempotencyKeys, problems);
    return client;
  };

  const tokens = options.apiKey === undefined ? null : apiKeyTokens(base(), options.apiKey, options);
  const bearer = tokens ? async () => (await tokens.token()).token : options.token === undefined ? null : async () => options.token!;
  const raw = base();
  if (bearer) raw.use(authorization(bearer));

  return {
    GET: raw.GET as CallMethod<"get">,
    POST: raw.POST as CallMethod<"post">,
    PUT: raw.PUT as CallMethod<"put">,
    PATCH: raw.PATCH as CallMethod<"patch">,
    DELETE: raw.DELETE as CallMethod<"delete">,
    pages: (path, ...init) => pagesOf(raw, path, init[0] as PageInit),
    accessToken: async () => (bearer ? bearer() : null),
    raw,
  };
}

function apiKeyTokens(client: Client<paths>, apiKey: string, options: ArtPlatformOptions): TokenSource {
  return new TokenSource({
    exchange: async () => (await (client.POST as CallMethod<"post">)("/v1/auth/token", { body: { api_key: apiKey, scope: options.scope ?? ["read"] } })).data as Token,
    renewBeforeSeconds: options.renewBeforeSeconds,
    now: options.now,
  });
}

type PageInit = { params?: { query?: { page?: number } } } | undefined;

async function* pagesOf<P extends ListPath>(client: Client<paths>, path: P, init: PageInit) {
  let page = init?.params?.query?.page ?? 1;
  for (;;) {
    const args = { ...init, params: { ...init?.params, query: { ...init?.params?.query, page } } };
    const { data } = await (client.GET as (url: P, init: unknown) => Promise<{ data: ListPage<P> }>)(path, args);
    yield data;
    const { pagination } = data as { pagination: components["schemas"]["Pagination"] };
    if (!pagination.has_more) return;
    page = pagination.page + 1;
  }
}

/**
 * The body as the API takes it: multipart/form-data when a field holds a file (a Blob or File, or a
 * list of them: `image`, `images`), JSON otherwise. In a form, each file is a part of its own under
 * the field's name (a File keeps its file name), objects and arrays are JSON text (`dimensions`,
 * `tags`), other values their text; null and undefined fields are left out.
 */
function serializeBody(body: unknown, headers?: unknown): unknown {
  if (body === null || typeof body !== "object" || body instanceof FormData || !Object.values(body).some(isFileField)) {
    return (defaultBodySerializer as (body: unknown, headers?: unknown) => unknown)(body, headers);
  }
  const form = new FormData();
  for (const [name, value] of Object.entries(body)) {
    if (value === null || value === undefined) continue;
    if (isFileField(value)) for (const file of [value].flat() as Blob[]) form.append(name, file);
    else form.append(name, typeof value === "object" ? JSON.stringify(value) : String(value));
  }
  return form;
}

const isFileField = (value: unknown) => value instanceof Blob || (Array.isArray(value) && value.length > 0 && value.every((v) => v instanceof Blob));

/** A random Idempotency-Key on every POST that has none: a retry then replays the first answer. */
const idempotencyKeys: Middleware = {
  onRequest({ request }) {
    if (request.method === "POST" && !request.headers.has("Idempotency-Key")) request.headers.set("Idempotency-Key", crypto.randomUUID());
  },
};

/** Answers of 400 and above, raised as ApiError (after the retries). */
const problems: Middleware = {
  async onResponse({ response }) {
    if (response.status >= 400) throw await ApiError.of(response);
  },
};

function authorization(bearer: () => Promise<string>): Middleware {
  return {
    async onRequest({ request }) {
      if (!request.headers.has("Authorization")) request.headers.set("Authorization", `Bearer ${await bearer()}`);
    },
  };
}
