import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Express } from "express";
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Chain, PublicClient, Transport } from "viem";
import type { CustodyWallet } from "../chain/custody.ts";
import type { IndexerProbe } from "../chain/indexer-lag.ts";
import type { IndexedChain } from "../chain/indexer-views.ts";
import type { ChainOperationKind, ChainOperations, IndexedProjection } from "../chain/operations.ts";
import type { Relayer } from "../chain/relayer.ts";
import type { Config } from "../config.ts";
import type { Database } from "../db/database.ts";
import type { ApiRouter } from "../http/route.ts";
import type { OutboxBatchHandler, OutboxHandler } from "../jobs/outbox.ts";
import type { TaskList } from "../jobs/queue.ts";
import type { ObjectStorage } from "../lib/storage.ts";

/**
 * One feature's registration (api/src/modules/<feature>/<feature>.module.ts): everything the
 * platform needs to know about it. api/src/modules/index.ts lists the modules in construction order;
 * api/src/platform.ts iterates that list for both processes, and api/src/db/database.ts assembles
 * the Database type from the modules' `*.tables.ts`. Adding a feature is one folder, one line there
 * and, when it has tables, one in the `extends` list of that Database type.
 *
 * `Services` is what `create` builds (named, e.g. `{ artworks: ArtworksService }`); `Needs` the
 * services of modules listed before it that it uses (a feature reaches another only through them).
 */
export interface FeatureModule<Services extends object = object, Needs extends object = object> {
  name: string;
  /**
   * The folder of the module's migrations (`migrationsOf(import.meta.url)`). Names are global and
   * date-prefixed: the migrator merges every module's folder with the shared one (api/src/db/migrations)
   * and runs them in name order, so a moved migration keeps its name and is never run twice.
   */
  migrations?: string;
  /** Builds the module's services, in both processes; starts nothing. */
  create(deps: PlatformDeps & Needs): Services;
  /** The module's endpoints, its admin endpoints included (the HTTP process). */
  routes?(http: HttpContext, services: Services & Needs): void;
  /** Subscriptions to committed outbox events (`*` for every type), run by the worker's dispatcher. */
  outboxHandlers?(services: Services & Needs): OutboxSubscription[];
  /** The kinds of chain operation the module requests (api/src/chain/operations.ts), registered at construction. */
  chainOperationKinds?(services: Services & Needs): ChainOperationKind<any>[];
  /** Its projections of indexed facts nobody requested (api/src/chain/operations.ts IndexedProjection). */
  chainProjections?(services: Services & Needs): IndexedProjection<any>[];
  /** The module's part of the worker process: job tasks, runners of its own, background loops. */
  worker?(services: Services & Needs, deps: PlatformDeps): WorkerPart;
}

/** The platform's shared parts, handed to every module's `create`. */
export interface PlatformDeps {
  config: Config;
  db: Kysely<Database>;
  logger: Logger;
  publicClient: PublicClient<Transport, Chain>;
  /** Only workers send; the relayer serialises its account's nonces across them. */
  relayer: Relayer;
  custody: CustodyWallet;
  storage: ObjectStorage;
  /** The chain as the indexer projected it: the one reader of its views. */
  indexedChain: IndexedChain;
  chainOperations: ChainOperations;
  /** The URL the API really listens on (set once the HTTP half listens: PORT=0 in tests). */
  links: { baseUrl: string };
}

/** What a module's routes are declared on. */
export interface HttpContext {
  /** `/v1` endpoints: authentication, rate limits, validation, idempotency and OpenAPI. */
  api: ApiRouter;
  /** The bare app, for what stays outside that pipeline (`/healthz`, `/readyz`). */
  app: Express;
  deps: PlatformDeps;
  indexer: IndexerProbe | null;
}

export interface OutboxSubscription {
  type: string;
  handler: OutboxHandler;
  /** The same work for several events at once (a claim's events of this type, in order); `handler` still serves single events. */
  batch?: OutboxBatchHandler;
}

/**
 * A job runner of the worker. The platform has `general` (short jobs, maintenance; the outbox and
 * the chain operations claim from their own tables); a module adds one where its jobs wait on
 * something slow (other people's servers), so they never starve the others.
 */
export interface JobRunnerSpec {
  name: string;
  concurrency: number;
  /** Fallback poll (new jobs arrive by NOTIFY at once): bounds how late a scheduled retry starts. */
  pollIntervalMs?: number;
  /**
   * Jobs claimed per query and handed to the runner's free slots from memory (graphile-worker's
   * local queue), instead of one query per slot and per new-job notification. Fewer statements
   * under load; the price: jobs claimed but not started stay locked for up to 5 minutes (returned
   * unstarted), or, if the process dies, until the module's sweep or the queue's 4-hour lock
   * expiry, like a running job's. Without it each new job's notification sends every idle slot of
   * every runner to query for it (200 certifications at once: about 1,900 job queries for their
   * 400 jobs; chain operations no longer use the queue). Batches of 8 halved a burst's commits but
   * measured no throughput gain, so they are off by default (JOBS_FETCH_BATCH=1).
   */
  fetchBatch?: number;
}

export interface WorkerPart {
  /** Runners of the module's own. */
  runners?: JobRunnerSpec[];
  /** Job tasks by runner name (`general` or one of `runners`). */
  tasks?: Record<string, TaskList>;
  /** Run by the hourly `maintenance_purge` job (expired rows). */
  maintenance?(): Promise<void>;
  /** Background loops (sweeps, recovery): started once the runners run, stopped before they stop. */
  start?(): void;
  stop?(): Promise<void>;
}

/** Declares a module, checking it against the interface while keeping its own types. */
export function defineModule<Services extends object, Needs extends object = object>(
  module: FeatureModule<Services, Needs>,
): FeatureModule<Services, Needs> {
  return module;
}

/** The `migrations` folder beside a module file: `migrationsOf(import.meta.url)`. */
export function migrationsOf(moduleUrl: string): string {
  return path.join(path.dirname(fileURLToPath(moduleUrl)), "migrations");
}

type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

/** Every service the listed modules build, by name. */
export type ServicesOf<M extends readonly FeatureModule<any, any>[]> = UnionToIntersection<ReturnType<M[number]["create"]>>;
