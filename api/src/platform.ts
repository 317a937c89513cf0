import type { AddressInfo } from "node:net";
import { Kysely, PostgresDialect } from "kysely";
import { pino } from "pino";
import { createApp } from "./app.ts";
import { IndexedChain, readIndexerStatus } from "./chain/indexer-views.ts";
import { assertChainDeployment, ChainIdentityError } from "./chain/chain-identity.ts";
import { createChainClients } from "./chain/clients.ts";
import { CustodyWallet } from "./chain/custody.ts";
import { IndexerLagMonitor, type IndexerLagState, type IndexerProbe } from "./chain/indexer-lag.ts";
import { ChainOperations } from "./chain/operations.ts";
import { Relayer } from "./chain/relayer.ts";
import { observeStatement } from "./db/statements.ts";
import { type Config, ConfigError, loadConfig } from "./config.ts";
import { createPool } from "./db/connection.ts";
import type { Database } from "./db/database.ts";
import { migrateToLatest } from "./db/migrate.ts";
import { ProcessPresence } from "./db/presence.ts";
import { IdempotencyStore } from "./http/idempotency.ts";
import { drainable } from "./http/drain.ts";
import { answerClientError } from "./http/problem.ts";
import { PublicReadCache } from "./http/public-read-cache.ts";
import { SharedReads } from "./http/shared-reads.ts";
import { createRateLimiter } from "./http/rate-limit.ts";
import { OutboxDispatcher } from "./jobs/outbox.ts";
import { migrateJobQueue, startJobQueue, survivingDatabaseRestarts, type TaskList } from "./jobs/queue.ts";
import { stopInOrder } from "./lib/stop-steps.ts";
import { LocalDiskStorage } from "./lib/storage.ts";
import { moduleMigrations, modules, type Services } from "./modules/index.ts";
import type { FeatureModule, JobRunnerSpec, PlatformDeps, WorkerPart } from "./modules/module.ts";

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

  const pool = createPool(config.database.url, config.database.poolSize, "app", { prepare: config.database.preparedStatements });
  // Statements are observed (api/src/db/statements.ts): the public read cache learns what each read showed.
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: observeStatement });
  try {
    await migrateJobQueue(pool);
    await migrateToLatest(db, moduleMigrations);

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
      artMarket: config.chain.artMarketAddress,
      auditAnchor: config.chain.auditAnchorAddress,
      artExchange: config.chain.artExchangeAddress,
      paymentToken: config.chain.paymentTokenAddress,
      startBlock: config.chain.startBlock,
    });

    const custody = new CustodyWallet(config.chain.custodyMnemonic);
    // Only workers send transactions; the relayer serialises its account's nonces across them.
    const relayer = new Relayer({ publicClient, account: relayerAccount, chain, logger, sharedNonces: db });
    // Links go into token metadata: they use the URL the server really listens on (PORT=0 in tests).
    const links = { baseUrl: config.publicBaseUrl };
    const storage = new LocalDiskStorage(config.storage.dir);
    const indexedChain = new IndexedChain(db, config.indexer.viewsSchema);
    // Held while the process lives (started with either half): whatever it holds (an idempotency
    // key in progress, a chain operation's lease) is taken up by another process as soon as it is gone.
    const presence = new ProcessPresence({ databaseUrl: config.database.url, name: role, logger });
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
      presence,
      sweepIntervalMs: config.certification.sweepIntervalMs,
      concurrency: config.certification.concurrency,
    });
    const deps: PlatformDeps = { config, db, logger, publicClient, relayer, custody, storage, indexedChain, chainOperations, links };
    const services = createServices(deps);
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
      deps,
      services,
      chainOperations,
      idempotency,
      presence,
    };
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

type AnyModule = FeatureModule<any, any>;

/** Each module's services, in the list's order: a module gets the platform's parts and the services built before it. */
function createServices(deps: PlatformDeps): Services {
  const services: Record<string, unknown> = {};
  for (const module of modules as readonly AnyModule[]) {
    const built = module.create({ ...deps, ...services });
    for (const name of Object.keys(built)) {
      if (name in services || name in deps) throw new Error(`Module ${module.name}: a service named ${name} exists already`);
    }
    Object.assign(services, built);
    for (const kind of module.chainOperationKinds?.(services) ?? []) deps.chainOperations.register(kind);
    for (const projection of module.chainProjections?.(services) ?? []) deps.chainOperations.registerProjection(projection);
  }
  return services as Services;
}

