import type { NextFunction, Request, Response } from "express";
import { recordStatements } from "../db/statements.ts";
import type { Transact } from "../db/transact.ts";
import type { AuthContext } from "../lib/actor.ts";
import type { IdempotencyStore } from "./idempotency.ts";
import type { PublicReadCache } from "./public-read-cache.ts";
import { consumeRateLimit, enforceRateLimit, type RateLimitDecision, type RateLimiter } from "./rate-limit.ts";
import { answerOf, etagOf, sendBytes, sendJson, sendResult } from "./replies.ts";
import type { Authenticator, RouteAuth } from "./route-auth.ts";
import { type HandlerContext, type ReadParts, Reply, type RequestInput, type RouteContext, type RouteDef } from "./route-definition.ts";
import { type Computed, sameCredential, SharedReads } from "./shared-reads.ts";
import type { Answer } from "./unit-of-work.ts";

export interface RouteReadsDeps {
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

/**
 * The GET path of ApiRouter: anonymous public reads kept per URL (PublicReadCache), identical reads
 * in flight computed once (SharedReads), and the answer with its ETag. The two middlewares answer
 * ahead of the routes; `read` is a route's own stage once the request is authorized and validated.
 */
export class RouteReads {
  constructor(private readonly deps: RouteReadsDeps) {}

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
      decision = await consumeRateLimit(this.deps.rateLimiter, req, auth);
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

  /**
   * Where an anonymous public read keeps its answer (null: not one): the same answer for every
   * caller, kept per URL for a moment (served by `keptPublicReads` ahead of the routes while kept).
   */
  cacheFor<A extends RouteAuth, B, Q, P>(def: RouteDef<A, B, Q, P>, res: Response, auth: AuthContext | null): PublicReadCache | null {
    const publicReads = this.deps.publicReads;
    if (!publicReads || def.method !== "get" || !("public" in def.auth) || auth) return null;
    res.setHeader("X-Cache", "miss");
    return publicReads;
  }

  /** A read: its answer as JSON with its ETag (kept when cacheable), or what else it returned. */
  async read<A extends RouteAuth, B, Q, P>(def: RouteDef<A, B, Q, P>, req: Request, res: Response, auth: AuthContext | null, input: RequestInput<B, Q, P>, keepIn: PublicReadCache | null): Promise<void> {
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
    const answer = answerOf(def, result, this.deps.checkResponses);
    if (answer.status !== 200 || answer.body === undefined) return { answer: null, result: answer };
    const json = JSON.stringify(answer.body);
    const etag = etagOf(json);
    if (keepIn) keepIn.store(url, computing, json, etag, statements);
    return { answer: { json, etag, isPublic: "public" in def.auth, cacheable: keepIn !== null }, result: answer };
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
    const answer = (value: unknown) => answerOf(def, value, this.deps.checkResponses);
    const transaction: Transact = (work) => this.deps.idempotency.transaction(null, work, answer);
    transaction.selfCommitting = (work) => this.deps.idempotency.selfCommitting(null, work, answer);
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
}
