import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Kysely, PostgresDialect } from "kysely";
import { pino } from "pino";
import { createApp } from "./app.ts";
import { createChainClients } from "./chain/clients.ts";
import { CustodyWallet } from "./chain/custody.ts";
import { readIndexerStatus } from "./chain/indexer-schema.ts";
import { type Config, ConfigError, loadConfig } from "./config.ts";
import { createPool } from "./db/connection.ts";
import type { Database } from "./db/database.ts";
import { migrateToLatest } from "./db/migrate.ts";
import { IdempotencyStore } from "./http/idempotency.ts";
import { createRateLimiter } from "./http/rate-limit.ts";
import { OUTBOX_DISPATCH_TASK, OutboxDispatcher } from "./jobs/outbox.ts";
import { migrateJobQueue, startJobQueue } from "./jobs/queue.ts";
import { AdminService } from "./modules/admin/admin.service.ts";
import { AuthService } from "./modules/auth/auth.service.ts";
import type { IndexerProbe } from "./modules/health/health.routes.ts";
import { UsersService } from "./modules/users/users.service.ts";

export interface RunningServer {
  url: string;
  /** The generated admin API key when this start created the first admin; print it once. */
  bootstrapAdminKey: string | null;
  close(): Promise<void>;
}

/** Wires config, database, chain and workers, then listens. */
export async function startServer(config: Config): Promise<RunningServer> {
  const logger = pino({
    level: config.logLevel,
    base: { service: "api" },
    redact: { paths: ["req.headers.authorization", "api_key", "secret", "token"], censor: "[redacted]" },
  });

  const pool = createPool(config.database.url, config.database.poolSize);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  await migrateJobQueue(pool);
  await migrateToLatest(db);

  const { publicClient } = createChainClients({
    rpcUrl: config.chain.rpcUrl,
    chainId: config.chain.id,
    chainName: config.chain.name,
    relayerPrivateKey: config.chain.relayerPrivateKey,
  });
  const custody = new CustodyWallet(config.chain.custodyMnemonic);
  const users = new UsersService(db, custody);
  const auth = new AuthService(db, config, users, publicClient);
  const admin = new AdminService(db, users, auth);

  const bootstrap = await admin.bootstrapAdmin(config.bootstrapAdminApiKey);
  if (bootstrap) logger.info({ user_id: bootstrap.userId }, "created the bootstrap admin");

  // The views schema is what the API's reads see; Ponder's HTTP status covers the time before it exists.
  const indexer: IndexerProbe = {
    indexedBlock: async () =>
      (
        await readIndexerStatus({
          db,
          viewsSchema: config.indexer.viewsSchema,
          url: config.indexer.url ?? undefined,
          chainId: config.chain.id,
        })
      ).indexedBlock,
  };

  const rateLimiter = createRateLimiter({
    tokenPerMinute: config.rateLimit.tokenPerMinute,
    anonymousPerMinute: config.rateLimit.anonymousPerMinute,
    redisUrl: config.redisUrl,
    keyPrefix: config.rateLimit.keyPrefix,
  });

  const outbox = new OutboxDispatcher(db, logger.child({ component: "outbox" }));
  const idempotency = new IdempotencyStore(db);
  const jobs = await startJobQueue({
    pool,
    concurrency: config.jobs.concurrency,
    logger,
    tasks: {
      [OUTBOX_DISPATCH_TASK]: outbox.task,
      maintenance_purge: async () => {
        await idempotency.purgeExpired();
        await auth.purgeExpired();
      },
    },
    crontab: "17 * * * * maintenance_purge\n",
  });

  const app = createApp({ config, db, logger, publicClient, rateLimiter, indexer, services: { auth, users, admin } });
  const server = app.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  server.keepAliveTimeout = 65_000;
  const port = (server.address() as AddressInfo).port;
  const url = config.port === port ? config.publicBaseUrl : config.publicBaseUrl.replace(/:\d+$/, `:${port}`);
  logger.info({ url }, "API listening");

  let closing: Promise<void> | null = null;
  return {
    url,
    bootstrapAdminKey: bootstrap?.apiKey ?? null,
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        await jobs.stop();
        await rateLimiter.close();
        await db.destroy();
      })();
      return closing;
    },
  };
}

// `tsx api/src/server.ts`: run the API alone against an existing database, chain and indexer.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const server = await startServer(loadConfig(process.env));
    if (server.bootstrapAdminKey) process.stdout.write(`Admin API key (shown once): ${server.bootstrapAdminKey}\n`);
    const stop = () => void server.close().then(() => process.exit(0));
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  } catch (err) {
    process.stderr.write(`${err instanceof ConfigError ? err.message : (err as Error).stack}\n`);
    process.exit(1);
  }
}

