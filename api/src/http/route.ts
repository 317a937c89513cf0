import { createHash } from "node:crypto";
import type { OpenAPIRegistry, RouteConfig } from "@asteasolutions/zod-to-openapi";
import type { NextFunction, Request, Response, Router } from "express";
import type { ZodType } from "zod";
import { z } from "../openapi/zod.ts";
import type { Role } from "../lib/actor.ts";
import type { Transact } from "../db/transact.ts";
import { recordStatements } from "../db/statements.ts";
import { ApiError, type FieldError } from "../lib/errors.ts";
import type { AuthContext } from "../lib/actor.ts";
import { type Scope, scopeCovers } from "../lib/scopes.ts";
import { type ClaimedKey, IDEMPOTENCY_TTL_HOURS, type IdempotencyClaim, type IdempotencyStore, requestFingerprint } from "./idempotency.ts";
import { type MultipartSpec, parseMultipart, type UploadedFile } from "./multipart.ts";
import type { PublicReadCache } from "./public-read-cache.ts";
import type { RateLimitDecision, RateLimiter } from "./rate-limit.ts";
import { type Computed, sameCredential, SharedReads } from "./shared-reads.ts";
import { problemBody, problemResponses } from "./problem.ts";
import { type Answer, RequestUnitOfWork } from "./unit-of-work.ts";

/** The request's bearer credential (an access token or an API key, on every route alike); null when none was sent. */
export type Authenticator = (req: Request) => Promise<AuthContext | null>;

export type RouteAuth =
  /** Anyone; a bearer, if sent, must still be valid (docs/decisions.md#public-endpoints). */
  | { public: true }
  /** A bearer holding `scope` (fine or coarse); `null`: any valid bearer (a token revoking itself). */
  | { scope: Scope | null; roles?: readonly Role[] };

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

interface RouteDefBase<B, Q, P> {
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

type HandlerContext<A extends RouteAuth, B, Q, P> = A extends { public: true } ? RouteContext<B, Q, P> : AuthedRouteContext<B, Q, P>;

export interface RouteDef<A extends RouteAuth, B, Q, P> extends RouteDefBase<B, Q, P> {
  auth: A;
  handler: (ctx: HandlerContext<A, B, Q, P>) => Promise<unknown>;
}

export interface ApiRouterDeps {
  router: Router;
  registry: OpenAPIRegistry;
  authenticate: Authenticator;
  rateLimiter: RateLimiter;
  idempotency: IdempotencyStore;
  /** Validate every response against its schema (tests): the documentation can never drift. */
  checkResponses: boolean;
  /** Anonymous public reads kept per URL (null: none kept); write requests invalidate it before they answer. */
  publicReads?: PublicReadCache | null;
  /** Identical reads in flight computed once per round (null: each computed alone). */
  sharedReads?: SharedReads | null;
}

/** What a request carries, validated: path, query and body, and the files of a multipart request. */
interface RequestInput<B, Q, P> {
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
type ReadParts<B, Q, P> = Pick<RouteContext<B, Q, P>, "body" | "query" | "params" | "auth">;

/**
 * Declares an endpoint once: the zod schemas validate the request, document it in OpenAPI and (in
 * tests) check the response. Order per request: authenticate, rate limit, authorize, validate,
 * idempotency, handler.
 *
 * Writes and Idempotency-Key (Stripe's recovery point): the route claims the key (in progress),
 * then every POST that writes the database does all of it in `ctx.transaction`, passed to its
 * service (`service.create(..., transaction)`; services take a `Transact`, default their own
 * database). What the transaction's work returns is the answer (a `Reply` for another status): it
 * is stored under the key inside that transaction, so the change and its stored answer commit or
 * roll back together, and a crash after the commit leaves a key that replays. The handler answers
 * what the work returned (a later answer, known only after the commit, is stored as well, with the
 * in-transaction one as what a crash leaves). A 4xx thrown inside rolls the change back and stores
 * the refusal; a 5xx frees the key. Effects outside the database go through the outbox or a job
 * written in the same transaction. Routes that write nothing (or only outside) need not use it.
 */
export class ApiRouter {
  constructor(private readonly deps: ApiRouterDeps) {}

