import { readFileSync } from "node:fs";
import path from "node:path";
import { binPath, childEnv, freePort, type ManagedProcess, spawnManaged, waitUntil } from "../../tools/stack/processes.ts";
import { send, type TestApi, testApiSettings } from "./api.ts";
import { testEnvironment } from "./environment.ts";

/** For an API whose processes a test kills: a lost attempt is taken up again within seconds, not minutes. */
export const QUICK_RECOVERY: Record<string, string> = {
  DATABASE_POOL_SIZE: "8",
  JOBS_CONCURRENCY: "4",
  CERTIFICATION_LEASE_MS: "1000",
  CERTIFICATION_SWEEP_INTERVAL_MS: "250",
  MARKETPLACE_SWEEP_INTERVAL_MS: "250",
};

export interface ApiProcesses {
  url: string;
  http: ManagedProcess;
  /** null when started without one. */
  worker: ManagedProcess | null;
  /** The HTTP process as a TestApi-like target for the helpers (createUser, certifiedArtwork…). */
  api: TestApi;
  /** Both processes with `signal` (SIGKILL: a crash). */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * The API as an operator runs it: its HTTP process (`node --import tsx api/src/server.ts`) and its
 * worker (`api/src/worker.ts`) as children, with `settings` over testApiSettings() (logs in the
 * run's temporary directory, named after `name`); `workerSettings` go to the worker alone.
 * Resolves once the HTTP process answers /healthz and the worker says it runs.
 */
export async function startApiProcesses(
  name: string,
  settings: Record<string, string>,
  options: { worker?: boolean; workerSettings?: Record<string, string> } = {},
): Promise<ApiProcesses> {
  const port = await freePort();
  const common = testApiSettings({ PORT: String(port), LOG_LEVEL: "info", ...settings });
  const spawnOne = (script: string, suffix: string, extra: Record<string, string>) =>
    spawnManaged({
      name: `${name}-${suffix}`,
      command: binPath("node"),
      args: ["--import", "tsx", script],
      logFile: path.join(testEnvironment().tempDir, `${name}-${suffix}.log`),
      detached: false,
      env: childEnv({ ...common, ...extra }),
    });
  const http = spawnOne("api/src/server.ts", "http", {});
  const url = `http://127.0.0.1:${port}`;
  const stop = async (worker: ManagedProcess | null, signal: NodeJS.Signals = "SIGTERM") => {
    await Promise.all([http.stop(signal), worker?.stop(signal)]);
  };
  let worker: ManagedProcess | null = null;
  try {
    // Raw HTTP: the liveness probe, before the API is used.
    await waitUntil(async () => (await fetch(`${url}/healthz`)).ok, { timeoutMs: 60_000, what: `${name} on ${url}`, abort: http.exited });
    if (options.worker !== false) {
      worker = spawnOne("api/src/worker.ts", "worker", options.workerSettings ?? {});
      const log = worker.logFile;
      await waitUntil(async () => /^Worker running/m.test(readFileSync(log, "utf8")), { timeoutMs: 60_000, what: `${name}'s worker`, abort: worker.exited });
    }
  } catch (error) {
    await stop(worker, "SIGKILL");
    throw error;
  }
  const api = { url, request: (method: string, p: string, opts?: object) => send(url, method, p, opts) } as unknown as TestApi;
  return { url, http, worker, api, stop: (signal) => stop(worker, signal) };
}
