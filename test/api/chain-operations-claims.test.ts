/**
 * Claiming due operations (test/support/chain-operations.ts): workers sharing one table, each kind's
 * concurrency, run(key) beside a lease, priorities and backoff, an attempt ended by a database error.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { ChainOperationFailure, type ChainOperationKind } from "../../api/src/chain/operations.ts";
import { component, database, type Facts, handle, kindName, op, scriptedKind, useChainOperationsDatabase } from "../support/chain-operations.ts";
import { Recording, signalled, waitFor } from "../support/wait.ts";

useChainOperationsDatabase();
describe("claiming due operations", () => {
  it("two workers on one table attempt each due operation once, each at most `concurrency` at a time", async () => {
    const name = kindName("_claims");
    // Every attempt is held until both workers have taken their four: then neither may take a fifth.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const sent = new Recording<{ worker: number; key: string }>();
    const workers = [0, 1].map((worker) => {
      const seen = { inFlight: 0, maxInFlight: 0 };
      const { kind } = scriptedKind({
        kind: name,
        async send(operation) {
          seen.inFlight++;
          seen.maxInFlight = Math.max(seen.maxInFlight, seen.inFlight);
          sent.push({ worker, key: operation.key });
          await released;
          seen.inFlight--;
        },
      } as Partial<ChainOperationKind<Facts>>);
      return { seen, operations: component([kind], { head: null }, undefined, { concurrency: 4, duePollMs: 100 }) };
    });
    for (const w of workers) w.operations.start();
    try {
      const keys = Array.from({ length: 60 }, (_, i) => `${name}:${i}`);
      await handle.db.transaction().execute(async (trx) => {
        for (const key of keys) await workers[0]!.operations.request(trx, { key, kind: name, payload: {} });
      });
      const byWorker = (items: readonly { worker: number }[], worker: number) => items.filter((s) => s.worker === worker).length;
      await sent.until((items) => byWorker(items, 0) === 4 && byWorker(items, 1) === 4, "both workers at their concurrency of 4", 15_000);
      // A claim by each with every slot taken: a fifth attempt would start here.
      await Promise.all(workers.map((w) => w.operations.claimNow()));
      expect([byWorker(sent.items, 0), byWorker(sent.items, 1)]).toEqual([4, 4]);
      release();
      await sent.until((items) => items.length >= keys.length, "every operation attempted", 15_000);
      // Each worker's claim after its last attempt found nothing due; with no row due (below), no
      // attempt can follow before the sweep's (a minute away).
      await signalled(Promise.all(workers.map((w) => w.operations.idle())), "both workers idle");
      expect(sent.items.map((s) => s.key).sort()).toEqual([...keys].sort());
      for (const w of workers) expect(w.seen.maxInFlight).toBe(4);
      const rows = await handle.db.selectFrom("chain_operations").select(["attempts", "due_at"]).where("kind", "=", name).execute();
      expect(rows.every((r) => r.attempts === 1 && r.due_at === null)).toBe(true);
    } finally {
      release();
      await Promise.all(workers.map((w) => w.operations.stop()));
    }
  });

  it("runs each kind up to its own concurrency: a kind that batches takes more slots than the default, and neither starves the other", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const sent = new Recording<string>();
    const inFlight = new Map<string, { now: number; max: number }>();
    const holding = (name: string): Partial<ChainOperationKind<Facts>> => ({
      async send() {
        const s = inFlight.get(name)!;
        s.now++;
        s.max = Math.max(s.max, s.now);
        sent.push(name);
        await held;
        s.now--;
      },
    });
    const batched = scriptedKind({ concurrency: 12 });
    Object.assign(batched.kind, holding(batched.kind.kind));
    const single = scriptedKind();
    Object.assign(single.kind, holding(single.kind.kind));
    for (const k of [batched.kind, single.kind]) inFlight.set(k.kind, { now: 0, max: 0 });
    const sentOf = (items: readonly string[], kind: ChainOperationKind<Facts>) => items.filter((k) => k === kind.kind).length;
    const operations = component([batched.kind, single.kind], { head: null }, undefined, { concurrency: 3, duePollMs: 50 });
    await handle.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 20; i++) {
        await operations.request(trx, { key: `${batched.kind.kind}:${i}`, kind: batched.kind.kind, payload: {} });
        await operations.request(trx, { key: `${single.kind.kind}:${i}`, kind: single.kind.kind, payload: {} });
      }
    });
    operations.start();
    try {
      // While every attempt is held: each kind has exactly its own number of slots taken.
      await sent.until((items) => sentOf(items, batched.kind) === 12 && sentOf(items, single.kind) === 3, "both kinds at their concurrency");
      // A claim with every slot taken: one beyond either cap would be made here.
      await operations.claimNow();
      expect([sentOf(sent.items, batched.kind), sentOf(sent.items, single.kind)]).toEqual([12, 3]);
      expect([inFlight.get(batched.kind.kind)!.now, inFlight.get(single.kind.kind)!.now]).toEqual([12, 3]);
      release();
      await sent.until((items) => sentOf(items, batched.kind) === 20 && sentOf(items, single.kind) === 20, "every operation attempted");
      expect(inFlight.get(batched.kind.kind)!.max).toBe(12);
      expect(inFlight.get(single.kind.kind)!.max).toBe(3);
    } finally {
      release();
      await operations.stop();
    }
  });

  it("run(key) makes its attempt even while the row is locked by a concurrent lease, and each of several calls at once makes one", async () => {
    const sent: string[] = [];
    const { kind } = scriptedKind({
      async send(operation) {
        sent.push(operation.key);
      },
    });
    const operations = component([kind]);
    const key = `${kind.kind}:run`;
    await operations.request(handle.db, { key, kind: kind.kind, payload: {} });
    // Another lease holds the row (a claim, or a second run of the same key): run waits for it, then attempts.
    let unlock!: () => void;
    const unlocked = new Promise<void>((resolve) => (unlock = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = handle.db.transaction().execute(async (trx) => {
      await sql`select id from chain_operations where key = ${key} for update`.execute(trx);
      locked();
      await unlocked;
    });
    await isLocked;
    const running = operations.run(key);
    try {
      // Its lease waits on the row's lock (the database shows the session waiting): no attempt before it.
      await waitFor(
        async () => (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%from chain_operations%for update%'`.execute(handle.db)).rows[0]!.n === 1,
        { what: "run(key) waiting for the row's lock" },
      );
      expect(sent).toEqual([]);
    } finally {
      unlock();
    }
    await holder;
    await running;
    expect(sent).toEqual([key]);
    await Promise.all([operations.run(key), operations.run(key), operations.run(key)]);
    expect(sent).toEqual([key, key, key, key]);
    expect(await op(key)).toMatchObject({ attempts: 4 });
  });

  it("claims lower priority numbers first, and a failed attempt again once its backoff has run out", async () => {
    const sent = new Recording<string>();
    let failOnce = true;
    const { kind } = scriptedKind({
      async send(operation) {
        sent.push(operation.key);
        if (operation.key.endsWith(":flaky") && failOnce) {
          failOnce = false;
          throw new ChainOperationFailure("transient", "the node hiccuped");
        }
      },
    });
    const operations = component([kind], { head: null }, undefined, { concurrency: 1, duePollMs: 50 });
    const [later, sooner, flaky] = ["later", "sooner", "flaky"].map((s) => `${kind.kind}:${s}`) as [string, string, string];
    await operations.request(handle.db, { key: later, kind: kind.kind, payload: {} });
    await operations.request(handle.db, { key: flaky, kind: kind.kind, payload: {} }, { priority: -5 });
    await operations.request(handle.db, { key: sooner, kind: kind.kind, payload: {} }, { priority: -10 });
    operations.start();
    try {
      await sent.until((items) => items.length >= 4, "four attempts");
      // One at a time, by priority; the flaky one's retry comes after its backoff (10 ms), behind nothing.
      expect(sent.items.slice(0, 2)).toEqual([sooner, flaky]);
      expect(sent.items.slice(2).sort()).toEqual([flaky, later].sort());
      expect(await op(flaky)).toMatchObject({ attempts: 2, last_error: "the node hiccuped", due_at: null });
    } finally {
      await operations.stop();
    }
  });

  it("makes an attempt that ended on a database error due again at once, not when its lease runs out", async () => {
    const sent = new Recording<string>();
    let failures = 0;
    const { kind } = scriptedKind({
      async send(operation) {
        sent.push(operation.key);
        if (sent.length === 1) throw new ChainOperationFailure("transient", "the node hiccuped");
      },
      // Recording the retry fails as it would with the database gone: the attempt's outcome is lost.
      async onRetry() {
        failures++;
        throw Object.assign(new Error("Connection terminated unexpectedly"), { code: "ECONNRESET" });
      },
    });
    // No sweep runs here after the one at start (the interval is a minute): only the process's own release can make it due.
    const operations = component([kind], { head: null }, undefined, { concurrency: 2, duePollMs: 50 });
    const key = `${kind.kind}:interrupted`;
    await operations.request(handle.db, { key, kind: kind.kind, payload: {} });
    operations.start();
    try {
      await sent.until((items) => items.length >= 2, "a second attempt", 5_000);
      expect(failures).toBe(1);
      expect(sent.items).toEqual([key, key]);
      expect(await op(key)).toMatchObject({ attempts: 2, due_at: null });
    } finally {
      await operations.stop();
    }
  });
});
