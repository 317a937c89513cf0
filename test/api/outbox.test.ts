/**
 * The outbox on its own: events recorded together are written in one statement that tells the
 * dispatchers on commit; a dispatcher claims the oldest due events and hands them to the subscribers
 * in the order recorded; a subscriber failing part-way leaves the events before it dispatched and
 * the failed one waiting; two dispatchers never hand out the same event at once.
 */
import { sql } from "kysely";
import pg from "pg";
import pino from "pino";
import { expect, it } from "vitest";
import { OUTBOX_CHANNEL, type OutboxEvent, OutboxDispatcher, recordEvent, recordEvents } from "../../api/src/jobs/outbox.ts";
import { useQueueDatabase } from "../support/artworks.ts";
import { waitFor } from "../support/wait.ts";

const queueDb = useQueueDatabase();
const db = () => queueDb.handle.db;

const dispatchedIds = async (ids: string[]) =>
  (await db().selectFrom("outbox_events").select("id").where("id", "in", ids).where("dispatched_at", "is not", null).execute()).map((r) => r.id).sort();

/** A dispatcher whose subscriber records what it is handed (of `type`), and fails when `fail` says so. */
function dispatcherFor(type: string, fail: (event: OutboxEvent) => boolean = () => false, gate?: Promise<void>) {
  const dispatcher = new OutboxDispatcher(db(), pino({ level: "silent" }));
  const seen: string[] = [];
  dispatcher.subscribe(type, async (event: OutboxEvent) => {
    seen.push(event.payload.name as string);
    await gate;
    if (fail(event)) throw new Error("subscriber down");
  });
  return { dispatcher, seen };
}

/** Dispatches until nothing is due (the events of other tests included). */
async function drain(dispatcher: OutboxDispatcher): Promise<void> {
  while ((await dispatcher.dispatchBatch()) === "more");
}

