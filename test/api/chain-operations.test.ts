/**
 * The chain operations component on its own, with kinds written for the test: a database of its
 * own, the shared Hardhat node for the one test that sends, and a scripted indexer (its head and
 * rows) for the cursor.
 */
import { sql } from "kysely";
import pino from "pino";
import { type Hash, keccak256, toBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { createChainClients } from "../../api/src/chain/clients.ts";
import { ChainOperationFailure, type ChainOperationKind, ChainOperations, type KeyedFacts } from "../../api/src/chain/operations.ts";
import { Relayer } from "../../api/src/chain/relayer.ts";
import { createDbHandle } from "../../api/src/db/connection.ts";
import { ProcessPresence } from "../../api/src/db/presence.ts";
import { recordEvent } from "../../api/src/jobs/outbox.ts";
import { migrateJobQueue } from "../../api/src/jobs/queue.ts";
import { createPlatformDatabase, freshRelayerKey, publicClient } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { Recording, signalled, waitFor } from "../support/wait.ts";

const env = testEnvironment();
const logger = pino({ level: "silent" });
let database: Awaited<ReturnType<typeof createPlatformDatabase>>;
let handle: ReturnType<typeof createDbHandle>;
let relayerKey: `0x${string}`;
let seq = 0;

beforeAll(async () => {
  [database, relayerKey] = await Promise.all([createPlatformDatabase(), freshRelayerKey()]);
  handle = createDbHandle(database.databaseUrl, 6);
  await migrateJobQueue(handle.pool);
});
afterAll(async () => {
  await handle?.db.destroy();
  await database?.drop().catch(() => {});
});

type Facts = { n: number };

/** A kind that records what the component asks of it; `indexer` scripts what the indexer shows. */
function scriptedKind(overrides: Partial<ChainOperationKind<Facts>> = {}) {
  const calls = { send: 0, readIndexed: [] as [bigint, bigint][], lookupIndexed: 0, confirmed: [] as string[], indexed: [] as string[], failed: [] as string[] };
  const indexer = { head: 0n as bigint | null, rows: [] as { block: bigint; key: string; facts: Facts }[], fromChain: [] as KeyedFacts<Facts>[] };
  const kind: ChainOperationKind<Facts> = {
    kind: `test_${process.pid}_${++seq}`,
    abi: artCertificateAbi,
    maxAttempts: 3,
    retryBaseMs: 10,
    async send() {
      calls.send++;
    },
    async readIndexed(from, to) {
      calls.readIndexed.push([from, to]);
      return indexer.rows.filter((r) => r.block > from && r.block <= to).map(({ key, facts }) => ({ key, facts }));
    },
    async lookupIndexed(ops) {
      calls.lookupIndexed++;
      return indexer.rows.filter((r) => ops.some((op) => op.key === r.key)).map(({ key, facts }) => ({ key, facts }));
    },
    async readFromChain(ops) {
      return indexer.fromChain.filter((f) => ops.some((op) => op.key === f.key));
    },
    async onConfirmed(trx, confirmed) {
      for (const { op, facts, source } of confirmed) {
        calls.confirmed.push(op.key);
        await recordEvent(trx, "test.confirmed", { key: op.key, n: facts.n, source }, []);
      }
    },
    async onIndexed(_trx, indexed) {
      calls.indexed.push(...indexed.map((i) => i.op.key));
    },
    async onFailed(_trx, op) {
      calls.failed.push(op.key);
    },
    ...overrides,
  };
  return { kind, calls, indexer };
}

function component(
  kinds: ChainOperationKind<any>[],
  indexer: { head: bigint | null } = { head: null },
  relayer?: Relayer,
  tuning: { concurrency?: number; duePollMs?: number; leaseMs?: number; presence?: ProcessPresence } = {},
) {
  const { chain, publicClient, relayerAccount } = createChainClients({ rpcUrl: env.rpcUrl, chainId: env.chainId, relayerPrivateKey: relayerKey });
  const operations = new ChainOperations({
    db: handle.db,
    logger,
    relayer: relayer ?? new Relayer({ publicClient, account: relayerAccount, chain, logger }),
    publicClient,
    databaseUrl: database.databaseUrl,
    viewsSchema: "absent_views",
    chainId: env.chainId,
    startBlock: 0,
    leaseMs: 200,
    sweepIntervalMs: 60_000,
    ...tuning,
    indexedBlock: async () => indexer.head,
  });
  for (const kind of kinds) operations.register(kind);
  return operations;
}

const op = (key: string) => handle.db.selectFrom("chain_operations").selectAll().where("key", "=", key).executeTakeFirstOrThrow();
/** Whether the operation waits for an attempt (its row is the queue entry; none when it does not exist). */
const isDue = async (key: string) =>
  (await handle.db.selectFrom("chain_operations").select("due_at").where("key", "=", key).executeTakeFirst())?.due_at != null;
const eventsOf = async (key: string) =>
  handle.db.selectFrom("outbox_events").select("payload").where("event_type", "=", "test.confirmed").where(sql`payload->>'key'`, "=", key).execute();

describe("ChainOperations.request", () => {
  it("is idempotent per key: one row, due once, whatever the number of requests; a failed one starts over, a confirmed one stays", async () => {
    const { kind, indexer } = scriptedKind();
    const operations = component([kind], indexer);
    const key = `${kind.kind}:a`;
    const first = await handle.db.transaction().execute((trx) => operations.request(trx, { key, kind: kind.kind, payload: { n: 1 } }));
    const again = await handle.db.transaction().execute((trx) => operations.request(trx, { key, kind: kind.kind, payload: { n: 2 } }));
    expect(again.id).toBe(first.id);
    expect(await op(key)).toMatchObject({ status: "pending", attempts: 0, payload: { n: 1 } });
    expect(await handle.db.selectFrom("chain_operations").select("id").where("key", "=", key).execute()).toHaveLength(1);
    expect(await isDue(key)).toBe(true);

    // A request in a transaction that rolls back leaves nothing.
    const other = `${kind.kind}:rolled_back`;
    await handle.db
      .transaction()
      .execute(async (trx) => {
        await operations.request(trx, { key: other, kind: kind.kind, payload: {} });
        throw new Error("rollback");
      })
      .catch(() => undefined);
    expect(await handle.db.selectFrom("chain_operations").select("id").where("key", "=", other).execute()).toEqual([]);
    expect(await isDue(other)).toBe(false);

    await operations.fail(kind, key, "refused");
    await operations.request(handle.db, { key, kind: kind.kind, payload: { n: 3 } });
    expect(await op(key)).toMatchObject({ status: "pending", attempts: 0, last_error: null, tx_hash: null });

    indexer.rows.push({ block: 1n, key, facts: { n: 1 } });
    indexer.head = 1n;
    await operations.advanceCursors();
    const confirmed = await operations.request(handle.db, { key, kind: kind.kind, payload: {} });
    expect(confirmed.status).toBe("confirmed");
    expect(await isDue(key)).toBe(false);
  });
});

describe("ChainOperations.requestMany", () => {
  it("requests many in a few statements with request's rules for each, answering in the order asked", async () => {
    const { kind, indexer } = scriptedKind();
    const operations = component([kind], indexer);
    const [fresh, failed, waiting, confirmed] = ["fresh", "failed", "waiting", "confirmed"].map((s) => `${kind.kind}:${s}`) as [string, string, string, string];
    for (const key of [failed, waiting, confirmed]) await operations.request(handle.db, { key, kind: kind.kind, payload: { n: 0 } });
    await operations.fail(kind, failed, "refused");
    // Waiting for a retry in an hour; confirmed by the indexer.
    await handle.db.updateTable("chain_operations").set({ due_at: sql<Date>`now() + interval '1 hour'`, priority: 5 }).where("key", "=", waiting).execute();
    indexer.rows.push({ block: 1n, key: confirmed, facts: { n: 1 } });
    indexer.head = 1n;
    await operations.advanceCursors();

    const asked = [confirmed, fresh, waiting, failed, fresh];
    const answered = await handle.db.transaction().execute((trx) => operations.requestMany(trx, asked.map((key) => ({ key, kind: kind.kind, payload: { n: 9 } }))));
    expect(answered.map((o) => o.key)).toEqual(asked);
    expect(answered[1]).toBe(answered[4]);
    expect(await op(fresh)).toMatchObject({ status: "pending", attempts: 0, payload: { n: 9 } });
    expect(await op(failed)).toMatchObject({ status: "pending", attempts: 0, last_error: null, payload: { n: 0 } });
    expect(await op(waiting)).toMatchObject({ status: "pending", priority: 0 });
    expect((await op(waiting)).due_at!.getTime()).toBeLessThan(Date.now() + 60_000);
    expect(await op(confirmed)).toMatchObject({ status: "confirmed", result: { n: 1 } });
    for (const key of [fresh, failed, waiting]) expect(await isDue(key)).toBe(true);
    expect(await handle.db.selectFrom("chain_operations").select("id").where("key", "=", fresh).execute()).toHaveLength(1);

    await expect(operations.requestMany(handle.db, [{ key: "x", kind: "no_such_kind", payload: {} }])).rejects.toThrow(/unknown chain operation kind/);
    expect(await operations.requestMany(handle.db, [])).toEqual([]);
  });
});

describe("resuming after a crash", () => {
  it("waits for the stored transaction and sends nothing new", async () => {
    const address = privateKeyToAccount(relayerKey).address;
    const { chain, publicClient: client, relayerAccount } = createChainClients({ rpcUrl: env.rpcUrl, chainId: env.chainId, relayerPrivateKey: relayerKey });
    const relayer = new Relayer({ publicClient: client, account: relayerAccount, chain, logger });
    let sent: Hash | null = null;
    let recorded!: () => void;
    const hashStored = new Promise<void>((resolve) => (recorded = resolve));
    // The first process: sends, records the hash, then never finishes (it died waiting for the receipt).
    const { kind: dying } = scriptedKind({
      async send(operation, ctx) {
        const artworkId = `art_resume_${operation.id}_${process.pid}`;
        await relayer.write({
          address: env.artCertificateAddress,
          abi: artCertificateAbi,
          functionName: "certify",
          args: [address, artworkId, keccak256(toBytes(artworkId)), `https://example.test/${artworkId}`, address, 500n],
          onSubmitted: async ({ hash }) => {
            sent = hash;
            await ctx.recordSent([operation.key], hash);
            recorded();
          },
        });
        await new Promise(() => {});
      },
    });
    const first = component([dying], { head: null }, relayer);
    const key = `${dying.kind}:crash`;
    await first.request(handle.db, { key, kind: dying.kind, payload: {} });
    void first.run(key);
    await signalled(hashStored, "the stored hash");
    expect(await op(key)).toMatchObject({ status: "sent", tx_hash: sent, attempts: 1 });
    const nonceAfterSend = await publicClient().getTransactionCount({ address });

    // The restarted process: the same kind, counting its sends. The sweep finds the lease expired.
    const { kind: restarted, calls } = scriptedKind({ kind: dying.kind } as Partial<ChainOperationKind<Facts>>);
    const second = component([restarted], { head: null }, relayer);
    // The first process died 3 s ago: its lease (200 ms) and the sweep's grace (2 s) have run out.
    await handle.db.updateTable("chain_operations").set({ lease_until: sql<Date>`now() - interval '3 seconds'` }).where("key", "=", key).execute();
    await second.sweep();
    expect(calls.lookupIndexed).toBe(1);
    expect(await isDue(key)).toBe(true);
    await second.run(key);

    expect(calls.send).toBe(0);
    expect(await op(key)).toMatchObject({ status: "sent", tx_hash: sent, attempts: 2, last_error: null });
    expect(await publicClient().getTransactionCount({ address })).toBe(nonceAfterSend);
  }, 30_000);
});

describe("a process that is gone", () => {
  it("has its leased operation taken up by the next sweep, though the lease has long to run; a live holder's is left alone", async () => {
    const presences = [new ProcessPresence({ databaseUrl: database.databaseUrl, name: "dying", logger }), new ProcessPresence({ databaseUrl: database.databaseUrl, name: "restarted", logger })];
    const [dyingPresence, livePresence] = presences as [ProcessPresence, ProcessPresence];
    await Promise.all(presences.map((p) => p.start()));
    try {
      let attempting!: () => void;
      const attempted = new Promise<void>((resolve) => (attempting = resolve));
      // The first process leases the operation for ten minutes and dies in its attempt.
      const { kind: dying } = scriptedKind({
        async send() {
          attempting();
          await new Promise(() => {});
        },
      });
      const first = component([dying], { head: null }, undefined, { leaseMs: 600_000, presence: dyingPresence });
      const key = `${dying.kind}:holder_gone`;
      await first.request(handle.db, { key, kind: dying.kind, payload: {} });
      void first.run(key);
      await signalled(attempted, "the first attempt");
      expect(await op(key)).toMatchObject({ attempts: 1, due_at: null, holder: dyingPresence.id });

      const { kind: restarted, calls } = scriptedKind({ kind: dying.kind } as Partial<ChainOperationKind<Facts>>);
      const second = component([restarted], { head: null }, undefined, { leaseMs: 600_000, presence: livePresence });
      // Its holder still present: a slow attempt, not a lost one.
      await second.sweep();
      expect(calls.lookupIndexed).toBe(0);
      expect(await isDue(key)).toBe(false);

      // Its process gone (its presence's session ended, as with a SIGKILL): taken up at once.
      await dyingPresence.stop();
      await second.sweep();
      expect(calls.lookupIndexed).toBe(1);
      expect(await isDue(key)).toBe(true);
      await second.run(key);
      expect(calls.send).toBe(1);
      expect(await op(key)).toMatchObject({ attempts: 2, holder: livePresence.id });
    } finally {
      await Promise.all(presences.map((p) => p.stop()));
    }
  }, 30_000);
});

describe("confirmation by cursor", () => {
  it("reads only newly indexed blocks, never rescans failed operations, and hands each confirmation over once with its event", async () => {
    const { kind, calls, indexer } = scriptedKind();
    const operations = component([kind], indexer);
    const [failed, pending, late] = ["failed", "pending", "late"].map((s) => `${kind.kind}:${s}`) as [string, string, string];
    for (const key of [failed, pending, late]) await operations.request(handle.db, { key, kind: kind.kind, payload: {} });
    await operations.fail(kind, failed, "refused for good");

    indexer.rows.push({ block: 5n, key: pending, facts: { n: 5 } });
    indexer.head = 5n;
    // Two passes at once (two processes on one notification): the cursor's lock lets one read.
    await Promise.all([operations.advanceCursors(), operations.advanceCursors()]);
    expect(calls.readIndexed).toEqual([[-1n, 5n]]);
    expect(await op(pending)).toMatchObject({ status: "confirmed", confirmed_from: "indexer", result: { n: 5 } });
    expect(await op(failed)).toMatchObject({ status: "failed" });

    // Nothing new indexed: nothing read. New blocks: only those.
    await operations.advanceCursors();
    indexer.head = 9n;
    await operations.advanceCursors();
    expect(calls.readIndexed).toEqual([[-1n, 5n], [5n, 9n]]);
    expect(calls.lookupIndexed).toBe(0);
    expect((await handle.db.selectFrom("chain_cursors").select("block_number").where("consumer", "=", kind.kind).executeTakeFirstOrThrow()).block_number).toBe(9n);

    // Confirmed from the chain while the indexer lags, then reached by the cursor: reconciled, not confirmed again.
    await handle.db.updateTable("chain_operations").set({ status: "sent", tx_hash: "0xabc" }).where("key", "=", late).execute();
    indexer.fromChain.push({ key: late, facts: { n: 12 } });
    await Promise.all([operations.confirmFromChain(), operations.confirmFromChain()]);
    expect(await op(late)).toMatchObject({ status: "confirmed", confirmed_from: "chain", indexed_at: null });
    indexer.rows.push({ block: 12n, key: late, facts: { n: 12 } }, { block: 12n, key: pending, facts: { n: 5 } });
    indexer.head = 12n;
    await operations.advanceCursors();
    expect((await op(late)).indexed_at).not.toBeNull();

    expect(calls.confirmed.sort()).toEqual([late, pending].sort());
    expect(calls.indexed).toEqual([late]);
    expect(calls.failed).toEqual([failed]);
    expect(await eventsOf(pending)).toEqual([{ payload: { key: pending, n: 5, source: "indexer" } }]);
    expect(await eventsOf(late)).toEqual([{ payload: { key: late, n: 12, source: "chain" } }]);
    expect(await eventsOf(failed)).toEqual([]);
  });
});

describe("cursor passes over kinds with nothing open", () => {
  it("moves an idle kind's cursor without reading the indexer, and reads the blocks after it once an operation is open", async () => {
    const idle = scriptedKind();
    const busy = scriptedKind();
    const indexer = { head: 4n as bigint | null };
    const operations = component([idle.kind, busy.kind], indexer);
    const busyKey = `${busy.kind.kind}:open`;
    await operations.request(handle.db, { key: busyKey, kind: busy.kind.kind, payload: {} });
    busy.indexer.rows.push({ block: 3n, key: busyKey, facts: { n: 3 } });

    expect(await operations.advanceCursors()).toBe(1);
    expect(busy.calls.readIndexed).toEqual([[-1n, 4n]]);
    expect(idle.calls.readIndexed).toEqual([]);
    const cursorOf = async (consumer: string) =>
      (await handle.db.selectFrom("chain_cursors").select("block_number").where("consumer", "=", consumer).executeTakeFirstOrThrow()).block_number;
    expect(await cursorOf(idle.kind.kind)).toBe(4n);
    expect(await cursorOf(busy.kind.kind)).toBe(4n);

    // Requested now, so sent after block 4: the idle kind reads from there on.
    const idleKey = `${idle.kind.kind}:late`;
    await operations.request(handle.db, { key: idleKey, kind: idle.kind.kind, payload: {} });
    idle.indexer.rows.push({ block: 6n, key: idleKey, facts: { n: 6 } });
    indexer.head = 6n;
    expect(await operations.advanceCursors()).toBe(1);
    expect(idle.calls.readIndexed).toEqual([[4n, 6n]]);
    expect(busy.calls.readIndexed).toEqual([[-1n, 4n]]);
    expect(await op(idleKey)).toMatchObject({ status: "confirmed", confirmed_from: "indexer", result: { n: 6 } });
    expect(await cursorOf(busy.kind.kind)).toBe(6n);
  });
});

describe("claiming due operations", () => {
  it("two workers on one table attempt each due operation once, each at most `concurrency` at a time", async () => {
    const name = `test_${process.pid}_${++seq}_claims`;
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
