/** One error class for every refusal; the problem middleware renders it as RFC 9457 problem+json. */
import { type ErrorCode, PROBLEM_TYPES } from "./problem-types.ts";

export interface FieldError {
  field: string;
  code: string;
  message: string;
}

export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    detail: string,
    readonly extra: { errors?: FieldError[]; headers?: Record<string, string>; [key: string]: unknown } = {},
  ) {
    super(detail);
  }

  get title(): string {
    return PROBLEM_TYPES[this.code].title;
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
  static conflict(code: ErrorCode, detail: string): ApiError {
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
