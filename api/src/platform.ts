import type { AddressInfo } from "node:net";
import { Kysely, PostgresDialect } from "kysely";
import { pino } from "pino";
import { createApp } from "./app.ts";
import { IndexedCertificates } from "./chain/certificates.ts";
import { assertChainDeployment, ChainIdentityError } from "./chain/chain-identity.ts";
import { createChainClients } from "./chain/clients.ts";
import { CustodyWallet } from "./chain/custody.ts";
import { IndexerLagMonitor, type IndexerLagState } from "./chain/indexer-lag.ts";
import { readIndexerStatus } from "./chain/indexer-schema.ts";
import { CHAIN_OPERATION_TASK, ChainOperations } from "./chain/operations.ts";
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

/**
 * The platform's construction, shared by the HTTP process (api/src/server.ts) and the worker
 * process (api/src/worker.ts): config, database, chain clients and services. Building it starts
 * nothing; startHttp and startWorker each start their half.
 */
export type Platform = Awaited<ReturnType<typeof buildPlatform>>;

export type ProcessRole = "api" | "worker";

export async function buildPlatform(config: Config, role: ProcessRole | "api+worker") {
  const logger = pino({
    level: config.logLevel,
    base: { service: role },
    redact: { paths: ["req.headers.authorization", "api_key", "secret", "token"], censor: "[redacted]" },
  });

  const pool = createPool(config.database.url, config.database.poolSize);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  try {
    await migrateJobQueue(pool);
    await migrateToLatest(db);

    const { chain, publicClient, relayerAccount } = createChainClients({
      rpcUrl: config.chain.rpcUrl,
      chainId: config.chain.id,
      chainName: config.chain.name,
      relayerPrivateKey: config.chain.relayerPrivateKey,
    });
    // Never serve (or write) a database's data against a chain it did not come from.
    await assertChainDeployment(db, publicClient, {
      chainId: config.chain.id,
      artCertificate: config.chain.artCertificateAddress,
      artShares: config.chain.artSharesAddress,
      startBlock: config.chain.startBlock,
    });

    const custody = new CustodyWallet(config.chain.custodyMnemonic);
    const users = new UsersService(db, custody);
    const auth = new AuthService(db, config, users, publicClient);
    const admin = new AdminService(db, users, auth);
    // Only workers send transactions; the relayer serialises its account's nonces across them.
    const relayer = new Relayer({ publicClient, account: relayerAccount, chain, logger, sharedNonces: db });
    // Links go into token metadata: they use the URL the server really listens on (PORT=0 in tests).
    const links = { baseUrl: config.publicBaseUrl };
    const artworkLinks = new ArtworkLinks(() => links.baseUrl);
    const storage = new LocalDiskStorage(config.storage.dir);
    const indexedCertificates = new IndexedCertificates(db, config.indexer.viewsSchema);
    // Chain writes as durable operations: modules register their kinds; the worker runs them.
    const chainOperations = new ChainOperations({
      db,
      logger,
      relayer,
      publicClient,
      databaseUrl: config.database.url,
      viewsSchema: config.indexer.viewsSchema,
      chainId: config.chain.id,
      startBlock: config.chain.startBlock,
      leaseMs: config.certification.leaseMs,
      sweepIntervalMs: config.certification.sweepIntervalMs,
    });
    const certification = new CertificationPipeline({
      db,
      config,
      logger,
      relayer,
      publicClient,
      certificates: indexedCertificates,
      operations: chainOperations,
      metadataUrl: artworkLinks.metadata,
    });
    const imageFetcher = new ImageFetcher({ db, config, logger, storage, certification });
    const artworks = new ArtworksService({ db, config, logger, storage, users, certificates: indexedCertificates, certification, links: artworkLinks });
    const certificates = new CertificatesService({ config, logger, publicClient, certificates: indexedCertificates, artworks });
    const webhookPolicy = { allowPrivate: config.allowPrivateWebhookUrls };
    const webhooks = new WebhooksService(db, { policy: webhookPolicy, attemptLeaseMs: attemptLeaseMs(config.webhooks.timeoutMs) });
    const idempotency = new IdempotencyStore(db);

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
    // Ponder's own /ready stays 200 when its feed silently stops: judged against the chain head. A
    // read-only sampler: each process that needs the verdict (/readyz, the certification runner) keeps one.
    const indexerLag = (onSample?: (state: IndexerLagState) => void) =>
      new IndexerLagMonitor({
        readIndexed: indexedBlock,
        readHead: () => publicClient.getBlockNumber({ cacheTime: 0 }),
        maxLagBlocks: config.indexer.maxLagBlocks,
        stallMs: config.indexer.stallTimeoutMs,
        onSample,
        logger: logger.child({ component: "indexer-lag" }),
      });

    return {
      config,
      logger,
      pool,
      db,
      publicClient,
      links,
      storage,
      relayer,
      indexedBlock,
      indexerLag,
      webhookPolicy,
      services: { auth, users, admin, webhooks, artworks, certificates },
      certification,
      chainOperations,
      imageFetcher,
      idempotency,
    };
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

export interface RunningHttp {
  url: string;
  /** The generated admin API key when this start created the first admin; print it once. */
  bootstrapAdminKey: string | null;
  close(): Promise<void>;
}

/** The HTTP half: routes, rate limits, idempotency; it enqueues jobs and runs none. */
export async function startHttp(platform: Platform, options: { indexerLag?: IndexerLagMonitor } = {}): Promise<RunningHttp> {
  const { config, db, logger, publicClient, services } = platform;
  const bootstrap = await services.admin.bootstrapAdmin(config.bootstrapAdminApiKey);
  if (bootstrap) logger.info({ user_id: bootstrap.userId }, "created the bootstrap admin");

  // /readyz judges the indexer over time: sampled here read-only (or shared with the worker half).
  const ownLag = options.indexerLag ? null : platform.indexerLag();
  const indexerLag = options.indexerLag ?? ownLag!;
  const indexer: IndexerProbe = { indexedBlock: platform.indexedBlock, lag: () => indexerLag.state, stallTimeoutMs: config.indexer.stallTimeoutMs };
  const rateLimiter = createRateLimiter({
    tokenPerMinute: config.rateLimit.tokenPerMinute,
    anonymousPerMinute: config.rateLimit.anonymousPerMinute,
    redisUrl: config.redisUrl,
    keyPrefix: config.rateLimit.keyPrefix,
  });

  const app = createApp({ config, db, logger, publicClient, rateLimiter, indexer, services });
  const server = app.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  server.keepAliveTimeout = 65_000;
  const port = (server.address() as AddressInfo).port;
  const url = config.port === port ? config.publicBaseUrl : config.publicBaseUrl.replace(/:\d+$/, `:${port}`);
  logger.info({ url }, "API listening");
  platform.links.baseUrl = url;
  ownLag?.start();

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
        await ownLag?.stop();
        await rateLimiter.close();
      })();
      return closing;
    },
  };
}

