/**
 * At least once across crashes: the API process is killed (SIGKILL) while a delivery is on the
 * wire, and an event is recorded while no process runs; a new process on the same database sends
 * both, the interrupted one again under the same delivery id.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, expect, it } from "vitest";
import { createDb } from "../../api/src/db/connection.ts";
import { recordEvent } from "../../api/src/jobs/outbox.ts";
import { binPath, childEnv, repoRoot } from "../../tools/stack/processes.ts";
import { waitFor } from "../support/wait.ts";
import { createIsolatedDatabase, createUser, send, startTestApi, type TestApi, testApiSettings } from "../support/api.ts";
import { Receiver } from "../support/webhooks.ts";

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

/** `tsx api/src/server.ts` or `tsx api/src/worker.ts` (the API's own entry points) in a process group of its own. */
async function startApiProcess(script: string, settings: Record<string, string>): Promise<{ url: string; child: ChildProcess; output: () => string }> {
  const child = spawn(binPath("tsx"), [script], { cwd: repoRoot, env: childEnv(settings), stdio: ["ignore", "pipe", "pipe"], detached: true });
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
  cleanups.push(async () => killGroup(child));
  // Each entry point prints one plain line once it runs; a worker has no URL.
  const url = await waitFor(() => /^API listening on (\S+)$/m.exec(output)?.[1] ?? (/^Worker running/m.test(output) ? "(worker)" : null), {
    timeoutMs: 30_000,
    what: `${script} to run (output: ${output})`,
  });
  return { url, child, output: () => output };
}

async function killGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  process.kill(-child.pid!, "SIGKILL"); // tsx and the node process it runs
  await exited;
}

it("re-sends a delivery interrupted by a crash under the same delivery id, and sends events recorded while down", async () => {
  const database = await createIsolatedDatabase();
  const receiver = await new Receiver().start();
  cleanups.push(() => database.drop(), () => receiver.stop());
  // Attempts time out after 2 s, so an attempt in flight for more than 9 s (the lease) was abandoned.
  const settings = testApiSettings({ DATABASE_URL: database.url, WEBHOOK_TIMEOUT_SECONDS: "2", WEBHOOK_RETRY_SCHEDULE: "1,1,1" });

  // The HTTP process takes the calls; the worker process sends, and is the one that crashes.
  const first = await startApiProcess("api/src/server.ts", { ...settings, LOG_LEVEL: "info" });
  const sender = await startApiProcess("api/src/worker.ts", { ...settings, LOG_LEVEL: "info" });
  const viaChild = { request: (method: string, path: string, opts?: object) => send(first.url, method, path, opts) } as TestApi;
  const user = await createUser(viaChild);
  const url = receiver.endpoint((n) => (n === 1 ? "hang" : { status: 200 }));
  const sub = await viaChild.request("POST", "/v1/webhooks", { token: user.token, body: { url, events: ["offer.created"] } });
  expect(sub.status).toBe(201);
  const ping = await viaChild.request("POST", `/v1/webhooks/${sub.body.id}/test`, { token: user.token });
  expect(ping.status).toBe(202);

  const [interrupted] = await receiver.waitForRequests(url, 1);
  expect(interrupted!.headers["webhook-id"]).toBe(ping.body.id);
  await killGroup(sender.child);
  expect(sender.child.signalCode).toBe("SIGKILL");
  await killGroup(first.child);

  const db = createDb(database.url, 2);
  cleanups.push(() => db.destroy());
  const stuck = await db.selectFrom("webhook_deliveries").selectAll().where("id", "=", ping.body.id).executeTakeFirstOrThrow();
  expect(stuck).toMatchObject({ status: "pending", attempts: 1 });
  expect(stuck.in_flight_since).toBeInstanceOf(Date);

  // An event committed while no API process runs.
  const eventId = await db.transaction().execute((trx) => recordEvent(trx, "offer.created", { offer_id: "off_crash" }, [user.id]));

  const restarted = await startTestApi({ DATABASE_URL: database.url, WEBHOOK_TIMEOUT_SECONDS: "2", WEBHOOK_RETRY_SCHEDULE: "1,1,1" });
  cleanups.push(() => restarted.close());
  const requests = await receiver.waitForRequests(url, 3, 40_000);
  const resent = requests.filter((r) => r.headers["webhook-id"] === ping.body.id);
  expect(resent).toHaveLength(2);
  expect(resent[1]!.headers["x-service-delivery"]).toBe(ping.body.id);
  expect(resent[1]!.body).toBe(interrupted!.body);
  const recorded = requests.filter((r) => JSON.parse(r.body).id === eventId);
  expect(recorded).toHaveLength(1);
  expect(JSON.parse(recorded[0]!.body)).toMatchObject({ event: "offer.created", offer_id: "off_crash" });

  const done = await waitFor(async () => {
    const row = await db.selectFrom("webhook_deliveries").selectAll().where("id", "=", ping.body.id).executeTakeFirstOrThrow();
    return row.status === "succeeded" ? row : null;
  });
  expect(done).toMatchObject({ attempts: 2, last_response_code: 200, in_flight_since: null });
}, 90_000);
