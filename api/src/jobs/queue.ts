import { sql } from "kysely";
import type pg from "pg";
import type { Logger as PinoLogger } from "pino";
import { Logger as WorkerLogger, type Runner, run, runMigrations, type Task, type TaskList } from "graphile-worker";
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
 */
export async function enqueue(db: Db, task: string, payload: unknown, opts: EnqueueOptions = {}): Promise<void> {
  await sql`select graphile_worker.add_job(
    identifier => ${task},
    payload => ${JSON.stringify(payload ?? {})}::json,
    queue_name => ${opts.queueName ?? null}::text,
    run_at => ${opts.runAt ?? null}::timestamptz,
    max_attempts => ${opts.maxAttempts ?? null}::int,
    job_key => ${opts.jobKey ?? null}::text,
    priority => ${opts.priority ?? null}::int
  )`.execute(db);
}

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
}

/** Durable Postgres-backed job queue (graphile-worker): retries with exponential backoff, survives restarts. */
export async function startJobQueue(opts: JobQueueOptions): Promise<Runner> {
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
  });
}

export type { Task, TaskList };
