import pg from "pg";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { NotificationListener } from "../../api/src/db/notifications.ts";
import { createIsolatedDatabase } from "../support/api.ts";
import { Recording, waitFor } from "../support/wait.ts";

// A process's listeners share one session per database (api/src/db/notifications.ts).
let database: Awaited<ReturnType<typeof createIsolatedDatabase>>;
let admin: pg.Client;
const logger = pino({ level: "silent" });

beforeAll(async () => {
  database = await createIsolatedDatabase();
  admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
});

afterAll(async () => {
  await admin?.end();
  await database?.drop();
});

async function sessions(): Promise<number> {
  const { rows } = await admin.query("select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'art-platform-api notifications'");
  return rows[0].n as number;
}

const notify = (channel: string, payload: string) => admin.query("select pg_notify($1, $2)", [channel, payload]);

it("LISTENs every channel of a process on one session: joins and leaves as listeners come and go, every channel again after a reconnect", async () => {
  const events = new Recording<string>();
  const count = (event: string) => events.items.filter((e) => e === event).length;
  const listener = (name: string, channel: string) =>
    new NotificationListener({
      databaseUrl: database.url,
      channel,
      name,
      onNotify: (payload) => events.push(`${name}:${payload}`),
      onReady: () => events.push(`${name} ready`),
      onLost: () => events.push(`${name} lost`),
      logger,
    });
  const a = listener("a", "test_one");
  const b = listener("b", "test_two");
  const c = listener("c", "test_three");
  const d = listener("d", "test_one");

  a.start();
  b.start();
  await events.until((e) => e.includes("a ready") && e.includes("b ready"), "a and b ready");
  expect(await sessions()).toBe(1);
  await notify("test_one", "1");
  await notify("test_two", "2");
  await events.until((e) => e.includes("a:1") && e.includes("b:2"), "the first notifications");
  expect(events.items.filter((e) => e.includes(":"))).toEqual(["a:1", "b:2"]);

  // A new channel on the live session, and a second listener of a channel already LISTENed.
  c.start();
  d.start();
  await events.until((e) => e.includes("c ready") && e.includes("d ready"), "c and d ready");
  await notify("test_three", "3");
  await notify("test_one", "4");
  await events.until((e) => e.includes("c:3") && e.includes("a:4") && e.includes("d:4"), "c's and both one's");
  expect(await sessions()).toBe(1);

  // The session dropped: every listener is told once, then ready again once its channel is LISTENed anew.
  await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'art-platform-api notifications'");
  await events.until((e) => ["a", "b", "c", "d"].every((n) => e.filter((x) => x === `${n} ready`).length === 2), "every listener ready again");
  for (const n of ["a", "b", "c", "d"]) expect({ n, lost: count(`${n} lost`) }).toEqual({ n, lost: 1 });
  await notify("test_two", "5");
  await events.until((e) => e.includes("b:5"), "b's notification after the reconnect");

  // b leaves: told it is no longer current; its channel is UNLISTENed (a NOTIFY of it, then one of test_one
  // on the same session: delivered in order, so b's would have come first).
  await b.stop();
  expect(count("b lost")).toBe(2);
  await notify("test_two", "6");
  await notify("test_one", "7");
  await events.until((e) => e.includes("a:7"), "a's notification after b left");
  expect(events.items).not.toContain("b:6");

  // The session closes with its last listener.
  await a.stop();
  await c.stop();
  expect(await sessions()).toBe(1);
  await d.stop();
  await waitFor(async () => (await sessions()) === 0, { what: "the session closed" });
});
