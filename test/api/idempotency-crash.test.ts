/**
 * Idempotency across a crash (issue 8): the API process is SIGKILLed after the transaction that
 * registers an artwork (and stores its answer under the Idempotency-Key) commits, before the answer
 * is sent. A new process on the same database replays the stored answer to the retry, and the
 * artwork exists once.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { createDb } from "../../api/src/db/connection.ts";
import { binPath, childEnv, repoRoot } from "../../tools/stack/processes.ts";
import { artworkInput, formFields, pngImage, postMultipart } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { waitFor } from "../support/wait.ts";
import { createIsolatedDatabase, createUser, send, startTestApi, type TestApi, testApiSettings } from "../support/api.ts";

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

/** `node --import tsx api/src/server.ts` (the API's own entry point): one process, whose own SIGKILL we see. */
async function startApiProcess(settings: Record<string, string>): Promise<{ url: string; child: ChildProcess; exited: Promise<NodeJS.Signals | null> }> {
  const child = spawn(binPath("node"), ["--import", "tsx", "api/src/server.ts"], { cwd: repoRoot, env: childEnv(settings), stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGKILL");
    await exited;
  });
  const url = await waitFor(() => /"msg":"API listening"/.test(output) && (JSON.parse(output.split("\n").find((l) => l.includes('"API listening"'))!).url as string), {
    timeoutMs: 30_000,
    what: `the API process to listen (output: ${output})`,
  });
  return { url, child, exited };
}

it("replays the stored answer after a crash between the commit and the response, and registers the artwork once", async () => {
  const database = await createIsolatedDatabase();
  cleanups.push(() => database.drop());
  const storageDir = mkdtempSync(path.join(testEnvironment().tempDir, "idempotency-crash-"));
  const settings = testApiSettings({ DATABASE_URL: database.url, STORAGE_DIR: storageDir, LOG_LEVEL: "info" });

  // 1. An API process that dies right after a request's transaction commits.
  const doomed = await startApiProcess({ ...settings, IDEMPOTENCY_CRASH_AFTER_COMMIT: "true" });
  const viaChild = { request: (method: string, p: string, opts?: object) => send(doomed.url, method, p, opts) } as TestApi;
  const artist = await createUser(viaChild, { role: "artist" }); // no Idempotency-Key: these do not crash it
  const fields = formFields(artworkInput());
  const image = { bytes: pngImage() };
  const headers = { "Idempotency-Key": `crash-${artist.id}` };
  const lost = await postMultipart(doomed.url, artist.token, fields, image, headers).then(
    (res) => res.status,
    () => "no answer",
  );
  expect(lost).toBe("no answer");
  expect(await doomed.exited).toBe("SIGKILL");

  // The change and its answer were committed together.
  const db = createDb(database.url, 2);
  cleanups.push(() => db.destroy());
  const registered = await db.selectFrom("artworks").select(["id", "status"]).where("artist_id", "=", artist.id).execute();
  expect(registered).toHaveLength(1);
  const key = await db.selectFrom("idempotency_keys").selectAll().where("principal", "=", `user:${artist.id}`).where("key", "=", headers["Idempotency-Key"]).executeTakeFirstOrThrow();
  expect(key).toMatchObject({ state: "completed", response_status: 201 });
  expect(key.response_body).toMatchObject({ id: registered[0]!.id, status: "pending_certification" });

  // 2. A new process: the retry with the same key and body gets the stored answer, nothing runs again.
  const restarted = await startTestApi({ DATABASE_URL: database.url, STORAGE_DIR: storageDir });
  cleanups.push(() => restarted.close());
  const retry = await postMultipart(restarted.url, artist.token, fields, image, headers);
  expect(retry.status).toBe(201);
  expect(retry.headers.get("idempotent-replayed")).toBe("true");
  expect(retry.body).toEqual(key.response_body);
  expect(retry.body.id).toBe(registered[0]!.id);
  expect(await db.selectFrom("artworks").select("id").where("artist_id", "=", artist.id).execute()).toEqual([{ id: registered[0]!.id }]);
  const created = await db.selectFrom("artwork_provenance").select("event").where("artwork_id", "=", registered[0]!.id).where("event", "=", "created").execute();
  expect(created).toHaveLength(1);
  const detail = await restarted.request("GET", `/v1/artworks/${registered[0]!.id}`);
  expect(detail.status).toBe(200);
}, 90_000);
