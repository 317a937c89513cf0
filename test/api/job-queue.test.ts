/**
 * The durable job queue on connections like the worker's: a task that throws is failed by the
 * queue (its error recorded, its lock released) and retried, not left locked. The application's
 * own connections read int8 as bigint, which the queue's bookkeeping cannot serialise: the two
 * must not share type parsers.
 */
import { sql } from "kysely";
import pino from "pino";
import { expect, it } from "vitest";
import { createPool } from "../../api/src/db/connection.ts";
import { enqueue, startJobQueue } from "../../api/src/jobs/queue.ts";
import { useQueueDatabase } from "../support/artworks.ts";
import { waitFor } from "../support/wait.ts";

const queueDb = useQueueDatabase();
const db = () => queueDb.handle.db;

it("reads int8 as bigint on the application's connections and as text on the queue's", async () => {
  const app = await sql<{ n: unknown }>`select 9007199254740993::int8 as n`.execute(db());
  expect(app.rows[0]!.n).toBe(9007199254740993n);
  const queuePool = createPool(queueDb.databaseUrl, 1, "queue");
  try {
    const { rows } = await queuePool.query<{ n: unknown }>("select 9007199254740993::int8 as n");
    expect(rows[0]!.n).toBe("9007199254740993");
  } finally {
    await queuePool.end();
  }
});

it("fails a task that throws (error recorded, lock released) and runs it again", async () => {
  const runs: number[] = [];
  const queuePool = createPool(queueDb.databaseUrl, 3, "queue");
  const runner = await startJobQueue({
    pool: queuePool,
    concurrency: 1,
    pollIntervalMs: 200,
    logger: pino({ level: "silent" }),
    tasks: {
      flaky: async (payload) => {
        runs.push(Date.now());
        if (runs.length === 1) throw new Error(`first run of ${(payload as { n: number }).n} fails`);
      },
    },
  });
  try {
    await enqueue(db(), "flaky", { n: 7 }, { jobKey: "flaky-7", maxAttempts: 3 });
    // After the first run the job is failed, unlocked, with its error, and due again later.
    const failed = await waitFor(
      async () => {
        const { rows } = await sql<{ attempts: number; last_error: string | null; locked_at: Date | null; run_at: Date }>`
          select attempts, last_error, locked_at, run_at from graphile_worker.jobs where key = 'flaky-7'`.execute(db());
        return rows[0]?.last_error ? rows[0] : undefined;
      },
      { what: "the first run's failure recorded" },
    );
    expect(failed.attempts).toBe(1);
    expect(failed.last_error).toContain("first run of 7 fails");
    expect(failed.locked_at).toBeNull();
    expect(failed.run_at.getTime()).toBeGreaterThan(runs[0]!);
    // The retry (the queue's backoff: about e^1 s) succeeds and the job is gone.
    await waitFor(
      async () => {
        const { rows } = await sql`select 1 from graphile_worker.jobs where key = 'flaky-7'`.execute(db());
        return runs.length === 2 && rows.length === 0;
      },
      { timeoutMs: 15_000, what: "the retry to run and complete" },
    );
    expect(runs).toHaveLength(2);
  } finally {
    await runner.stop();
    await queuePool.end();
  }
});

it("adds a keyed job while a worker locks the key's waiting job (graphile-worker's add_job alone adds none)", async () => {
  const key = `race-${Date.now()}`;
  await enqueue(db(), "race_task", { version: 1 }, { jobKey: key, runAt: new Date(Date.now() + 3_600_000) });
  // A worker takes the waiting job (as get_job does) while the second add runs: the add meets the row locked.
  let lockTaken!: () => void;
  const locked = new Promise<void>((resolve) => (lockTaken = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const worker = db().transaction().execute(async (trx) => {
    await sql`update graphile_worker._private_jobs set locked_at = now(), locked_by = 'test-worker' where key = ${key}`.execute(trx);
    lockTaken();
    await released;
  });
  await locked;
  const adding = enqueue(db(), "race_task", { version: 2 }, { jobKey: key });
  await waitFor(
    async () => {
      const { rows } = await sql<{ n: string }>`select count(*) as n from pg_locks l join pg_stat_activity a on a.pid = l.pid where not l.granted and a.datname = current_database()`.execute(db());
      return Number(rows[0]!.n) > 0 ? true : null;
    },
    { timeoutMs: 10_000, what: "the add to wait for the locked job" },
  );
  release();
  await worker;
  await adding;

  const { rows } = await sql<{ key: string | null; payload: { version: number }; locked_by: string | null }>`
    select j.key, j.payload, j.locked_by from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'race_task' order by j.id`.execute(db());
  // The locked job keeps its old payload and loses its key; the new payload is a job of its own, under the key.
  expect(rows).toEqual([
    { key: null, payload: { version: 1 }, locked_by: "test-worker" },
    { key, payload: { version: 2 }, locked_by: null },
  ]);
});
