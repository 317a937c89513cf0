import { createRequire } from "node:module";
import path from "node:path";
import { OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import express, { type Express } from "express";
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import { pinoHttp } from "pino-http";
import type { PublicClient } from "viem";
import type { Config } from "./config.ts";
import type { Database } from "./db/database.ts";
import { IdempotencyStore } from "./http/idempotency.ts";
import { bodyErrors, errorHandler, notFound, requestId, requireJsonBody } from "./http/problem.ts";
import type { RateLimiter } from "./http/rate-limit.ts";
import { ApiRouter } from "./http/route.ts";
import { registerAdminRoutes } from "./modules/admin/admin.routes.ts";
import { registerArtworksRoutes } from "./modules/artworks/artworks.routes.ts";
import type { ArtworksService } from "./modules/artworks/artworks.service.ts";
import type { AdminService } from "./modules/admin/admin.service.ts";
import { registerAuthRoutes } from "./modules/auth/auth.routes.ts";
import type { AuthService } from "./modules/auth/auth.service.ts";
import { registerCertificatesRoutes } from "./modules/certificates/certificates.routes.ts";
import type { CertificatesService } from "./modules/certificates/certificates.service.ts";
import { type IndexerProbe, registerHealthRoutes } from "./modules/health/health.routes.ts";
import { registerUsersRoutes } from "./modules/users/users.routes.ts";
import type { UsersService } from "./modules/users/users.service.ts";
import { registerWebhooksRoutes } from "./modules/webhooks/webhooks.routes.ts";
import type { WebhooksService } from "./modules/webhooks/webhooks.service.ts";
import { buildOpenApiDocument, swaggerInit, swaggerPage, swaggerPageCsp } from "./openapi/document.ts";

export interface AppDeps {
  config: Config;
  db: Kysely<Database>;
  logger: Logger;
  publicClient: PublicClient;
  rateLimiter: RateLimiter;
  indexer: IndexerProbe | null;
  services: {
    auth: AuthService;
    users: UsersService;
    admin: AdminService;
    artworks: ArtworksService;
    certificates: CertificatesService;
    webhooks: WebhooksService;
  };
}

const require = createRequire(import.meta.url);

/** Builds the HTTP application; never listens (server.ts does). */
export function createApp(deps: AppDeps): Express {
  const { config, services } = deps;
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", config.trustProxy);
  app.set("etag", false);
  app.set("query parser", "simple");

  app.use(requestId);
  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: (_req, res) => String(res.getHeader("X-Request-Id")),
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? "error" : res.statusCode >= 400 ? "info" : "debug"),
      serializers: { req: (req) => ({ method: req.method, url: req.url }), res: (res) => ({ statusCode: res.statusCode }) },
    }),
  );

  registerHealthRoutes(app, { db: deps.db, publicClient: deps.publicClient, indexer: deps.indexer, maxLagBlocks: config.indexer.maxLagBlocks });

  const registry = new OpenAPIRegistry();
  const router = express.Router();
  router.use(requireJsonBody);
  router.use(bodyErrors(express.json({ limit: "1mb", strict: true, type: ["application/json", "application/*+json"] })));
  const api = new ApiRouter({
    router,
    registry,
    authenticate: (req, opts) => services.auth.authenticate(req, opts),
    rateLimiter: deps.rateLimiter,
    idempotency: new IdempotencyStore(deps.db, { crashAfterCommit: config.idempotency.crashAfterCommit }),
    checkResponses: config.env === "test",
  });
  registerAuthRoutes(api, services.auth);
  registerUsersRoutes(api, services.users);
  registerAdminRoutes(api, services.admin, services.users);
  registerArtworksRoutes(api, services.artworks);
  registerCertificatesRoutes(api, services.certificates);
  registerWebhooksRoutes(api, services.webhooks);

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
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.type("html").send(swaggerPage("/v1/openapi.json"));
  });
  app.get("/docs/init.js", (_req, res) => {
    res.type("application/javascript").send(swaggerInit("/v1/openapi.json"));
  });
  app.use("/docs/assets", express.static(swaggerDir, { index: false, maxAge: "1h" }));

  app.use(notFound);
  app.use(errorHandler(deps.logger));
  return app;
}
