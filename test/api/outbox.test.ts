/**
 * The outbox on its own: events recorded together are written in one statement with one dispatch
 * job, handed to the subscribers in the order recorded; a subscriber failing part-way leaves the
 * events before it dispatched and the retry hands the whole list out again.
 */
import { sql } from "kysely";
import pino from "pino";
import { expect, it } from "vitest";
import { OUTBOX_DISPATCH_TASK, type OutboxEvent, OutboxDispatcher, recordEvent, recordEvents } from "../../api/src/jobs/outbox.ts";
import { useQueueDatabase } from "../support/artworks.ts";

const queueDb = useQueueDatabase();
const db = () => queueDb.handle.db;

/** The payloads of the waiting dispatch jobs that name any of `ids` (the queue's table: its public view has no payload). */
async function dispatchJobsOf(ids: string[]): Promise<{ event_id?: string; event_ids?: string[] }[]> {
  const { rows } = await sql<{ payload: { event_id?: string; event_ids?: string[] } }>`
    select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = ${OUTBOX_DISPATCH_TASK} order by j.id`.execute(db());
  return rows.map((r) => r.payload).filter((p) => [p.event_id, ...(p.event_ids ?? [])].some((id) => id !== undefined && ids.includes(id)));
}

const dispatchedIds = async (ids: string[]) =>
  (await db().selectFrom("outbox_events").select("id").where("id", "in", ids).where("dispatched_at", "is not", null).execute()).map((r) => r.id).sort();

it("records events of one transaction with one dispatch job per 100, and one event alone as before", async () => {
  const many = await db().transaction().execute((trx) =>
    recordEvents(trx, Array.from({ length: 150 }, (_, i) => ({ type: "artwork.certified", payload: { n: i }, audience: ["usr_a", "usr_a"] }))),
  );
  expect(new Set(many).size).toBe(150);
  const jobs = await dispatchJobsOf(many);
  expect(jobs).toEqual([{ event_ids: many.slice(0, 100) }, { event_ids: many.slice(100) }]);
  const stored = await db().selectFrom("outbox_events").select(["id", "payload", "audience"]).where("id", "in", many).execute();
  expect(stored.find((r) => r.id === many[7])).toEqual({ id: many[7], payload: { n: 7 }, audience: ["usr_a"] });

  const one = await db().transaction().execute((trx) => recordEvent(trx, "artwork.certified", { n: -1 }, []));
  expect(await dispatchJobsOf([one])).toEqual([{ event_id: one }]);

  // A rolled-back transaction leaves neither events nor jobs.
  const before = (await db().selectFrom("outbox_events").select(sql<number>`count(*)::int`.as("n")).executeTakeFirstOrThrow()).n;
  await expect(
    db().transaction().execute(async (trx) => {
      await recordEvents(trx, [{ type: "a", payload: {}, audience: [] }, { type: "b", payload: {}, audience: [] }]);
      throw new Error("rolled back");
    }),
  ).rejects.toThrow("rolled back");
  expect((await db().selectFrom("outbox_events").select(sql<number>`count(*)::int`.as("n")).executeTakeFirstOrThrow()).n).toBe(before);
});

it("dispatches a list in order; a failure keeps the events before it dispatched, and the retry hands out the whole list", async () => {
  const ids = await db().transaction().execute((trx) =>
    recordEvents(trx, ["first", "second", "third"].map((name) => ({ type: "test.event", payload: { name }, audience: ["usr_b"] }))),
  );
  const dispatcher = new OutboxDispatcher(db(), pino({ level: "silent" }));
  const seen: string[] = [];
  let failSecond = true;
  dispatcher.subscribe("test.event", async (event: OutboxEvent) => {
    seen.push(event.payload.name as string);
    expect(event.audience).toEqual(["usr_b"]);
    if (event.payload.name === "second" && failSecond) {
      failSecond = false;
      throw new Error("subscriber down");
    }
  });
  dispatcher.subscribe("other.event", async () => {
    throw new Error("not this type");
  });
  const run = () => dispatcher.task({ event_ids: ids }, {} as never);

  await expect(run()).rejects.toThrow("subscriber down");
  expect(seen).toEqual(["first", "second"]);
  expect(await dispatchedIds(ids)).toEqual([ids[0]]);

  await run();
  expect(seen).toEqual(["first", "second", "first", "second", "third"]);
  expect(await dispatchedIds(ids)).toEqual([...ids].sort());

  // The older payload, one event_id, still dispatches; an id that no longer exists is skipped.
  await dispatcher.task({ event_id: ids[2] }, {} as never);
  expect(seen.at(-1)).toBe("third");
  await dispatcher.task({ event_ids: ["whe_01JD3Y5V0Q3G7W7J6T4N4C2X1M", ids[0]!] }, {} as never);
  expect(seen.at(-1)).toBe("first");
  await expect(dispatcher.task({}, {} as never)).rejects.toThrow("payload without event_id or event_ids");
});
