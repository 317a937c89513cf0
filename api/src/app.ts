import { createRequire } from "node:module";
import path from "node:path";
import { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import type { Config } from "./config.ts";
import express, { type Express } from "express";
import { type IndexerProbe, staleness } from "./chain/indexer-lag.ts";
import { accessLog } from "./http/access-log.ts";
import { cors } from "./http/cors.ts";
import { IdempotencyStore } from "./http/idempotency.ts";
import { bodyErrors, checkJsonBytes, errorHandler, notFound, requestId, requireJsonBody } from "./http/problem.ts";
import { problemPages } from "./http/problem-pages.ts";
import type { PublicReadCache } from "./http/public-read-cache.ts";
import type { RateLimiter } from "./http/rate-limit.ts";
import { ApiRouter } from "./http/route.ts";
import { SharedReads } from "./http/shared-reads.ts";
import type { ProcessPresence } from "./db/presence.ts";
import type { Services } from "./modules/index.ts";
import type { FeatureModule, PlatformDeps } from "./modules/module.ts";
import { buildOpenApiDocument, swaggerInit, swaggerPage, swaggerPageCsp } from "./openapi/document.ts";

export interface AppDeps {
  deps: PlatformDeps;
  rateLimiter: RateLimiter;
  indexer: IndexerProbe | null;
  services: Services;
  /** The modules whose routes the app serves (api/src/modules/index.ts). */
  modules: readonly FeatureModule<any, any>[];
  /** Anonymous public reads kept per URL; none when null or absent. */
  publicReads?: PublicReadCache | null;
  /** Identical reads in flight computed once (default: a new SharedReads; null: each computed alone). */
  sharedReads?: SharedReads | null;
  /** This process's presence: the idempotency keys it claims are freed as soon as it is gone. */
  presence?: ProcessPresence;
}

const require = createRequire(import.meta.url);

/** Builds the HTTP application; never listens (server.ts does). */
export function createApp(deps: AppDeps): Express {
  const { services } = deps;
  const { config } = deps.deps;
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", config.trustProxy);
  app.set("etag", false);
  app.set("query parser", "simple");

  app.use(requestId);
  app.use(accessLog(deps.deps.logger));
  // Every answer is read as the type it declares: JSON carrying user text, a 404 echoing the path.
  app.use((_req, res, next) => {
    res.setHeader("X-Content-Type-Options", "nosniff");
    next();
  });
  // Browser pages of the allowed origins; preflights are answered here, before any credential or rate limit.
  app.use(cors(config.cors.allowedOrigins));
  // Answers drawn from the indexer (owners, transfers, shareholders) say when it is behind the chain.
  const indexerLag = deps.indexer?.lag;
  if (indexerLag) {
    app.use((_req, res, next) => {
      const stale = staleness(indexerLag(), Date.now());
      if (stale) res.setHeader("Indexer-Lag", `blocks=${stale.lagBlocks ?? "unknown"}, seconds=${Math.floor(stale.behindForMs / 1000)}`);
      next();
    });
  }

  const registry = new OpenAPIRegistry();
  const router = express.Router();
  const api = new ApiRouter({
    router,
    registry,
    authenticate: (req) => services.auth.authenticate(req.get("Authorization")),
    rateLimiter: deps.rateLimiter,
    idempotency: new IdempotencyStore(deps.deps.db, { crashAfterCommit: config.idempotency.crashAfterCommit, presence: deps.presence }),
    checkResponses: config.env === "test",
    publicReads: deps.publicReads ?? null,
    sharedReads: deps.sharedReads === undefined ? new SharedReads() : deps.sharedReads,
  });
  router.use(api.keptPublicReads);
  router.use(api.joinSharedReads);
  router.use(requireJsonBody);
  router.use(bodyErrors(express.json({ limit: "1mb", strict: true, type: ["application/json", "application/*+json"], verify: checkJsonBytes })));
  // Each module declares its routes (health's on the bare app, before the /v1 pipeline is mounted).
  for (const module of deps.modules) module.routes?.({ api, app, deps: deps.deps, indexer: deps.indexer }, services);

  let document: unknown;
  router.get("/v1/openapi.json", (_req, res) => {
    document ??= buildOpenApiDocument(registry, config.publicBaseUrl);
    res.json(document);
  });
  app.use(router);

  const swaggerDir = path.dirname(require.resolve("swagger-ui-dist/package.json"));
  const docsCsp = swaggerPageCsp(new URL(config.publicBaseUrl).origin);
  app.get("/docs", (_req, res) => {
    res.setHeader("Content-Security-Policy", docsCsp);
    res.type("html").send(swaggerPage("/v1/openapi.json"));
  });
  app.get("/docs/init.js", (_req, res) => {
    res.type("application/javascript").send(swaggerInit("/v1/openapi.json"));
  });
  app.use("/docs/assets", express.static(swaggerDir, { index: false, maxAge: "1h" }));
  // Every problem's `type` URL answers with the code's page.
  app.use(problemPages());

  app.use(notFound);
  app.use(errorHandler(deps.deps.logger));
  return app;
}

/** The document GET /v1/openapi.json serves, from the route declarations alone (`npm run openapi`). */
export function describeApi(config: Config, modules: AppDeps["modules"]): ReturnType<typeof buildOpenApiDocument> {
  return buildOpenApiDocument(declareRoutes(config, modules), config.publicBaseUrl);
}

/**
 * The modules' route declarations, on a router that never serves: no handler runs and no service,
 * database or chain is reached; only `config` is read.
 */
export function declareRoutes(config: Config, modules: AppDeps["modules"]): OpenAPIRegistry {
  const registry = new OpenAPIRegistry();
  const notServing = (): never => {
    throw new Error("declareRoutes: these routes only document, they never serve");
  };
  const api = new ApiRouter({
    router: express.Router(),
    registry,
    authenticate: notServing,
    rateLimiter: { consume: notServing, ready: notServing, close: notServing },
    idempotency: {} as IdempotencyStore,
    checkResponses: false,
  });
  const deps = { config } as PlatformDeps;
  for (const module of modules) module.routes?.({ api, app: express(), deps, indexer: null }, {} as Services);
  return registry;
}
