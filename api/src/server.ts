import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Kysely, PostgresDialect } from "kysely";
import { pino } from "pino";
import { createApp } from "./app.ts";
import { IndexedCertificates } from "./chain/certificates.ts";
import { createChainClients } from "./chain/clients.ts";
import { CustodyWallet } from "./chain/custody.ts";
import { IndexerLagMonitor } from "./chain/indexer-lag.ts";
import { readIndexerStatus } from "./chain/indexer-schema.ts";
import { Relayer } from "./chain/relayer.ts";
import { type Config, ConfigError, loadConfig } from "./config.ts";
import { createPool } from "./db/connection.ts";
import type { Database } from "./db/database.ts";
import { migrateToLatest } from "./db/migrate.ts";
import { IdempotencyStore } from "./http/idempotency.ts";
import { createRateLimiter } from "./http/rate-limit.ts";
import { OUTBOX_DISPATCH_TASK, OutboxDispatcher, redispatchStaleEvents } from "./jobs/outbox.ts";
import { migrateJobQueue, startJobQueue } from "./jobs/queue.ts";
import { LocalDiskStorage } from "./lib/storage.ts";
import { AdminService } from "./modules/admin/admin.service.ts";
import { ArtworkLinks, ArtworksService } from "./modules/artworks/artworks.service.ts";
import { CERTIFY_TASK, CertificationPipeline, FETCH_IMAGE_TASK } from "./modules/artworks/certification.ts";
import { ImageFetcher } from "./modules/artworks/image-fetch.ts";
import { AuthService } from "./modules/auth/auth.service.ts";
import { CertificatesService } from "./modules/certificates/certificates.service.ts";
import type { IndexerProbe } from "./modules/health/health.routes.ts";
import { UsersService } from "./modules/users/users.service.ts";
import { attemptLeaseMs, WEBHOOK_DELIVER_TASK, WebhookSender } from "./modules/webhooks/webhooks.delivery.ts";
import { WebhooksService } from "./modules/webhooks/webhooks.service.ts";

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

  const { chain, publicClient, relayerAccount } = createChainClients({
    rpcUrl: config.chain.rpcUrl,
    chainId: config.chain.id,
    chainName: config.chain.name,
    relayerPrivateKey: config.chain.relayerPrivateKey,
  });
  const custody = new CustodyWallet(config.chain.custodyMnemonic);
  const users = new UsersService(db, custody);
  const auth = new AuthService(db, config, users, publicClient);
  const admin = new AdminService(db, users, auth);
  // One relayer per process: it assigns the relayer account's nonces in memory.
  const relayer = new Relayer({ publicClient, account: relayerAccount, chain, logger });
  // Links go into token metadata: they use the URL the server really listens on (PORT=0 in tests).
  let baseUrl = config.publicBaseUrl;
  const links = new ArtworkLinks(() => baseUrl);
  const storage = new LocalDiskStorage(config.storage.dir);
  const indexedCertificates = new IndexedCertificates(db, config.indexer.viewsSchema);
  const certification = new CertificationPipeline({
    db,
    config,
    logger,
    relayer,
    publicClient,
    certificates: indexedCertificates,
    metadataUrl: links.metadata,
  });
  const imageFetcher = new ImageFetcher({ db, config, logger, storage, certification });
  const artworks = new ArtworksService({ db, config, logger, storage, users, certificates: indexedCertificates, certification, links });
  const certificates = new CertificatesService({ config, logger, publicClient, certificates: indexedCertificates, artworks });

  const bootstrap = await admin.bootstrapAdmin(config.bootstrapAdminApiKey);
  if (bootstrap) logger.info({ user_id: bootstrap.userId }, "created the bootstrap admin");

  // The views schema is what the API's reads see; Ponder's HTTP status covers the time before it exists.
  const indexedBlock = async () =>
    (
      await readIndexerStatus({
        db,
        viewsSchema: config.indexer.viewsSchema,
        url: config.indexer.url ?? undefined,
        chainId: config.chain.id,
      })
    ).indexedBlock;
  // Ponder's own /ready stays 200 when its feed silently stops: judged here against the chain head,
  // and while it lags the pipeline confirms certifications from the chain.
  const indexerLag = new IndexerLagMonitor({
    readIndexed: indexedBlock,
    readHead: () => publicClient.getBlockNumber({ cacheTime: 0 }),
    maxLagBlocks: config.indexer.maxLagBlocks,
    stallMs: config.indexer.stallTimeoutMs,
    onSample: (state) => certification.onIndexerLag(state),
    logger: logger.child({ component: "indexer-lag" }),
  });
  const indexer: IndexerProbe = { indexedBlock, lag: () => indexerLag.state, stallTimeoutMs: config.indexer.stallTimeoutMs };

  const rateLimiter = createRateLimiter({
    tokenPerMinute: config.rateLimit.tokenPerMinute,
    anonymousPerMinute: config.rateLimit.anonymousPerMinute,
    redisUrl: config.redisUrl,
    keyPrefix: config.rateLimit.keyPrefix,
  });

  const outbox = new OutboxDispatcher(db, logger.child({ component: "outbox" }));
  const webhookPolicy = { allowPrivate: config.allowPrivateWebhookUrls };
  const webhooks = new WebhooksService(db, { policy: webhookPolicy, attemptLeaseMs: attemptLeaseMs(config.webhooks.timeoutMs) });
  const webhookSender = new WebhookSender(db, { policy: webhookPolicy, ...config.webhooks }, logger.child({ component: "webhooks" }));
  outbox.subscribe("*", webhooks.fanOut);
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
      outbox_redispatch: async () => {
        await redispatchStaleEvents(db);
      },
    },
    crontab: "17 * * * * maintenance_purge\n* * * * * outbox_redispatch\n",
  });
  // Sends wait on other people's servers (up to the timeout each): a runner of their own keeps them
  // from starving the other jobs. Its poll interval bounds how late a scheduled retry starts.
  const webhookJobs = await startJobQueue({
    pool,
    concurrency: config.webhooks.concurrency,
    logger,
    pollIntervalMs: 1000,
    tasks: { [WEBHOOK_DELIVER_TASK]: webhookSender.task },
  });
  webhookSender.startRecovery();

  const app = createApp({ config, db, logger, publicClient, rateLimiter, indexer, services: { auth, users, admin, webhooks, artworks, certificates } });
  const server = app.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  server.keepAliveTimeout = 65_000;
  const port = (server.address() as AddressInfo).port;
  const url = config.port === port ? config.publicBaseUrl : config.publicBaseUrl.replace(/:\d+$/, `:${port}`);
  logger.info({ url }, "API listening");
  baseUrl = url;

  // Certifications wait on the chain: a runner of their own, started once the links are final, with
  // connections of its own for the queue's bookkeeping (its LISTEN holds one for good).
  const certificationPool = createPool(config.database.url, config.certification.concurrency + 1);
  const certificationJobs = await startJobQueue({
    pool: certificationPool,
    concurrency: config.certification.concurrency,
    logger,
    // Each idle worker polls for due retries; new jobs arrive by NOTIFY at once.
    pollIntervalMs: 2000,
    tasks: { [CERTIFY_TASK]: certification.task },
  });
  // Downloads of image_url wait on other people's servers: a runner of their own, so certification
  // slots never wait on a URL (a per-artist cap inside keeps one artist from taking every slot).
  const imageFetchJobs = await startJobQueue({
    pool,
    concurrency: config.certification.imageFetchConcurrency,
    logger,
    pollIntervalMs: 1000,
    tasks: { [FETCH_IMAGE_TASK]: imageFetcher.task },
  });
  certification.start();
  indexerLag.start();

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
        await webhookSender.stopRecovery();
        await indexerLag.stop();
        await certification.stop();
        await Promise.all([jobs.stop(), webhookJobs.stop(), certificationJobs.stop(), imageFetchJobs.stop()]);
        await certificationPool.end();
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