export interface RunningHttp {
  url: string;
  /** The generated admin API key when this start created the first admin; print it once. */
  bootstrapAdminKey: string | null;
  /** The anonymous public reads this process keeps (null when PUBLIC_READ_CACHE_TTL_MS is 0). */
  publicReads: PublicReadCache | null;
  /** Identical reads in flight computed once (its counts, for tests). */
  sharedReads: SharedReads;
  close(): Promise<void>;
}

/**
 * How long a stop may take after the HTTP half's answers have drained, and the worker's in all
 * (its chain attempts get 3 s of it): under the 15 s a supervisor (the stack) gives before SIGKILL.
 */
const PARTS_STOP_MS = 3_000;
const WORKER_STOP_MS = 8_000;

/** How long the HTTP half waits for Redis before it listens anyway. */
const REDIS_READY_TIMEOUT_MS = 10_000;

/** The HTTP half: routes, rate limits, idempotency; it enqueues jobs and runs none. */
export async function startHttp(platform: Platform, options: { indexerLag?: IndexerLagMonitor } = {}): Promise<RunningHttp> {
  const { config, logger, services } = platform;
  const bootstrap = await services.accounts.bootstrapAdmin(config.bootstrapAdminApiKey);
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
  // Listening before the shared rate-limit store answers would refuse the first requests (503).
  if (!(await rateLimiter.ready(REDIS_READY_TIMEOUT_MS))) {
    logger.warn({ timeout_ms: REDIS_READY_TIMEOUT_MS }, "the rate-limit store (REDIS_URL) is not reachable: requests are answered 503 until it is");
  }

  // Resolved credentials are kept a few seconds; a change anywhere makes every process forget them.
  const stopCredentialCache = services.auth.cacheCredentials({ databaseUrl: config.database.url, logger });
  // Anonymous public reads are kept a moment per URL; a change to a table one showed makes every process forget it.
  const publicReads = config.publicReadCache.ttlMs > 0 ? new PublicReadCache(config.publicReadCache) : null;
  publicReads?.start({ databaseUrl: config.database.url, viewsSchema: config.indexer.viewsSchema, logger, db: platform.db });
  // Identical reads in flight are computed once per round.
  const sharedReads = new SharedReads();
  // A retry takes over the keys of this process's requests as soon as it is gone.
  const app = createApp({ deps: platform.deps, rateLimiter, indexer, services, modules, publicReads, sharedReads, presence: platform.presence });
  const server = app.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  server.keepAliveTimeout = 65_000;
  const stopping = drainable(server);
  server.on("clientError", answerClientError);
  const port = (server.address() as AddressInfo).port;
  const url = config.port === port ? config.publicBaseUrl : config.publicBaseUrl.replace(/:\d+$/, `:${port}`);
  logger.info({ url }, "API listening");
  platform.links.baseUrl = url;
  ownLag?.start();

  let closing: Promise<void> | null = null;
  return {
    url,
    bootstrapAdminKey: bootstrap?.apiKey ?? null,
    publicReads,
    sharedReads,
    close() {
      // The answers under way first (at most DRAIN_GRACE_MS), then the rest within a few seconds.
      closing ??= (async () => {
        // Requests waiting for a chain write answer now with the state they have (202 pending).
        platform.chainOperations.releaseWaiters();
        await stopping.drain();
        await stopInOrder(logger, PARTS_STOP_MS, [
          ["indexer lag sampler", () => ownLag?.stop()],
          ["rate limiter", () => rateLimiter.close()],
          ["credential cache", () => stopCredentialCache()],
          ["public read cache", () => publicReads?.stop()],
        ]);
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
 * The worker half: the outbox dispatcher (events claimed from their table), the job runners
 * (`general`: maintenance; and each module's tasks and runners of its own), the chain operations
 * (claimed from their table, confirmed by the indexer listener, swept), and the modules'
 * background loops (the webhook senders among them).
 * Any number of workers may run on one database: work is claimed in it, and the relayer's nonces
 * are serialised across processes.
 */
export async function startWorker(platform: Platform, options: { indexerLag?: IndexerLagMonitor } = {}): Promise<RunningWorker> {
  const { config, db, pool, logger, services, idempotency } = platform;
  // While the indexer lags, the chain operations are confirmed from the chain.
  const indexerLag = options.indexerLag ?? workerIndexerLag(platform);

  const parts: WorkerPart[] = (modules as readonly AnyModule[]).map((m) => m.worker?.(services, platform.deps) ?? {});
  const outbox = new OutboxDispatcher(db, logger.child({ component: "outbox" }));
  for (const module of modules as readonly AnyModule[]) {
    for (const { type, handler, batch } of module.outboxHandlers?.(services) ?? []) outbox.subscribe(type, handler, batch);
  }

  const runners: (JobRunnerSpec & { tasks: TaskList; crontab?: string })[] = [
    {
      name: "general",
      concurrency: config.jobs.concurrency,
      fetchBatch: config.jobs.fetchBatch,
      tasks: {
        maintenance_purge: async () => {
          await idempotency.purgeExpired();
          for (const part of parts) await part.maintenance?.();
        },
      },
      crontab: "17 * * * * maintenance_purge\n",
    },
    ...parts.flatMap((part) => (part.runners ?? []).map((spec) => ({ ...spec, tasks: {} }))),
  ];
  for (const part of parts) {
    for (const [name, tasks] of Object.entries(part.tasks ?? {})) {
      const runner = runners.find((r) => r.name === name);
      if (!runner) throw new Error(`No job runner named ${name}`);
      Object.assign(runner.tasks, tasks);
    }
  }

  // The queue's bookkeeping runs on connections of its own (pg's default type parsers, see
  // createPool), shared by the runners: a LISTEN connection each, and as many for claiming and
  // completing jobs as the busiest of them runs at once (fewer starved the runner that then sent
  // webhooks, 27 deliveries a second against 150).
  const active = runners.filter((runner) => Object.keys(runner.tasks).length > 0);
  const queuePool = createPool(config.database.url, active.length + Math.max(2, ...active.map((runner) => runner.concurrency)), "queue");
  const started: { stop(): Promise<void> }[] = [];
  for (const runner of active) {
    started.push(
      await startJobQueue({
        pool: queuePool,
        concurrency: runner.concurrency,
        logger,
        ...(runner.pollIntervalMs ? { pollIntervalMs: runner.pollIntervalMs } : {}),
        ...(runner.fetchBatch ? { fetchBatch: runner.fetchBatch } : {}),
        tasks: runner.tasks,
        ...(runner.crontab ? { crontab: runner.crontab } : {}),
      }),
    );
  }
  outbox.start(config.database.url);
  for (const part of parts) part.start?.();
  platform.chainOperations.start();
  indexerLag.start();
  logger.info("worker running");

  let closing: Promise<void> | null = null;
  return {
    indexerLag,
    close() {
      closing ??= stopInOrder(logger, WORKER_STOP_MS, [
        ["outbox dispatcher", () => outbox.stop()],
        ["modules' workers", async () => {
          for (const part of [...parts].reverse()) await part.stop?.();
        }],
        ["indexer lag sampler", () => indexerLag.stop()],
        ["chain operations", () => platform.chainOperations.stop()],
        ["job queue", () => Promise.all(started.map((runner) => runner.stop()))],
        ["job queue's pool", () => queuePool.end()],
      ]);
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
  /** The HTTP half's kept public reads (null without it, or when PUBLIC_READ_CACHE_TTL_MS is 0). */
  publicReads: PublicReadCache | null;
  /** The HTTP half's shared reads (null without it). */
  sharedReads: SharedReads | null;
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
    await stopInOrder(platform.logger, PARTS_STOP_MS, [
      ["presence", () => platform.presence.stop()],
      ["database pool", () => platform.db.destroy()],
    ]);
  };
  try {
    await platform.presence.start();
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
    publicReads: http?.publicReads ?? null,
    sharedReads: http?.sharedReads ?? null,
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
    if (halves.worker) process.on("unhandledRejection", survivingDatabaseRestarts(running.platform.logger.child({ component: "jobs" })));
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