  /**
   * Serves an anonymous public read kept by `publicReads` before any route is matched (the router's
   * first middleware): a kept URL was answered by a public route, which would answer it again. The
   * caller's address is rate limited as the route would; anything else goes on to the routes.
   */
  readonly keptPublicReads = async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const publicReads = this.deps.publicReads;
    if (!publicReads || (req.method !== "GET" && req.method !== "HEAD") || req.headers.authorization || req.headers["content-length"] || req.headers["transfer-encoding"]) {
      next();
      return;
    }
    const kept = publicReads.lookup(req.originalUrl);
    if (!kept) {
      next();
      return;
    }
    try {
      enforceRateLimit(res, await this.deps.rateLimiter.consume("anonymous", `ip:${req.ip}`));
    } catch (err) {
      next(err);
      return;
    }
    res.setHeader("X-Cache", "hit");
    sendJson(req, res, kept.json, kept.etag, true);
  };

  /**
   * Lets a GET join the next computation of the same read (same `Authorization` and URL) when one
   * is under way (SharedReads), before any route is matched: the URL was answered by a route that
   * shares its reads. The request's own credential must resolve to the context the computation
   * uses, and its rate limit is taken as the route would; anything else goes on to the routes.
   */
  readonly joinSharedReads = async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const sharedReads = this.deps.sharedReads;
    if (!sharedReads || (req.method !== "GET" && req.method !== "HEAD") || req.headers["content-length"] || req.headers["transfer-encoding"]) {
      next();
      return;
    }
    const key = SharedReads.keyOf(req.headers.authorization, req.originalUrl);
    const round = sharedReads.running(key);
    if (!round) {
      next();
      return;
    }
    // Waiting from now: the computation that answers starts after this request arrived.
    const answer = sharedReads.join(key)!;
    let auth: AuthContext | null;
    try {
      auth = await this.deps.authenticate(req);
    } catch {
      next(); // the route refuses it, and counts the refusal
      return;
    }
    if (!sameCredential(auth, round.auth)) {
      next();
      return;
    }
    let decision: RateLimitDecision;
    try {
      decision = await this.consumeRateLimit(req, auth);
      enforceRateLimit(res, decision);
    } catch (err) {
      next(err);
      return;
    }
    const shared = await answer;
    if (!shared) {
      res.locals.rateLimitDecision = decision; // taken once: the route does not take it again
      next();
      return;
    }
    if (shared.cacheable) res.setHeader("X-Cache", "miss");
    sendJson(req, res, shared.json, shared.etag, shared.isPublic);
  };

  private consumeRateLimit(req: Request, auth: AuthContext | null): Promise<RateLimitDecision> {
    return auth ? this.deps.rateLimiter.consume("user", auth.principal) : this.deps.rateLimiter.consume("anonymous", `ip:${req.ip}`);
  }

  route<const A extends RouteAuth, B = undefined, Q = undefined, P = undefined>(def: RouteDef<A, B, Q, P>): void {
    this.document(def);
    const { router } = this.deps;
    router[def.method](def.path, async (req: Request, res: Response, _next: NextFunction) => {
      await this.handle(def, req, res);
    });
  }

  /** A request through the route's stages, in order; a stage that refuses throws, and the error middleware answers. */
  private async handle<A extends RouteAuth, B, Q, P>(def: RouteDef<A, B, Q, P>, req: Request, res: Response): Promise<void> {
    const auth = await this.authenticate(req, res);
    await this.limitRate(req, res, auth);
    const keepIn = this.publicReadCacheFor(def, res, auth);
    authorize(def.auth, auth);
    const input = await parseInput(def, req);
    if (def.method === "get") {
      await this.read(def, req, res, auth, input, keepIn);
      return;
    }
    const claimed = await this.claimIdempotencyKey(def, req, auth, input);
    if (claimed?.kind === "replay") {
      sendReplay(res, claimed);
      return;
    }
    await this.write(def, req, res, auth, input, claimed?.claim ?? null);
  }