it("records events of one transaction in one statement, telling the dispatchers once it commits and never for a rollback", async () => {
  const listener = new pg.Client({ connectionString: queueDb.databaseUrl });
  await listener.connect();
  let notified = 0;
  listener.on("notification", (n) => n.channel === OUTBOX_CHANNEL && notified++);
  await listener.query(`listen ${OUTBOX_CHANNEL}`);
  try {
    const many = await db().transaction().execute((trx) =>
      recordEvents(trx, Array.from({ length: 150 }, (_, i) => ({ type: "artwork.certified", payload: { n: i }, audience: ["usr_a", "usr_a"] }))),
    );
    expect(new Set(many).size).toBe(150);
    const stored = await db().selectFrom("outbox_events").select(["id", "payload", "audience", "dispatched_at", "dispatch_attempts"]).where("id", "in", many).execute();
    expect(stored).toHaveLength(150);
    expect(stored.find((r) => r.id === many[7])).toEqual({ id: many[7], payload: { n: 7 }, audience: ["usr_a"], dispatched_at: null, dispatch_attempts: 0 });
    await waitFor(() => (notified === 1 ? true : null), { what: "one notification for the transaction" });

    // A rolled-back transaction leaves no events, and tells nobody.
    const before = (await db().selectFrom("outbox_events").select(sql<number>`count(*)::int`.as("n")).executeTakeFirstOrThrow()).n;
    await expect(
      db().transaction().execute(async (trx) => {
        await recordEvents(trx, [{ type: "a", payload: {}, audience: [] }, { type: "b", payload: {}, audience: [] }]);
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect((await db().selectFrom("outbox_events").select(sql<number>`count(*)::int`.as("n")).executeTakeFirstOrThrow()).n).toBe(before);
    await db().transaction().execute((trx) => recordEvent(trx, "artwork.certified", { n: -1 }, []));
    await waitFor(() => (notified === 2 ? true : null), { what: "a notification for the next commit" });
    expect(notified).toBe(2);
  } finally {
    await listener.end();
  }
});

it("hands events out in the order recorded; a failure dispatches those before it, delays the failed one, and goes on with the rest", async () => {
  const type = "test.ordered";
  let failSecond = true;
  const { dispatcher, seen } = dispatcherFor(type, (event) => event.payload.name === "second" && failSecond);
  const ids = await db().transaction().execute((trx) =>
    recordEvents(trx, ["first", "second", "third"].map((name) => ({ type, payload: { name }, audience: ["usr_b"] }))),
  );

  await drain(dispatcher);
  expect(seen).toEqual(["first", "second", "third"]);
  expect(await dispatchedIds(ids)).toEqual([ids[0], ids[2]].sort());
  const failed = await db().selectFrom("outbox_events").selectAll().where("id", "=", ids[1]!).executeTakeFirstOrThrow();
  expect(failed).toMatchObject({ dispatched_at: null, dispatch_attempts: 1, dispatch_error: "subscriber down" });
  // Its retry waits a second: not handed out before.
  expect(failed.dispatch_after!.getTime()).toBeGreaterThan(Date.now());
  await drain(dispatcher);
  expect(seen).toEqual(["first", "second", "third"]);

  failSecond = false;
  await db().updateTable("outbox_events").set({ dispatch_after: sql<Date>`now() - interval '1 second'` }).where("id", "=", ids[1]!).execute();
  await drain(dispatcher);
  expect(seen).toEqual(["first", "second", "third", "second"]);
  expect(await dispatchedIds(ids)).toEqual([...ids].sort());
  expect(await db().selectFrom("outbox_events").select(["dispatch_attempts", "dispatch_error"]).where("id", "=", ids[1]!).executeTakeFirstOrThrow()).toEqual({
    dispatch_attempts: 1,
    dispatch_error: null,
  });
});

it("never hands an event to two dispatchers at once: one skips the events another holds", async () => {
  const type = "test.shared";
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const first = dispatcherFor(type, () => false, gate);
  const second = dispatcherFor(type);
  const ids = await db().transaction().execute((trx) => recordEvents(trx, ["a", "b", "c"].map((name) => ({ type, payload: { name }, audience: [] }))));

  const held = first.dispatcher.dispatchBatch();
  await waitFor(() => (first.seen.length === 1 ? true : null), { what: "the first dispatcher to hold the events" });
  await drain(second.dispatcher);
  expect(second.seen).toEqual([]);
  expect(await dispatchedIds(ids)).toEqual([]);
  open();
  await held;
  expect(first.seen).toEqual(["a", "b", "c"]);
  expect(await dispatchedIds(ids)).toEqual([...ids].sort());
  await drain(second.dispatcher);
  expect(second.seen).toEqual([]);
});

it("hands a claim's events together to a batch subscriber; after a failure, one by one, so only the failing event waits", async () => {
  const type = "test.batched";
  const batches: string[][] = [];
  const singles: string[] = [];
  let failOn: string | null = null;
  const dispatcher = new OutboxDispatcher(db(), pino({ level: "silent" }));
  const check = (event: OutboxEvent) => {
    if (event.payload.name === failOn) throw new Error(`cannot take ${failOn}`);
  };
  dispatcher.subscribe(
    type,
    async (event) => {
      singles.push(event.payload.name as string);
      check(event);
    },
    async (events) => {
      batches.push(events.map((e) => e.payload.name as string));
      events.forEach(check);
    },
  );
  const together = await db().transaction().execute((trx) => recordEvents(trx, ["a", "b", "c"].map((name) => ({ type, payload: { name }, audience: [] }))));
  await drain(dispatcher);
  expect(batches).toEqual([["a", "b", "c"]]);
  expect(singles).toEqual([]);
  expect(await dispatchedIds(together)).toEqual([...together].sort());

  failOn = "e";
  const apart = await db().transaction().execute((trx) => recordEvents(trx, ["d", "e", "f"].map((name) => ({ type, payload: { name }, audience: [] }))));
  await drain(dispatcher);
  expect(batches.slice(1)).toEqual([["d", "e", "f"]]);
  // One by one after the failure: d is dispatched, e waits with its error, f goes on (the next claim, alone).
  expect(singles).toEqual(["d", "e", "f"]);
  expect(batches).toHaveLength(2);
  expect(await dispatchedIds(apart)).toEqual([apart[0], apart[2]].sort());
  expect(await db().selectFrom("outbox_events").select(["dispatch_attempts", "dispatch_error"]).where("id", "=", apart[1]!).executeTakeFirstOrThrow()).toEqual({
    dispatch_attempts: 1,
    dispatch_error: "cannot take e",
  });
});

it("hands each event to the subscribers of its type and to those of every type, as recorded: id, type, payload, audience", async () => {
  const ids = await db().transaction().execute((trx) =>
    recordEvents(trx, [
      { type: "test.routed", payload: { name: "first" }, audience: ["usr_b", "usr_c"] },
      { type: "test.other", payload: { name: "second" }, audience: [] },
    ]),
  );
  const dispatcher = new OutboxDispatcher(db(), pino({ level: "silent" }));
  const routed: OutboxEvent[] = [];
  const everything: string[] = [];
  dispatcher.subscribe("test.routed", async (event) => {
    routed.push(event);
  });
  dispatcher.subscribe("*", async (event) => {
    if (ids.includes(event.id)) everything.push(event.type);
  });
  await drain(dispatcher);
  expect(routed).toEqual([{ id: ids[0], type: "test.routed", payload: { name: "first" }, audience: ["usr_b", "usr_c"], createdAt: expect.any(Date) }]);
  expect(everything).toEqual(["test.routed", "test.other"]);
  expect(await dispatchedIds(ids)).toEqual([...ids].sort());
});
