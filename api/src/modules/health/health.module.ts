import { defineModule } from "../module.ts";
import { registerHealthRoutes } from "./health.routes.ts";

/** `/healthz` and `/readyz`, outside `/v1` (no authentication, rate limits or JSON body). */
export const healthModule = defineModule({
  name: "health",
  create: () => ({}),
  routes: ({ app, deps, indexer }) =>
    registerHealthRoutes(app, {
      db: deps.db,
      publicClient: deps.publicClient,
      indexer,
      maxLagBlocks: deps.config.indexer.maxLagBlocks,
      failingProjections: () => deps.chainOperations.failingProjections(),
    }),
});
