import type { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import type { NextFunction, Request, Response, Router } from "express";
import type { AuthContext } from "../lib/actor.ts";
import { ApiError } from "../lib/errors.ts";
import { type ClaimedKey, type IdempotencyClaim, idempotencyHeaders, requestFingerprint } from "./idempotency.ts";
import { problemBody } from "./problem.ts";
import { consumeRateLimit, enforceRateLimit, type RateLimitDecision } from "./rate-limit.ts";
import { answerOf, sendBytes, sendReplay, sendResult } from "./replies.ts";
import { parse, parseInput } from "./request-input.ts";
import { authorize, type RouteAuth } from "./route-auth.ts";
import { type HandlerContext, Reply, type RequestInput, type RouteDef } from "./route-definition.ts";
import { documentRoute } from "./route-openapi.ts";
import { RouteReads, type RouteReadsDeps } from "./route-reads.ts";
import { type Answer, RequestUnitOfWork } from "./unit-of-work.ts";

// What the modules declare routes with, from one entry.
export type { Authenticator, RouteAuth } from "./route-auth.ts";
export { type AuthedRouteContext, Reply, type RouteContext, type RouteDef } from "./route-definition.ts";

/** What the router is built on: what its reads take (RouteReadsDeps), and where routes are served and documented. */
export interface ApiRouterDeps extends RouteReadsDeps {
  router: Router;
  registry: OpenAPIRegistry;
}

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
  private readonly reads: RouteReads;
  /** The router's first middlewares: a kept public read, or a share of an identical read under way (RouteReads). */
  readonly keptPublicReads: (req: Request, res: Response, next: NextFunction) => Promise<void>;
  readonly joinSharedReads: (req: Request, res: Response, next: NextFunction) => Promise<void>;

  constructor(private readonly deps: ApiRouterDeps) {
    this.reads = new RouteReads(deps);
    this.keptPublicReads = this.reads.keptPublicReads;
    this.joinSharedReads = this.reads.joinSharedReads;
  }

  route<const A extends RouteAuth, B = undefined, Q = undefined, P = undefined>(def: RouteDef<A, B, Q, P>): void {
    documentRoute(this.deps.registry, def);
    const { router } = this.deps;
    router[def.method](def.path, async (req: Request, res: Response, _next: NextFunction) => {
      await this.handle(def, req, res);
    });
  }

  /** A request through the route's stages, in order; a stage that refuses throws, and the error middleware answers. */
  private async handle<A extends RouteAuth, B, Q, P>(def: RouteDef<A, B, Q, P>, req: Request, res: Response): Promise<void> {
    const auth = await this.authenticate(req, res);
    await this.limitRate(req, res, auth);
    const keepIn = this.reads.cacheFor(def, res, auth);
    authorize(def.auth, auth);
    const input = await parseInput(def, req);
    if (def.method === "get") {
      await this.reads.read(def, req, res, auth, input, keepIn);
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
    enforceRateLimit(res, (res.locals.rateLimitDecision as RateLimitDecision | undefined) ?? (await consumeRateLimit(this.deps.rateLimiter, req, auth)));
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
    const unit = new RequestUnitOfWork(this.deps.idempotency, claim, (value) => answerOf(def, value, this.deps.checkResponses), `${def.method.toUpperCase()} ${def.path}`);
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
      answer = answerOf(def, result, this.deps.checkResponses);
    } catch (err) {
      await unit.failed(err, (refusal) => problemBody(refusal, res.getHeader("X-Request-Id")));
      await settled();
      throw err;
    }
    await unit.answered(result, answer);
    await settled();
    sendResult(res, answer.status, answer.body);
  }
}