export interface RunningWorker {
  /** The worker's indexer lag sampler (a combined process shares it with its HTTP half). */
  indexerLag: IndexerLagMonitor;
  close(): Promise<void>;
}

/**
 * The worker half: the job runners (outbox dispatch, webhook sends and their recovery,
 * certifications, image fetches, maintenance), the indexer listener and the certification sweep.
 * Any number of workers may run on one database: jobs are claimed in it, and the relayer's nonces
 * are serialised across processes.
 */
export async function startWorker(platform: Platform, options: { indexerLag?: IndexerLagMonitor } = {}): Promise<RunningWorker> {
  const { config, db, pool, logger, services, certification, imageFetcher, idempotency } = platform;
  // While the indexer lags, the certification runner confirms from the chain.
  const indexerLag = options.indexerLag ?? workerIndexerLag(platform);

  const outbox = new OutboxDispatcher(db, logger.child({ component: "outbox" }));
  const webhookSender = new WebhookSender(db, { policy: platform.webhookPolicy, ...config.webhooks }, logger.child({ component: "webhooks" }));
  outbox.subscribe("*", services.webhooks.fanOut);
  const jobs = await startJobQueue({
    pool,
    concurrency: config.jobs.concurrency,
    logger,
    tasks: {
      [OUTBOX_DISPATCH_TASK]: outbox.task,
      maintenance_purge: async () => {
        await idempotency.purgeExpired();
        await services.auth.purgeExpired();
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

  // Certifications wait on the chain: a runner of their own, with connections of its own for the
  // queue's bookkeeping (its LISTEN holds one for good).
  const certificationPool = createPool(config.database.url, config.certification.concurrency + 1);
  const certificationJobs = await startJobQueue({
    pool: certificationPool,
    concurrency: config.certification.concurrency,
    logger,
    // Each idle worker polls for due retries; new jobs arrive by NOTIFY at once.
    pollIntervalMs: 2000,
    tasks: { [CERTIFY_TASK]: certification.task, [CHAIN_OPERATION_TASK]: platform.chainOperations.task },
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
  platform.chainOperations.start();
  indexerLag.start();
  logger.info("worker running");

  let closing: Promise<void> | null = null;
  return {
    indexerLag,
    close() {
      closing ??= (async () => {
        await webhookSender.stopRecovery();
        await indexerLag.stop();
        await certification.stop();
        await platform.chainOperations.stop();
        await Promise.all([jobs.stop(), webhookJobs.stop(), certificationJobs.stop(), imageFetchJobs.stop()]);
        await certificationPool.end();
      })();
      return closing;
    },
  };
}

function workerIndexerLag(platform: Platform): IndexerLagMonitor {
  return platform.indexerLag((state) => platform.chainOperations.onIndexerLag(state));
}

export interface RunningPlatform {
  /** The API's URL; null without the HTTP half. */
  url: string;
  bootstrapAdminKey: string | null;
  platform: Platform;
  close(): Promise<void>;
}

/**
 * One process with either half or both. Production runs the halves as separate processes
 * (server.ts, worker.ts); tests and the benchmarks start both in one.
 */
export async function startPlatform(config: Config, halves: { http: boolean; worker: boolean }): Promise<RunningPlatform> {
  const role = halves.http && halves.worker ? "api+worker" : halves.http ? "api" : "worker";
  const platform = await buildPlatform(config, role);
  let http: RunningHttp | null = null;
  let worker: RunningWorker | null = null;
  const close = async () => {
    await http?.close();
    await worker?.close();
    await platform.db.destroy();
  };
  try {
    // One sampler serves both halves of a combined process (the worker half starts and stops it).
    const indexerLag = halves.worker ? workerIndexerLag(platform) : undefined;
    // The HTTP half first: links in token metadata use the URL it really listens on.
    if (halves.http) http = await startHttp(platform, { indexerLag });
    if (halves.worker) worker = await startWorker(platform, { indexerLag });
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
  let closing: Promise<void> | null = null;
  return {
    url: http?.url ?? "",
    bootstrapAdminKey: http?.bootstrapAdminKey ?? null,
    platform,
    close() {
      closing ??= close();
      return closing;
    },
  };
}

/** The entry points' main: start the given halves from the environment, stop on SIGINT/SIGTERM. */
export async function runProcess(halves: { http: boolean; worker: boolean }): Promise<void> {
  try {
    const running = await startPlatform(loadConfig(process.env), halves);
    if (running.bootstrapAdminKey) process.stdout.write(`Admin API key (shown once): ${running.bootstrapAdminKey}\n`);
    // One plain line whatever LOG_LEVEL says: what a supervisor (tools/stack) waits for.
    process.stdout.write(halves.http ? `API listening on ${running.url}\n` : `Worker running (pid ${process.pid})\n`);
    const stop = () => void running.close().then(() => process.exit(0));
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  } catch (err) {
    process.stderr.write(`${err instanceof ConfigError || err instanceof ChainIdentityError ? err.message : (err as Error).stack}\n`);
    process.exit(1);
  }
}
