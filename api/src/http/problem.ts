import { isUtf8 } from "node:buffer";
import { randomUUID } from "node:crypto";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from "express";
import type { Logger } from "pino";
import { z } from "../openapi/zod.ts";
import { isDatabaseUnavailable } from "../db/connection.ts";
import { ApiError } from "../lib/errors.ts";
import { ERROR_CODES, type ErrorCode, PROBLEM_TYPES, type ProblemType, problemTypeUrl } from "../lib/problem-types.ts";
import { newId } from "../lib/ids.ts";

/** A member's meaning from the catalogue, with the code that carries it. */
function member(code: ErrorCode, name: string): string {
  const type: ProblemType = PROBLEM_TYPES[code];
  const meaning = type.members?.[name];
  if (!meaning) throw new Error(`The catalogue gives ${code} no member ${name}`);
  return `${type.status} \`${code}\`: ${meaning}`;
}

export const problemSchema = z
  .object({
    type: z.string().openapi({
      description: "The problem type, `/problems/<code>`: a URL relative to the API's origin whose page tells when the code happens and what to do (GET it: HTML for a browser, JSON otherwise; `GET /problems` lists every code)",
      example: "/problems/not_found",
    }),
    title: z.string().openapi({ description: "The code's title, the same for every problem of that code", example: "Not found" }),
    status: z.number().int().openapi({ example: 404 }),
    // An enum of the catalogue's codes, so that a generated client types them (the SDK's ApiError.code).
    code: z.enum(ERROR_CODES).openapi({ description: "The stable code to branch on (docs/errors.md lists them)", example: "not_found" }),
    detail: z.string().openapi({ description: "What happened in this request, for a person to read", example: "Artwork not found" }),
    request_id: z.string().openapi({ example: "req_01JD3Y5V0Q3G7W7J6T4N4C2X1M" }),
    errors: z
      .array(z.object({ field: z.string(), code: z.string(), message: z.string() }))
      .optional()
      .openapi({ description: PROBLEM_TYPES.validation_failed.members.errors }),
    // The members of some codes (their pages say which), documented here so that examples and clients know them.
    reason: z.string().optional().openapi({ description: member("invalid_state", "reason") }),
    held: z.number().int().optional().openapi({ description: member("invalid_state", "held") }),
    allowed: z.number().int().optional().openapi({ description: member("invalid_state", "allowed") }),
    taken: z.number().int().optional().openapi({ description: member("invalid_state", "taken") }),
    required_scope: z.string().optional().openapi({ description: member("insufficient_scope", "required_scope") }),
    available: z.number().int().optional().openapi({ description: member("insufficient_shares", "available") }),
    remaining: z.number().int().optional().openapi({ description: member("insufficient_tickets", "remaining") }),
    balance: z.number().int().optional().openapi({ description: member("insufficient_points", "balance") }),
    decline_code: z.string().nullable().optional().openapi({ description: member("payment_declined", "decline_code") }),
    transaction_id: z.string().optional().openapi({ description: member("payment_declined", "transaction_id") }),
    purchase_id: z.string().optional().openapi({ description: member("payment_declined", "purchase_id") }),
    order_id: z.string().optional().openapi({ description: member("payment_declined", "order_id") }),
  })
  .openapi("Problem", { description: "RFC 9457 problem details" });

const STATUS_TEXT: Record<number, string> = {
  400: "Malformed request, invalid parameter or failed validation",
  401: "Missing, invalid, expired or revoked bearer token",
  402: "The card was declined (`payment_declined`, with `decline_code`)",
  403: "Insufficient scope, not the owner, or account suspended",
  404: "Not found",
  408: "The request was not received in time (answered before any route; the connection closes)",
  409: "Refused by the resource's state, or a concurrent request with the same Idempotency-Key",
  413: "Body or upload too large",
  415: "Unsupported content type",
  422: "Idempotency-Key reused with a different request",
  429: "Rate limited (see Retry-After)",
  431: "The request line and headers exceed 16 KiB (answered before any route; the connection closes)",
  500: "Internal error",
  503: "A dependency is unavailable",
};

/** A problem of `code` as the API writes it, for the documentation (request_id and detail are examples). */
export function exampleProblem(code: ErrorCode) {
  const type: ProblemType = PROBLEM_TYPES[code];
  return { type: problemTypeUrl(code), title: type.title, status: type.status, code, detail: type.detail, request_id: "req_01JD3Y5V0Q3G7W7J6T4N4C2X1M", ...type.example };
}