  private async authenticate(req: Request, res: Response): Promise<AuthContext | null> {
    try {
      return await this.deps.authenticate(req);
    } catch (err) {
      // A refused credential counts against the caller's address: guessing tokens is rate limited too.
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) enforceRateLimit(res, await this.deps.rateLimiter.consume("anonymous", `ip:${req.ip}`));
      throw err;
    }
  }

  private async limitRate(req: Request, res: Response, auth: AuthContext | null): Promise<void> {
    // Taken already when the request waited for a shared read that it could not use.
    enforceRateLimit(res, (res.locals.rateLimitDecision as RateLimitDecision | undefined) ?? (await this.consumeRateLimit(req, auth)));
  }

  /**
   * Where an anonymous public read keeps its answer (null: not one): the same answer for every
   * caller, kept per URL for a moment (served by `keptPublicReads` ahead of the routes while kept).
   */
  private publicReadCacheFor<A extends RouteAuth, B, Q, P>(def: RouteDef<A, B, Q, P>, res: Response, auth: AuthContext | null): PublicReadCache | null {
    const publicReads = this.deps.publicReads;
    if (!publicReads || def.method !== "get" || !("public" in def.auth) || auth) return null;
    res.setHeader("X-Cache", "miss");
    return publicReads;
  }

  /** A read: its answer as JSON with its ETag (kept when cacheable), or what else it returned. */
  private async read<A extends RouteAuth, B, Q, P>(def: RouteDef<A, B, Q, P>, req: Request, res: Response, auth: AuthContext | null, input: RequestInput<B, Q, P>, keepIn: PublicReadCache | null): Promise<void> {
    const computed = await this.computeOnce(def, req, res, { body: input.body, query: input.query, params: input.params, auth }, keepIn);
    if (computed.answer) {
      sendJson(req, res, computed.answer.json, computed.answer.etag, "public" in def.auth);
      return;
    }
    const result = computed.result;
    if (result instanceof Reply) {
      sendBytes(res, result);
      return;
    }
    const { status, body } = result as Answer;
    sendResult(res, status, body);
  }

  /** Computed once for every identical request in flight (SharedReads), unless it is per request. */
  private async computeOnce<A extends RouteAuth, B, Q, P>(def: RouteDef<A, B, Q, P>, req: Request, res: Response, parts: ReadParts<B, Q, P>, keepIn: PublicReadCache | null): Promise<Computed> {
    const sharedReads = def.perRequest ? null : this.deps.sharedReads;
    const outcome = sharedReads
      ? await sharedReads.lead(SharedReads.keyOf(req.headers.authorization, req.originalUrl), {
          compute: () => this.computeRead(def, req.originalUrl, this.readContext(def, parts), keepIn),
          auth: parts.auth,
        })
      : null;
    if (outcome?.kind === "shared") return { answer: outcome.answer, result: null };
    if (outcome) return outcome.computed;
    // Not shared with this request (another credential context, a failure): computed here.
    return this.computeRead(def, req.originalUrl, this.readContext(def, parts, def.perRequest ? { req, res } : undefined), keepIn);
  }

  /** Runs a read's handler: a 200 with a JSON body is the answer identical requests share (and `keepIn` keeps). */
  private async computeRead<A extends RouteAuth, B, Q, P>(def: RouteDef<A, B, Q, P>, url: string, ctx: RouteContext<B, Q, P>, keepIn: PublicReadCache | null): Promise<Computed> {
    const computing = keepIn ? keepIn.generation : 0;
    // A read to keep records the statements it sends: the cache forgets it when what they showed changes.
    const { value: result, statements } = keepIn ? await recordStatements(() => def.handler(ctx as HandlerContext<A, B, Q, P>)) : { value: await def.handler(ctx as HandlerContext<A, B, Q, P>), statements: null };
    if (result instanceof Reply && result.raw) return { answer: null, result };
    const answer = this.answer(def, result);
    if (answer.status !== 200 || answer.body === undefined) return { answer: null, result: answer };
    const json = JSON.stringify(answer.body);
    const etag = etagOf(json);
    if (keepIn) keepIn.store(url, computing, json, etag, statements);
    return { answer: { json, etag, isPublic: "public" in def.auth, cacheable: keepIn !== null }, result: answer };
  }

  /** The Idempotency-Key of a POST claimed for this request, or the answer stored under it (null: none sent). */
  private async claimIdempotencyKey<A extends RouteAuth, B, Q, P>(def: RouteDef<A, B, Q, P>, req: Request, auth: AuthContext | null, input: RequestInput<B, Q, P>): Promise<IdempotencyClaim | null> {
    const key = req.get("Idempotency-Key");
    if (def.method !== "post" || key === undefined) return null;
    parse(idempotencyHeaders, { "Idempotency-Key": key }, "header");
    const { file, files } = input;
    // A multipart request's fields are in rawBody (req.body is unset): they count, with or without a file.
    const fingerprinted = input.multipart ? { body: input.rawBody, ...(file ? { [file.field]: files.length > 1 ? files.map((f) => f.sha256) : file.sha256 } : {}) } : req.body;
    const principal = auth?.principal ?? `ip:${req.ip}`;
    return this.deps.idempotency.claim(principal, key, req.method, req.path, requestFingerprint(req.method, req.path, fingerprinted, auth?.scopes));
  }

  /** A write: the handler with the request's unit of work, the claimed key settled by its outcome, then the answer. */
  private async write<A extends RouteAuth, B, Q, P>(def: RouteDef<A, B, Q, P>, req: Request, res: Response, auth: AuthContext | null, input: RequestInput<B, Q, P>, claim: ClaimedKey | null): Promise<void> {
    const unit = new RequestUnitOfWork(this.deps.idempotency, claim, (value) => this.answer(def, value), `${def.method.toUpperCase()} ${def.path}`);
    const { body, query, params, file, files } = input;
    let result: unknown;
    let answer: Answer;
    // Whatever the write changed is heard by this process before anything is answered: it never
    // serves a kept read older than its own write (PublicReadCache.settleWrites).
    const settled = async () => this.deps.publicReads?.settleWrites();
    try {
      result = await def.handler({ req, res, body, query, params, auth, file, files, transaction: unit.transaction } as HandlerContext<A, B, Q, P>);
      if (result instanceof Reply && result.raw) {
        await unit.answeredBytes();
        await settled();
        sendBytes(res, result);
        return;
      }
      answer = this.answer(def, result);
    } catch (err) {
      await unit.failed(err, (refusal) => problemBody(refusal, res.getHeader("X-Request-Id")));
      await settled();
      throw err;
    }
    await unit.answered(result, answer);
    await settled();
    sendResult(res, answer.status, answer.body);
  }

  /**
   * A read's handler context: what its answer may depend on (URL, credential), and a fresh unit of
   * work per run; `req` and `res` only for a route that declares `perRequest` (`own`), refused for a
   * read that identical requests share.
   */
  private readContext<A extends RouteAuth, B, Q, P>(
    def: RouteDef<A, B, Q, P>,
    parts: ReadParts<B, Q, P>,
    own?: { req: Request; res: Response },
  ): RouteContext<B, Q, P> {
    const refuse = (what: string): never => {
      throw new Error(`GET ${def.path} reads ${what} in its handler, but its answer is shared by identical requests: declare perRequest: true`);
    };
    const answerOf = (value: unknown) => this.answer(def, value);
    const transaction: Transact = (work) => this.deps.idempotency.transaction(null, work, answerOf);
    transaction.selfCommitting = (work) => this.deps.idempotency.selfCommitting(null, work, answerOf);
    return {
      ...parts,
      file: undefined,
      files: [],
      transaction,
      get req(): Request {
        return own?.req ?? refuse("req");
      },
      get res(): Response {
        return own?.res ?? refuse("res");
      },
    };
  }

  /** A handler's (or unit of work's) result as status and body, checked against its schema in tests. */
  private answer<A extends RouteAuth, B, Q, P>(def: RouteDef<A, B, Q, P>, result: unknown): { status: number; body: unknown } {
    if (result instanceof Reply && result.raw) throw new Error(`${def.method.toUpperCase()} ${def.path}: a unit of work answers JSON, not bytes`);
    const status = result instanceof Reply ? result.status : (def.statusOf?.(result) ?? def.status ?? 200);
    const body = result instanceof Reply ? result.body : result;
    const schema = status === (def.status ?? 200) ? def.response : def.alternatives?.[status]?.schema;
    if (this.deps.checkResponses && schema) {
      const checked = schema.safeParse(body);
      if (!checked.success) {
        throw new Error(`Response of ${def.method.toUpperCase()} ${def.path} does not match its schema: ${checked.error.message}`);
      }
    }
    return { status, body };
  }

  private document<A extends RouteAuth, B, Q, P>(def: RouteDef<A, B, Q, P>): void {
    const openapiPath = def.path.replace(/:([A-Za-z_]+)/g, "{$1}");
    const request: RouteConfig["request"] = {};
    if (def.params) request.params = def.params as never;
    if (def.query) request.query = def.query as never;
    if (def.method === "post") request.headers = idempotencyHeaders as never;
    if (def.body) {
      request.body = {
        required: true,
        content: {
          "application/json": { schema: def.body },
          ...(def.multipart ? { "multipart/form-data": { schema: def.multipart.schema as never } } : {}),
        },
      };
    }
    const status = def.status ?? 200;
    const needsAuth = !("public" in def.auth);
    // 403 on public routes too: a suspended user's credential is refused everywhere; 503 on every
    // route: the database (or a dependency the answer needs) may be down.
    const extraErrors = new Set<number>([400, 401, 403, 429, 500, 503, ...(def.errors ?? [])]);
    if (def.method === "post") extraErrors.add(409).add(422);
    if (def.multipart) extraErrors.add(413).add(415);
    this.deps.registry.registerPath({
      method: def.method,
      path: openapiPath,
      operationId: def.operationId,
      summary: def.summary,
      description: [
        def.description,
        "public" in def.auth
          ? "Public: works without a token (a token, if sent, must be valid)."
          : `Requires a bearer (an access token or an API key)${def.auth.scope === null ? " of any scope" : ` with the \`${def.auth.scope}\` scope`}${def.auth.roles ? ` and the role ${def.auth.roles.join(" or ")}` : ""}.`,
      ]
        .filter(Boolean)
        .join("\n\n"),
      tags: def.tags,
      security: needsAuth ? [{ bearerAuth: [] }] : [{}, { bearerAuth: [] }],
      // The same rule, machine-readable (access tests and generated clients read it).
      "x-auth": "public" in def.auth ? { public: true } : { scope: def.auth.scope, ...(def.auth.roles ? { roles: [...def.auth.roles] } : {}) },
      request,
      responses: {
        [status]: def.response
          ? { description: def.responseDescription ?? "Success", content: { [def.produces ?? "application/json"]: { schema: def.response } } }
          : { description: def.responseDescription ?? "Success" },
        ...Object.fromEntries(
          Object.entries(def.alternatives ?? {}).map(([code, alt]) => [
            code,
            alt.schema ? { description: alt.description, content: { [alt.contentType ?? "application/json"]: { schema: alt.schema } } } : { description: alt.description },
          ]),
        ),
        ...problemResponses([...extraErrors]),
      },
    });
  }
}

/** A bearer route's rule: a credential holding its scope and, when it names roles, one of them. */
function authorize(rule: RouteAuth, auth: AuthContext | null): void {
  if ("public" in rule) return;
  if (!auth) throw ApiError.unauthenticated();
  if (rule.scope !== null && !scopeCovers(auth.scopes, rule.scope)) {
    throw new ApiError(403, "insufficient_scope", `This endpoint requires the ${rule.scope} scope`, {
      required_scope: rule.scope,
    });
  }
  if (rule.roles && !rule.roles.includes(auth.role)) {
    throw ApiError.forbidden(`This endpoint is limited to the role${rule.roles.length > 1 ? "s" : ""} ${rule.roles.join(", ")}`);
  }
}

async function parseInput<B, Q, P>(def: RouteDefBase<B, Q, P>, req: Request): Promise<RequestInput<B, Q, P>> {
  const params = parse(def.params, req.params, "path") as P;
  const query = parse(def.query, req.query, "query") as Q;
  let rawBody: unknown = req.body;
  let file: UploadedFile | undefined;
  let files: UploadedFile[] = [];
  const multipart = Boolean(req.is("multipart/form-data"));
  if (multipart) {
    if (!def.multipart) throw new ApiError(415, "unsupported_media_type", "Send the body as application/json");
    const form = await parseMultipart(req, def.multipart);
    rawBody = def.multipart.toBody(form.fields);
    file = form.file;
    files = form.files;
  }
  const schema = multipart ? (def.multipart?.body ?? def.body) : def.body;
  const body = schema ? (parse(schema, rawBody ?? {}, "body") as B) : (undefined as B);
  return { params, query, body, file, files, multipart, rawBody };
}

function enforceRateLimit(res: Response, decision: RateLimitDecision): void {
  res.setHeader("RateLimit-Limit", String(decision.limit));
  res.setHeader("RateLimit-Remaining", String(decision.remaining));
  res.setHeader("RateLimit-Reset", String(decision.resetSeconds));
  if (!decision.allowed) {
    throw new ApiError(429, "rate_limited", `Rate limit of ${decision.limit} requests per minute exceeded; retry in ${decision.resetSeconds} s`, {
      headers: { "Retry-After": String(decision.resetSeconds) },
    });
  }
}

/**
 * A read's answer with a validator: a weak ETag of its JSON, and 304 without a body when the client's
 * `If-None-Match` names it. Public reads made without a token may be stored by shared caches, which
 * must revalidate each time (`max-age=0`: the data changes with every write); anything read with a
 * token is private to the client.
 */
function sendJson(req: Request, res: Response, json: string, tag: string, isPublic: boolean): void {
  res.setHeader("ETag", tag);
  res.setHeader("Cache-Control", isPublic && !req.headers.authorization ? "public, max-age=0, must-revalidate" : "private, no-cache");
  if (isPublic) res.vary("Authorization");
  const wanted = req.get("If-None-Match");
  if (wanted && (wanted.trim() === "*" || wanted.split(",").some((t) => t.trim().replace(/^W\//, "") === tag.slice(2)))) {
    res.status(304).end();
    return;
  }
  writeJson(res, 200, json);
}

/** What Express's send would do with a JSON string, less its content negotiation and conversions. */
function writeJson(res: Response, status: number, json: string): void {
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(json));
  res.end(json);
}

function etagOf(json: string): string {
  return `W/"${createHash("sha1").update(json).digest("base64url")}"`;
}

/** A handler's bytes (`produces`), with their media type and headers. */
function sendBytes(res: Response, reply: Reply): void {
  for (const [name, value] of Object.entries(reply.raw?.headers ?? {})) res.setHeader(name, value);
  res.status(reply.status).type(reply.raw!.contentType).send(reply.body);
}

/** The answer stored under an Idempotency-Key, sent again. */
function sendReplay(res: Response, stored: { status: number; body: unknown }): void {
  res.setHeader("Idempotent-Replayed", "true");
  sendResult(res, stored.status, stored.body);
}

function sendResult(res: Response, status: number, body: unknown): void {
  if (status === 204 || body === undefined) {
    res.status(status).end();
    return;
  }
  if (status >= 400) {
    res.status(status).type("application/problem+json").send(JSON.stringify(body));
    return;
  }
  writeJson(res, status, JSON.stringify(body));
}

/** The header every POST takes, as documented and as checked (claimIdempotencyKey). */
const idempotencyHeaders = z.object({
  "Idempotency-Key": z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, "must be 1-255 printable ASCII characters")
    .optional()
    .openapi({
      param: {
        description: `Makes a retry safe: a request with a key used in the last ${IDEMPOTENCY_TTL_HOURS} h gets the first one's answer again (\`Idempotent-Replayed: true\`); the key with another request is 422, while the first still runs 409. 1-255 printable ASCII characters (a UUID).`,
      },
      example: "5f1d7c8e-9a0b-4c3d-8e2f-1a2b3c4d5e6f",
    }),
});

function parse(schema: ZodType | undefined, value: unknown, where: "path" | "query" | "header" | "body"): unknown {
  if (!schema) return undefined;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors: FieldError[] = result.error.issues.map((issue) => {
    const path = issue.path.map(String).join(".");
    const unknownKeys = issue.code === "unrecognized_keys" ? (issue as { keys: string[] }).keys : null;
    return {
      field: unknownKeys ? [path, unknownKeys[0]].filter(Boolean).join(".") : path || where,
      code: unknownKeys ? "unknown_field" : issue.code,
      message: unknownKeys ? `unknown field${unknownKeys.length > 1 ? "s" : ""} ${unknownKeys.join(", ")}` : issue.message,
    };
  });
  if (where === "body") throw ApiError.validation(errors);
  throw ApiError.invalidParameter(errors);
}
