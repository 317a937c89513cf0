/**
 * Every error code the API answers with: its status, title, when it happens and what the client
 * does about it. The one source of the titles of problem+json bodies (errors.ts), the pages each
 * `type` URL answers (`GET /problems/<code>`), the OpenAPI's error examples and docs/errors.md.
 * ApiError takes only these codes, so a new code is added here first.
 */
export interface ProblemType {
  status: number;
  title: string;
  /** When the API answers it. */
  when: string;
  /** What the client does about it. */
  whatToDo: string;
  /** A `detail` as the API writes it (the documentation's examples). */
  detail: string;
  /** Members this problem carries besides the common ones: name -> meaning. */
  members?: Record<string, string>;
  /** Those members' values in the documentation's example. */
  example?: Record<string, unknown>;
  /** The operations (operationId) that answer it, when only some do: the others' documents leave it out. */
  onlyOn?: readonly string[];
}

const FIELD_ERRORS = "Per-field problems: `field` (a dotted path, `dimensions.width`), `code` (`too_small`, `invalid_type`, `unknown_field`, `required`...) and `message`.";
const RETRY_AFTER = "The `Retry-After` header gives the seconds to wait.";

/**
 * The rules a 409 `invalid_state` names in `reason` (docs/ownership-and-money.md): the artwork's
 * states and party rules of its moves' table (artwork-moves.ts; a test checks this list covers it),
 * then the other modules' rules.
 */
export const REFUSAL_REASONS = [
  "uncertified",
  "removed",
  "listing_closed",
  "listed",
  "selling",
  "token_moved",
  "order_fillable",
  "disputed",
  "refunding",
  "shares_issued",
  "withdrawing",
  "resold",
  "external_wallet",
  "owner_unknown",
  "own_listing",
  "own_artwork",
  "not_fractionalized",
  "paid_onchain",
  "seller_not_approved",
  "insufficient_balance",
  "hold_limit",
  "free_ticket_limit",
  "below_minimum_charge",
];

