import type { Request, Response } from "express";
import type { ZodType } from "zod";
import type { Transact } from "../db/transact.ts";
import type { AuthContext } from "../lib/actor.ts";
import type { MultipartSpec, UploadedFile } from "./multipart.ts";
import type { RouteAuth } from "./route-auth.ts";

/** A route's declaration (ApiRouter.route): what it takes, answers and documents, and what its handler is given. */

export interface RouteContext<B, Q, P> {
  req: Request;
  res: Response;
  body: B;
  query: Q;
  params: P;
  auth: AuthContext | null;
  /** The uploaded file of a multipart request (routes with `multipart` only). */
  file: UploadedFile | undefined;
  /** Every uploaded file (routes whose `multipart` allows several). */
  files: UploadedFile[];
  /**
   * The request's unit of work: hand it to the service method that writes, which runs its whole
   * change in it and returns the answer from it. With an Idempotency-Key, that answer is stored in
   * the same transaction (see ApiRouter). One per request.
   */
  transaction: Transact;
}

export interface AuthedRouteContext<B, Q, P> extends RouteContext<B, Q, P> {
  auth: AuthContext;
}

export interface RouteDefBase<B, Q, P> {
  method: "get" | "post" | "patch" | "put" | "delete";
  /** Express-style path, `/v1/users/:id`. */
  path: string;
  /** The operation's stable name in the OpenAPI document (SDK method names): `listArtworks`, `acceptOffer`. */
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  body?: ZodType<B>;
  query?: ZodType<Q>;
  params?: ZodType<P>;
  /** The success status and its body schema. */
  status?: number;
  response: ZodType | null;
  responseDescription?: string;
  /** Extra documented error statuses beyond the ones every route has. */
  errors?: number[];
  /**
   * Also accept `multipart/form-data` (a file plus text fields mapped onto `body`); other routes
   * refuse it with 415. Documented beside the JSON body.
   */
  multipart?: MultipartSpec<NoInfer<B>>;
  /** The success body's media type when it is not JSON: the handler returns a `Reply` with the bytes. */
  produces?: string;
  /**
   * Other media types the success may come in (the handler returns a `Reply` with them, chosen by
   * the request: `?format=`, `Accept`), documented beside the main one, each with its schema.
   */
  alsoProduces?: Record<string, { schema: ZodType }>;
  /** Also taken as credentials: HTTP Basic with the bearer as its password (a page for browsers), documented as `basicAuth`. */
  acceptsBasic?: true;
  /**
   * Other documented answers (a handler picks one by returning a `Reply` with its status): other
   * successes, or an error page that is not problem+json (`contentType`, default JSON).
   */
  alternatives?: Record<number, { description: string; schema?: ZodType; contentType?: string }>;
  /**
   * The status of a plain result, when it depends on the result (one of `alternatives`, e.g. 202
   * while a certification is pending): services answer facts, the route maps them to HTTP.
   */
  statusOf?: (result: any) => number;
  /**
   * A GET whose handler reads the request beyond its URL and credential (headers such as Accept)
   * or writes response headers: its answer is computed for each request, never shared with
   * identical requests in flight (see SharedReads). Other GET handlers get no `req` or `res`.
   */
  perRequest?: true;
}

/**
 * What a handler returns to choose the status (one of `alternatives`) or to send a non-JSON body
 * (`produces`); any other value is sent as JSON with the route's status.
 */
export class Reply {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly raw?: { contentType: string; headers?: Record<string, string> },
  ) {}
}

export type HandlerContext<A extends RouteAuth, B, Q, P> = A extends { public: true } ? RouteContext<B, Q, P> : AuthedRouteContext<B, Q, P>;

export interface RouteDef<A extends RouteAuth, B, Q, P> extends RouteDefBase<B, Q, P> {
  auth: A;
  handler: (ctx: HandlerContext<A, B, Q, P>) => Promise<unknown>;
}

/** What a request carries, validated: path, query and body, and the files of a multipart request. */
export interface RequestInput<B, Q, P> {
  params: P;
  query: Q;
  body: B;
  file: UploadedFile | undefined;
  files: UploadedFile[];
  multipart: boolean;
  /** The body before validation: the JSON as sent, or a multipart request's fields as its route maps them. */
  rawBody: unknown;
}

/** What a read's answer may depend on, besides its URL. */
export type ReadParts<B, Q, P> = Pick<RouteContext<B, Q, P>, "body" | "query" | "params" | "auth">;