/** The codes an operation's answers may carry (408 and 431 too: answered before any operation is chosen, they may meet any request). */
const operationCodes = ERROR_CODES.filter((code) => PROBLEM_TYPES[code].status in STATUS_TEXT);

/** One example of each code, as `components.examples.<code>` that the operations' error answers refer to. */
export function registerProblemExamples(registry: OpenAPIRegistry): void {
  for (const code of operationCodes) registry.registerComponent("examples", code, { summary: PROBLEM_TYPES[code].title, value: exampleProblem(code) });
}

/** The documented error answers of an operation: each status with an example of every code it carries. */
export function problemResponses(statuses: number[], operationId: string) {
  const answers = (code: ErrorCode) => (PROBLEM_TYPES[code] as ProblemType).onlyOn?.includes(operationId) ?? true;
  return Object.fromEntries(
    statuses
      .sort((a, b) => a - b)
      .map((s) => {
        const examples = Object.fromEntries(operationCodes.filter((code) => PROBLEM_TYPES[code].status === s && answers(code)).map((code) => [code, { $ref: `#/components/examples/${code}` }]));
        return [s, { description: STATUS_TEXT[s] ?? "Error", content: { "application/problem+json": { schema: problemSchema, examples } } }];
      }),
  );
}

/**
 * The answer to a purchase whose card was declined while the request waited: a 402 problem naming
 * the record that failed (`transaction_id`, `purchase_id`), for a route to return as its Reply body.
 */
