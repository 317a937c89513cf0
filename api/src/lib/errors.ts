/** One error class for every refusal; the problem middleware renders it as RFC 9457 problem+json. */
export interface FieldError {
  field: string;
  code: string;
  message: string;
}

const TITLES: Record<string, string> = {
  validation_failed: "Validation failed",
  invalid_json: "Malformed JSON body",
  invalid_parameter: "Invalid parameter",
  malformed_request: "Malformed request",
  header_too_large: "Request header fields too large",
  request_timeout: "Request timeout",
  unauthenticated: "Authentication required",
  token_invalid: "Invalid token",
  token_expired: "Token expired",
  token_revoked: "Token revoked",
  insufficient_scope: "Insufficient scope",
  forbidden: "Forbidden",
  account_suspended: "Account suspended",
  not_found: "Not found",
  invalid_state: "Invalid state",
  immutable_field: "Immutable field",
  conflict: "Conflict",
  insufficient_shares: "Insufficient shares",
  insufficient_points: "Insufficient points",
  request_in_progress: "Request in progress",
  payload_too_large: "Payload too large",
  unsupported_media_type: "Unsupported media type",
  idempotency_key_reused: "Idempotency key reused",
  rate_limited: "Too many requests",
  internal_error: "Internal server error",
  service_unavailable: "Service unavailable",
  method_not_allowed: "Method not allowed",
};

export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
    readonly extra: { errors?: FieldError[]; headers?: Record<string, string>; [key: string]: unknown } = {},
  ) {
    super(detail);
  }

  get title(): string {
    return TITLES[this.code] ?? this.code.replace(/_/g, " ");
  }

  static validation(errors: FieldError[], detail?: string): ApiError {
    const first = errors[0];
    return new ApiError(400, "validation_failed", detail ?? (first ? `${first.field}: ${first.message}` : "Invalid request"), { errors });
  }
  static invalidParameter(errors: FieldError[]): ApiError {
    const first = errors[0];
    return new ApiError(400, "invalid_parameter", first ? `${first.field}: ${first.message}` : "Invalid parameter", { errors });
  }
  static unauthenticated(detail = "A bearer token is required"): ApiError {
    return new ApiError(401, "unauthenticated", detail, { headers: { "WWW-Authenticate": 'Bearer realm="api"' } });
  }
  static forbidden(detail: string): ApiError {
    return new ApiError(403, "forbidden", detail);
  }
  static notFound(what: string): ApiError {
    return new ApiError(404, "not_found", `${what} not found`);
  }
  static conflict(code: string, detail: string): ApiError {
    return new ApiError(409, code, detail);
  }
  /** A move the state refuses: 409 `invalid_state`, with `reason` saying which rule (docs/ownership-and-money.md). */
  static refused(reason: string, detail: string, extra: Record<string, unknown> = {}): ApiError {
    return new ApiError(409, "invalid_state", detail, { reason, ...extra });
  }
}

/** Lookup-or-404: the value found, or a 404 naming `what` ("Artwork"). */
export function found<T>(value: T | null | undefined, what: string): NonNullable<T> {
  if (value === null || value === undefined) throw ApiError.notFound(what);
  return value;
}
