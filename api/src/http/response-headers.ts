import type { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";

/**
 * The response headers the API sends, as the document declares them (components.headers), and which
 * answers carry each: every answer the request id and the rate limit's state, a 429 (or a 503 that
 * knows) Retry-After, a POST's replayed answer Idempotent-Replayed, a JSON read its ETag, an answer
 * drawn from a lagging indexer Indexer-Lag, an anonymous public read X-Cache.
 */
const HEADERS = {
  "X-Request-Id": { description: "The request's id (yours, if you sent a sane X-Request-Id): quote it when reporting a problem", schema: { type: "string", example: "req_01M8DM9T6QCJR0TKRW4SARYZ0F" } },
  "RateLimit-Limit": { description: "Requests a minute your budget allows (per user; anonymous calls per IP)", schema: { type: "integer", example: 600 } },
  "RateLimit-Remaining": { description: "Requests left in the current minute", schema: { type: "integer", example: 599 } },
  "RateLimit-Reset": { description: "Seconds until the budget is whole again", schema: { type: "integer", example: 42 } },
  "WWW-Authenticate": { description: "On a 401: the scheme to authenticate with (`Bearer`, with the error when a token was refused; `Basic` on the browser pages)", schema: { type: "string", example: 'Bearer realm="api", error="invalid_token"' } },
  "Retry-After": { description: "Seconds to wait before trying again", schema: { type: "integer", example: 30 } },
  "Idempotent-Replayed": { description: "`true` on the stored answer of an earlier request with the same Idempotency-Key", schema: { type: "string", enum: ["true"] } },
  ETag: { description: "A validator of the answer: send it back as If-None-Match for a 304 when nothing changed", schema: { type: "string", example: 'W/"5f1c0e"' } },
  "X-Cache": { description: "On an anonymous public read: `hit` when it came from the answer kept a moment for its URL, else `miss`", schema: { type: "string", enum: ["hit", "miss"] } },
  "Indexer-Lag": { description: "Present when the answer draws on the indexer and it is behind the chain: `blocks=<n|unknown>, seconds=<s>`", schema: { type: "string", example: "blocks=3, seconds=12" } },
} as const;

type HeaderName = keyof typeof HEADERS;

/** Every header the API itself sends beyond HTTP's own: what the document declares and a browser page may read. */
export const RESPONSE_HEADER_NAMES = Object.keys(HEADERS) as HeaderName[];

export function registerResponseHeaders(registry: OpenAPIRegistry): void {
  for (const [name, header] of Object.entries(HEADERS)) registry.registerComponent("headers", name, header as never);
}

const refs = (names: HeaderName[]) => Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));

/** The headers of an answer with `status` to a request with `method`. */
export function responseHeaders(method: string, status: number, contentType?: string, isPublic = false): Record<string, { $ref: string }> {
  const names: HeaderName[] = ["X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];
  if (status === 401) names.push("WWW-Authenticate");
  if (status === 429 || status === 503) names.push("Retry-After");
  if (status < 300) names.push("Indexer-Lag");
  if (method === "post" && status < 300) names.push("Idempotent-Replayed");
  const jsonRead = method === "get" && (contentType ?? "application/json") === "application/json";
  if (jsonRead && (status === 200 || status === 304)) names.push("ETag");
  // Set as the read starts: on its refusals too.
  if (method === "get" && isPublic) names.push("X-Cache");
  return refs(names);
}