export function paymentDeclinedProblem(res: Response, detail: string, declineCode: string | null, record: Record<string, string>) {
  return { type: problemTypeUrl("payment_declined"), title: PROBLEM_TYPES.payment_declined.title, status: 402, code: "payment_declined", detail, decline_code: declineCode, ...record, request_id: res.getHeader("X-Request-Id") };
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echo a sane inbound X-Request-Id, else mint `req_…` (docs/decisions.md#request-ids). */
export const requestId: RequestHandler = (req, res, next) => {
  const inbound = req.get("X-Request-Id");
  const id = inbound && REQUEST_ID.test(inbound) ? inbound : newId("request");
  res.locals.requestId = id;
  res.setHeader("X-Request-Id", id);
  next();
};

export function sendProblem(res: Response, err: ApiError): void {
  for (const [k, v] of Object.entries(err.extra.headers ?? {})) res.setHeader(k, v);
  res
    .status(err.status)
    .type("application/problem+json")
    .send(problemText(err, res.locals.requestId ?? res.getHeader("X-Request-Id") ?? randomUUID()));
}

/** The problem+json body of `err` (its headers go on the response, not in the body). */
export function problemBody(err: ApiError, requestId: unknown): Record<string, unknown> {
  const { headers: _headers, errors, ...rest } = err.extra;
  return {
    type: problemTypeUrl(err.code),
    title: err.title,
    status: err.status,
    code: err.code,
    detail: err.message,
    request_id: requestId,
    ...rest,
    ...(errors ? { errors } : {}),
  };
}

function problemText(err: ApiError, requestId: unknown): string {
  return JSON.stringify(problemBody(err, requestId));
}

/**
 * The HTTP server's `clientError`: a request Node cannot parse (a request line or headers over its
 * 16 KiB limit, malformed HTTP) gets the problem+json every other refusal has, where Node's own
 * answer is a bare status line. Written under Node's own condition (no answer on this connection
 * has begun), then the connection closes.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: { _headerSent?: boolean } | null })._httpMessage;
  if (!socket.writable || inFlight?._headerSent) {
    socket.destroy();
    return;
  }
  const problem =
    err.code === "HPE_HEADER_OVERFLOW"
      ? new ApiError(431, "header_too_large", "The request line and headers exceed the 16 KiB limit")
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? new ApiError(408, "request_timeout", "The request was not received in time")
        : new ApiError(400, "malformed_request", "The request is not well-formed HTTP/1.1");
  const body = problemText(problem, newId("request"));
  socket.end(
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

export const notFound: RequestHandler = (req, _res, next) => {
  next(new ApiError(404, "not_found", `No route for ${req.method} ${req.path}`));
};

/** Every error becomes problem+json; unknown errors are logged and never leak their text. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) {
      req.socket.destroy();
      return;
    }
    const api = toApiError(err);
    if (api.status >= 500) {
      logger.error({ err, request_id: res.locals.requestId, method: req.method, path: req.path }, "request failed");
    }
    sendProblem(res, api);
  };
}

const CLIENT_ERROR_CODES: Record<number, ErrorCode> = { 403: "forbidden", 404: "not_found", 413: "payload_too_large", 415: "unsupported_media_type" };

function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { status?: number; statusCode?: number; expose?: boolean; message?: string };
  // The router's decodeURIComponent of a path parameter (`/v1/artworks/%ff`): a URIError it gives status 400.
  if (err instanceof URIError && (e.status ?? e.statusCode) === 400) {
    return ApiError.invalidParameter([{ field: "path", code: "invalid_encoding", message: "contains a malformed percent-escape" }]);
  }
  // Any other client error of Express's own pieces (http-errors mark those with `expose`) keeps its
  // status; another library's `status` (an RPC's 429) is not the client's.
  const clientStatus = e?.expose === true ? (e.status ?? e.statusCode) : undefined;
  if (typeof clientStatus === "number" && clientStatus >= 400 && clientStatus < 500) {
    return new ApiError(clientStatus, CLIENT_ERROR_CODES[clientStatus] ?? "invalid_parameter", e.message || "The request could not be processed");
  }
  if (isDatabaseUnavailable(err)) {
    return new ApiError(503, "service_unavailable", "A dependency is temporarily unavailable; retry shortly", { headers: { "Retry-After": "5" } });
  }
  return new ApiError(500, "internal_error", "An unexpected error occurred; quote the request_id when reporting it");
}

/**
 * Wraps a body parser (express.json): what it refuses is a problem of the request body (not JSON,
 * too large, an unknown encoding, a body that does not decompress as its Content-Encoding says, a
 * wrong length), told apart here from every other error; its own failures (5xx) pass on as they are.
 */
export function bodyErrors(parser: RequestHandler): RequestHandler {
  return (req, res, next) => parser(req, res, (err?: unknown) => (err === undefined ? next() : next(toBodyError(err))));
}

function toBodyError(err: unknown): unknown {
  // What checkJsonBytes refused, passed on by the parser.
  if (err instanceof ApiError) return err;
  const e = err as { type?: string; status?: number; statusCode?: number; expose?: boolean; message?: string };
  if (e?.type === "entity.too.large") return new ApiError(413, "payload_too_large", "The request body exceeds the 1 MiB limit");
  if (e?.type === "entity.parse.failed") return new ApiError(400, "invalid_json", "The request body is not valid JSON");
  if (e?.type === "encoding.unsupported" || e?.type === "charset.unsupported") {
    return new ApiError(415, "unsupported_media_type", e.message ?? "Unsupported encoding");
  }
  const status = e?.status ?? e?.statusCode;
  if (e?.expose !== true || typeof status !== "number" || status < 400 || status >= 500) return err;
  // body-parser gives zlib's error (gzip, deflate, br) status 400 and no type of its own.
  const detail = e.type ? `The request body could not be read: ${e.message}` : "The request body does not match its Content-Encoding: it could not be decompressed";
  return new ApiError(400, "invalid_json", detail);
}

/** Nesting of arrays and objects no request needs; recursive readers of a body (its idempotency fingerprint) overflow far deeper. */
const MAX_JSON_DEPTH = 64;

/**
 * The JSON parser's `verify` (it sees the bytes before they are decoded): a body declared UTF-8
 * that is not (its bad bytes would be decoded to U+FFFD and stored so), or that nests deeper than
 * MAX_JSON_DEPTH, is refused with 400 invalid_json.
 */
export function checkJsonBytes(_req: unknown, _res: unknown, bytes: Buffer, charset: string | null): void {
  if (/^utf-?8$/i.test(charset ?? "utf-8") && !isUtf8(bytes)) throw new ApiError(400, "invalid_json", "The request body is not valid UTF-8");
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === 0x5c) i++; // the escaped character
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x5b || b === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) throw new ApiError(400, "invalid_json", `The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
    } else if (b === 0x5d || b === 0x7d) depth--;
  }
}

/**
 * POST/PUT/PATCH/DELETE bodies must be JSON (a DELETE may take one: a removal's reason), else
 * a route would run as if none had been sent. multipart/form-data passes on to the routes: those
 * declaring `multipart` read it, every other one refuses it with 415 (ApiRouter).
 */
export const requireJsonBody: RequestHandler = (req, _res, next) => {
  if (!["POST", "PUT", "PATCH", "DELETE"].includes(req.method)) return next();
  const length = Number(req.get("content-length") ?? 0);
  const chunked = req.get("transfer-encoding") !== undefined;
  if (length === 0 && !chunked) return next();
  if (req.is("application/json") || req.is("application/*+json") || req.is("multipart/form-data")) return next();
  next(new ApiError(415, "unsupported_media_type", "Send the body as application/json"));
};
