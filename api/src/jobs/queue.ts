import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { sql } from "kysely";
import type pg from "pg";
import type { Logger as PinoLogger } from "pino";
import { Logger as WorkerLogger, type Runner, run, runMigrations, type Task, type TaskList } from "graphile-worker";
import { isDatabaseUnavailable } from "../db/connection.ts";
import type { Database, Db } from "../db/database.ts";

export interface EnqueueOptions {
  runAt?: Date;
  maxAttempts?: number;
  /** De-duplicates: a pending job with the same key is replaced, not doubled. */
  jobKey?: string;
  queueName?: string;
  priority?: number;
}

/**
 * Adds a job in the caller's transaction: it exists exactly when the change that asked for it
 * commits (graphile-worker's add_job is plain SQL).
 *
 * With a key, graphile-worker's add_job returns no job, and adds none, when a worker locks the
 * key's waiting job while the new one is being added (it first supersedes the key's running job,
 * then replaces the waiting one only if still unlocked). That job now runs with the old payload, so
 * the add is made again: the running job is then superseded and the new one added.
 */
export async function enqueue(db: Db, task: string, payload: unknown, opts: EnqueueOptions = {}): Promise<void> {
  for (let tries = 1; ; tries++) {
    const { rows } = await sql<{ id: string | null }>`select (graphile_worker.add_job(
      identifier => ${task},
      payload => ${JSON.stringify(payload ?? {})}::json,
      queue_name => ${opts.queueName ?? null}::text,
      run_at => ${opts.runAt ?? null}::timestamptz,
      max_attempts => ${opts.maxAttempts ?? null}::int,
      job_key => ${opts.jobKey ?? null}::text,
      priority => ${opts.priority ?? null}::int
    )).id::text as id`.execute(db);
    if (rows[0]?.id != null) return;
    if (tries === ADD_JOB_TRIES) throw new Error(`The job queue added no ${task} job for key ${opts.jobKey} (${tries} tries)`);
  }
}

/** Each try of a keyed add loses only to a worker locking the key's waiting job at that moment. */
const ADD_JOB_TRIES = 5;

/** Removes waiting jobs by key in the caller's transaction (a running one loses its key and is not retried). */
export async function removeJobs(db: Db, jobKeys: readonly string[]): Promise<void> {
  if (jobKeys.length === 0) return;
  await sql`select graphile_worker.remove_job(k) from unnest(${[...jobKeys]}::text[]) as k`.execute(db);
}

export async function migrateJobQueue(pool: pg.Pool): Promise<void> {
  await runMigrations({ pgPool: pool });
}

export interface JobQueueOptions {
  pool: pg.Pool;
  tasks: TaskList;
  concurrency: number;
  crontab?: string;
  logger: PinoLogger;
  /** Low-latency pickup comes from LISTEN/NOTIFY; the poll is a fallback. */
  pollIntervalMs?: number;
  /** See JobRunnerSpec.fetchBatch. */
  fetchBatch?: number;
}

/** Durable Postgres-backed job queue (graphile-worker): retries with exponential backoff, survives restarts. */
export async function startJobQueue(opts: JobQueueOptions): Promise<Runner> {
  await retryThroughDatabaseRestarts(opts.logger);
  const logger = new WorkerLogger((scope) => (level, message, meta) => {
    const log = opts.logger.child({ component: "jobs", ...scope });
    if (level === "error") log.error(meta ?? {}, message);
    else if (level === "warning") log.warn(meta ?? {}, message);
    else log.debug(meta ?? {}, message);
  });
  return run({
    pgPool: opts.pool,
    taskList: opts.tasks,
    concurrency: opts.concurrency,
    crontab: opts.crontab ?? "",
    pollInterval: opts.pollIntervalMs ?? 2000,
    noHandleSignals: true,
    logger,
    // Not completeJobBatchDelay/failJobBatchDelay: in graphile-worker 0.18 a batched completion
    // that meets a database error is not retried (its retry loop ends at the first failure) and
    // shuts the runner down, so a Postgres restart stopped the worker (test/e2e/faults-postgres).
    // It was worth about a sixth of a certification burst's throughput here (47-53/s against 41).
    preset: {
      worker: {
        ...(opts.fetchBatch && opts.fetchBatch > 1 ? { localQueue: { size: opts.fetchBatch } } : {}),
      },
    },
  });
}

/**
 * graphile-worker retries its own statements (a job's completion and failure among them) on the
 * codes of its RETRYABLE_ERROR_CODES: serialization failures, deadlocks, 57P03, EHOSTUNREACH and
 * ETIMEDOUT, not what a restart of Postgres gives (57P01 admin_shutdown, refused and reset
 * connections). Unretried, a job ending during the restart keeps its lock for 4 hours. The table
 * is the library's, not exported by its entry point: reached through its file, and extended once.
 */
let retryCodesAdded: Promise<void> | null = null;
function retryThroughDatabaseRestarts(logger: PinoLogger): Promise<void> {
  retryCodesAdded ??= (async () => {
    const entry = createRequire(import.meta.url).resolve("graphile-worker");
    const lib = (await import(pathToFileURL(path.join(path.dirname(entry), "lib.js")).href)) as { RETRYABLE_ERROR_CODES?: Record<string, unknown> };
    if (!lib.RETRYABLE_ERROR_CODES) throw new Error("graphile-worker's lib.js has no RETRYABLE_ERROR_CODES");
    for (const code of ["57P01", "57P02", "ECONNREFUSED", "ECONNRESET"]) lib.RETRYABLE_ERROR_CODES[code] ??= { minDelay: 500, maxDelay: 10_000 };
  })().catch((err: Error) => logger.warn({ err: err.message }, "job queue: statements are not retried through a database restart"));
  return retryCodesAdded;
}

/**
 * The worker process's `unhandledRejection` listener. graphile-worker (0.18) records a job's
 * completion or failure without awaiting it (worker.js) and retries neither a connection Postgres
 * ended (57P01, a restart) nor a refused one, so a job that ends while the database restarts leaves
 * a rejection nobody handles, and Node's default ends the process: every runner of the worker gone
 * for a blip of the database. Such a rejection (a restart outlasting graphile-worker's retries, see
 * retryThroughDatabaseRestarts) is logged instead; the job's row stays locked and is run again once
 * graphile-worker's lock expires (4 hours; tasks are idempotent, and the modules' sweeps take up
 * their work sooner). Any other unhandled rejection still ends the process.
 */
export function survivingDatabaseRestarts(logger: PinoLogger): (reason: unknown) => void {
  return (reason) => {
    if (isDatabaseUnavailable(reason)) {
      logger.warn({ err: (reason as Error).message, code: (reason as { code?: string }).code }, "the database went away while a job ended; it runs again later");
      return;
    }
    throw reason;
  };
}

export type { Task, TaskList };