export const PROBLEM_TYPES = {
  validation_failed: {
    status: 400,
    title: "Validation failed",
    when: "The request body (JSON or the fields of a multipart form) breaks its schema or a rule of the operation: a missing or unknown field, a value of the wrong type or out of bounds, a combination the operation refuses (an artwork for sale without a price). The admin reports also answer it for a `period` or `format` they cannot report on.",
    whatToDo: "Correct the fields named in `errors` and send the request again. The operation's request schema in the API reference lists every field and bound.",
    detail: "price_usd: must be >= 0",
    members: { errors: FIELD_ERRORS },
    example: { errors: [{ field: "price_usd", code: "too_small", message: "must be >= 0" }] },
  },
  invalid_json: {
    status: 400,
    title: "Malformed JSON body",
    when: "The body is not valid JSON, not UTF-8, nests deeper than 64 levels, or does not decompress as its `Content-Encoding` says.",
    whatToDo: "Send a well-formed UTF-8 JSON document with `Content-Type: application/json` (serialize it with a JSON library rather than by hand).",
    detail: "The request body is not valid JSON",
  },
  invalid_parameter: {
    status: 400,
    title: "Invalid parameter",
    when: "A path or query parameter, or a header such as `Idempotency-Key`, has a value the operation does not accept: an unknown enum value, a number out of bounds, a malformed date or percent-escape.",
    whatToDo: "Correct the parameter named in `errors`; the operation's parameters in the API reference give their types and bounds. Unknown query parameters are ignored, so check the spelling of the ones you rely on.",
    detail: "limit: must be <= 100",
    members: { errors: FIELD_ERRORS },
    example: { errors: [{ field: "limit", code: "too_big", message: "must be <= 100" }] },
  },
  malformed_request: {
    status: 400,
    title: "Malformed request",
    when: "The request is not well-formed HTTP/1.1 (answered by the server before any route, and the connection is closed).",
    whatToDo: "Check the HTTP client or proxy that sends it; a request built by an ordinary HTTP library never gets this.",
    detail: "The request is not well-formed HTTP/1.1",
  },
  unauthenticated: {
    status: 401,
    title: "Authentication required",
    when: "An operation that needs a credential was called without `Authorization: Bearer <token>`.",
    whatToDo: "Exchange your API key for a token (`POST /v1/auth/token`) or sign in with Ethereum, and send it as `Authorization: Bearer <token>`.",
    detail: "A bearer token is required",
  },
  invalid_credentials: {
    status: 401,
    title: "Invalid credentials",
    when: "`POST /v1/auth/token` was sent an API key that is not valid or has been revoked, or `POST /v1/auth/siwe/verify` a sign-in it refuses (the signature, domain, URI, chain, expiry or nonce: `detail` says which).",
    whatToDo: "Check the key as it was issued (a revoked key stays revoked: create another), or sign a new SIWE message with a fresh nonce (`POST /v1/auth/siwe/nonce`) for this API's domain and chain.",
    detail: "The API key is not valid or has been revoked",
    onlyOn: ["createToken", "verifySiwe"],
  },
  token_invalid: {
    status: 401,
    title: "Invalid token",
    when: "The bearer sent is not a token or API key the API issued, or the `Authorization` header is not `Bearer <token>`. Also on public operations: a credential, if sent, must be valid.",
    whatToDo: "Send a token from `POST /v1/auth/token` (or an API key where the operation accepts one) exactly as it was issued, or send none on a public operation.",
    detail: "The bearer token is not valid",
  },
  token_expired: {
    status: 401,
    title: "Token expired",
    when: "The bearer token is past its 24 hours of life.",
    whatToDo: "Exchange your API key for a new token (`POST /v1/auth/token`) and retry; the SDK does this for you when it holds the key.",
    detail: "This token has expired; exchange your API key for a new one",
  },
  token_revoked: {
    status: 401,
    title: "Token revoked",
    when: "The bearer token (or the API key it came from) has been revoked: `DELETE /v1/auth/token`, `DELETE /v1/api-keys/{id}`.",
    whatToDo: "Get a new token from a valid API key. If you did not revoke it, someone with access to the account did.",
    detail: "This token has been revoked",
  },
  payment_declined: {
    status: 402,
    title: "Payment declined",
    when: "A purchase (a sale, shares, tickets) was charged while the request waited and the card was declined; nothing was bought and what was held (the listing, the shares, the seats) is released.",
    whatToDo: "Ask the buyer for another payment method, or to contact their bank, and purchase again with a new `Idempotency-Key`. `decline_code` says why the processor declined.",
    detail: "Your card was declined",
    members: {
      decline_code: "The processor's reason (`card_declined`, `insufficient_funds`...), or null",
      transaction_id: "The sale's transaction that failed (marketplace purchases)",
      purchase_id: "The share purchase that failed (fractional purchases)",
      order_id: "The ticket order that failed (ticket purchases)",
    },
    example: { decline_code: "insufficient_funds", transaction_id: "txn_01JD3Y5V0Q3G7W7J6T4N4C2X1M" },
  },
  insufficient_scope: {
    status: 403,
    title: "Insufficient scope",
    when: "The token does not hold the scope the operation requires (each operation's description names it).",
    whatToDo: "Exchange your API key for a token with the scope named in `required_scope` (`POST /v1/auth/token` with `scope`).",
    detail: "This endpoint requires the artworks:write scope",
    members: { required_scope: "The scope the operation requires" },
    example: { required_scope: "artworks:write" },
  },
  forbidden: {
    status: 403,
    title: "Forbidden",
    when: "The caller is authenticated but may not do this: not the owner of the resource, or not of the role the operation is limited to (artist, admin).",
    whatToDo: "Act on resources of your own, or have their owner or an admin do it. `detail` says which rule refused.",
    detail: "This endpoint is limited to the roles artist, admin",
  },
  account_suspended: {
    status: 403,
    title: "Account suspended",
    when: "The user the credential belongs to has been suspended by an admin; every operation, public ones included, refuses its tokens and API keys.",
    whatToDo: "Contact the platform's support; a suspension is lifted only by an admin.",
    detail: "This account is suspended",
  },
  not_found: {
    status: 404,
    title: "Not found",
    when: "No resource has this id (or it was deleted), the resource is another user's and private to them, or no operation exists at this method and path.",
    whatToDo: "Check the id (each kind has its prefix: `art_`, `usr_`, `lst_`...) and the path against the API reference. Ids of another user's private resources answer 404, not 403, so that their existence is not disclosed.",
    detail: "Artwork not found",
  },
  request_timeout: {
    status: 408,
    title: "Request timeout",
    when: "The request was not received in full in time (answered by the server before any route, and the connection is closed).",
    whatToDo: "Retry over a faster connection; send large uploads without pauses.",
    detail: "The request was not received in time",
  },
  invalid_state: {
    status: 409,
    title: "Invalid state",
    when: "The resource's state refuses the move: a listing that is no longer active, an offer already answered, an event that has ended, an artwork under dispute. `reason` names the rule when one of the ownership and money rules refused.",
    whatToDo: "Read the resource again (its `status`) and act on what it is now; `detail` says what the state requires. docs/ownership-and-money.md explains each `reason`. With `Retry-After`, the state is a chain effect under way (a sale's transfer, an order's cancellation, a withdrawal, a refund) that ends by itself: the move may succeed after that many seconds.",
    detail: "The artwork cannot be fractionalized: it is listed for sale (lst_01JD3Y5V0Q3G7W7J6T4N4C2X1M, active); cancel the listing first",
    members: {
      reason: `Which rule refused: ${REFUSAL_REASONS.map((r) => `\`${r}\``).join(", ")}`,
      held: "`hold_limit`: the seats the buyer holds unpaid now",
      allowed: "`hold_limit`, `free_ticket_limit`: the most the rule allows",
      taken: "`free_ticket_limit`: the free tickets the buyer has for the event",
    },
    example: { reason: "listed" },
  },
  immutable_field: {
    status: 409,
    title: "Immutable field",
    when: "A change to a field that is part of an artwork's certificate (title, year, medium, dimensions, image, artist).",
    whatToDo: "Leave those fields out of the change; a certified artwork's certificate never changes.",
    detail: "title is part of the artwork's certificate and cannot change",
    members: { errors: "The immutable fields sent, one entry each" },
    example: { errors: [{ field: "title", code: "immutable_field", message: "is part of the certificate and cannot change" }] },
  },
  conflict: {
    status: 409,
    title: "Conflict",
    when: "The request would duplicate something that must be unique (a username, an email, a second listing of one artwork, a second like) or races another request that changed the same resource.",
    whatToDo: "Read the resource again and decide: the thing may exist already. `detail` says what collided.",
    detail: "A user with this username or email already exists",
  },
  insufficient_shares: {
    status: 409,
    title: "Insufficient shares",
    when: "A share purchase asks for more shares than remain unsold.",
    whatToDo: "Buy at most `available` shares.",
    detail: "Only 12 shares are available; you asked for 20",
    members: { available: "The shares left to buy" },
    example: { available: 12 },
  },
  insufficient_tickets: {
    status: 409,
    title: "Insufficient tickets",
    when: "A ticket purchase asks for more tickets of a kind than are left.",
    whatToDo: "Buy at most `remaining` tickets, or another kind.",
    detail: "Only 2 in_person ticket(s) are left; you asked for 3",
    members: { remaining: "The tickets of that kind left" },
    example: { remaining: 2 },
  },
  insufficient_points: {
    status: 409,
    title: "Insufficient points",
    when: "A redemption costs more reward points than the user's balance.",
    whatToDo: "Earn more points (`GET /v1/rewards/rules` lists how) or choose a cheaper reward; `balance` is the balance now.",
    detail: "The reward costs 500 points; your balance is 320",
    members: { balance: "The user's points now" },
    example: { balance: 320 },
  },
  request_in_progress: {
    status: 409,
    title: "Request in progress",
    when: "A request with the same `Idempotency-Key` is still running (or a retry took the key over while this one ran).",
    whatToDo: `Retry the same request with the same key after a moment: once the first finishes, its answer is replayed. ${RETRY_AFTER}`,
    detail: "A request with this Idempotency-Key is still in progress; retry later",
  },
  payload_too_large: {
    status: 413,
    title: "Payload too large",
    when: "The JSON body is over 1 MiB, an uploaded file over its limit (20 MiB for images), or a form field over 64 KiB.",
    whatToDo: "Send less: a smaller image, or fewer or shorter fields.",
    detail: "The image exceeds 20 MiB",
  },
  unsupported_media_type: {
    status: 415,
    title: "Unsupported media type",
    when: "The body is not `application/json` (or `multipart/form-data` where the operation takes a file), its encoding is unknown, or an uploaded image is not a JPEG, PNG, WebP or GIF by its content.",
    whatToDo: "Send JSON with `Content-Type: application/json`, files as `multipart/form-data` to the operations that take them, and images in one of the four formats.",
    detail: "Send the body as application/json",
  },
  idempotency_key_reused: {
    status: 422,
    title: "Idempotency key reused",
    when: "An `Idempotency-Key` already used for one request came with a different one (another body, path or method, or a token of other scopes).",
    whatToDo: "Use a new key for each new request; reuse a key only to retry exactly the same request.",
    detail: "This Idempotency-Key was used with a different request; use a new key for a new request",
  },
  rate_limited: {
    status: 429,
    title: "Too many requests",
    when: "The caller used up its requests per minute: per user (all of its tokens and keys together), or per IP address for anonymous calls and refused credentials.",
    whatToDo: `Wait and retry. ${RETRY_AFTER} Every answer's \`RateLimit-Remaining\` and \`RateLimit-Reset\` let you slow down before reaching it.`,
    detail: "Rate limit of 120 requests per minute exceeded; retry in 17 s",
  },
  header_too_large: {
    status: 431,
    title: "Request header fields too large",
    when: "The request line and headers exceed 16 KiB (answered by the server before any route, and the connection is closed).",
    whatToDo: "Send shorter headers: usually a cookie or a query string that grew too long.",
    detail: "The request line and headers exceed the 16 KiB limit",
  },
  internal_error: {
    status: 500,
    title: "Internal server error",
    when: "An unexpected failure on the API's side. The body never carries its internals.",
    whatToDo: "Retry with the same `Idempotency-Key` (a write either happened once or not at all). If it persists, report it with the `request_id`.",
    detail: "An unexpected error occurred; quote the request_id when reporting it",
  },
  service_unavailable: {
    status: 503,
    title: "Service unavailable",
    when: "A dependency the answer needs is down or not ready: the database, the chain and its indexer together, or a contract that is not configured.",
    whatToDo: `Retry later, with the same \`Idempotency-Key\` for a write. ${RETRY_AFTER}`,
    detail: "A dependency is temporarily unavailable; retry shortly",
  },
} as const satisfies Record<string, ProblemType>;

export type ErrorCode = keyof typeof PROBLEM_TYPES;

/** The codes, in the catalogue's order (by status). */
export const ERROR_CODES = Object.keys(PROBLEM_TYPES) as ErrorCode[];

/** The `type` of a problem with `code`: a URL relative to the API's origin, whose page documents it. */
export function problemTypeUrl(code: ErrorCode): string {
  return `/problems/${code}`;
}

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(PROBLEM_TYPES, value);
}
