import type { components } from "./schema.ts";

/** The API's error body: RFC 9457 problem+json with a stable `code` (402 and 429 carry more fields). */
export type Problem = components["schemas"]["Problem"] & Record<string, unknown>;

export type FieldError = NonNullable<Problem["errors"]>[number];

/** The problem codes the API documents (its OpenAPI document's Problem `code`). */
export type ErrorCode = components["schemas"]["Problem"]["code"];

/**
 * Every answer of 400 or more, raised: `code` is what to branch on (`not_found`,
 * `validation_failed`, `insufficient_scope`, `payment_declined`...); `body` is the whole problem.
 */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: number;
  /** One of the documented codes, or `http_<status>` when the body is no problem (a proxy's error page). */
  readonly code: ErrorCode | `http_${number}`;
  readonly title: string;
  readonly detail: string;
  /** Quote it when reporting a problem: the API logs under it. */
  readonly requestId: string | null;
  /** Per-field problems of a `validation_failed` or `invalid_parameter`. */
  readonly errors: FieldError[];
  /** The parsed problem, or the text of a body that is not JSON (a proxy's error page). */
  readonly body: Problem | string;
  readonly response: Response;

  constructor(response: Response, body: Problem | string) {
    const problem = typeof body === "string" ? null : body;
    const detail = problem?.detail ?? (typeof body === "string" && body ? body.slice(0, 500) : response.statusText);
    const code = problem?.code ?? (`http_${response.status}` as const);
    super(`${response.status} ${code}: ${detail}`);
    this.status = response.status;
    this.code = code;
    this.title = problem?.title ?? response.statusText;
    this.detail = detail;
    this.requestId = problem?.request_id ?? response.headers.get("X-Request-Id");
    this.errors = problem?.errors ?? [];
    this.body = body;
    this.response = response;
  }

  /** The error of a failed answer, its body read from a copy (the response stays readable). */
  static async of(response: Response): Promise<ApiError> {
    const text = await response.clone().text();
    let body: Problem | string = text;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) body = parsed as Problem;
    } catch {
      // not JSON: kept as text
    }
    return new ApiError(response, body);
  }
}
