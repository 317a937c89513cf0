import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (this file is tools/stack/processes.ts). */
export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

/** A command of the repository's node_modules/.bin, run on the Node 22 those tools need. */
export function binPath(name: string): string {
  return path.join(repoRoot, "node_modules", ".bin", name);
}

/**
 * The environment for a child: `node_modules/.bin` first on PATH, so the `#!/usr/bin/env node`
 * of Hardhat, Ponder and tsx picks the repository's Node 22 and not the system's, and telemetry off.
 */
export function childEnv(overlay: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${path.join(repoRoot, "node_modules", ".bin")}${path.delimiter}${process.env.PATH ?? ""}`,
    HARDHAT_DISABLE_TELEMETRY: "true",
    PONDER_TELEMETRY_DISABLED: "true",
  };
  for (const [key, value] of Object.entries(overlay)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Settles when the process has exited, for whatever reason. */
  readonly exited: Promise<ExitStatus>;
  /** Whether stop() was called: an exit after it is expected, any other is a crash. */
  readonly stopping: boolean;
  /**
   * Sends `signal` and waits for the exit; after `timeoutMs` the whole process group is killed.
   * Resolves with the exit status; a second call returns the same promise.
   */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<ExitStatus>;
}

export interface SpawnOptions {
  name: string;
  command: string;
  args: string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /**
   * Run in its own process group, so a Ctrl-C at the terminal reaches only the orchestrator,
   * which then stops its children in order (default true).
   */
  detached?: boolean;
  uid?: number;
  gid?: number;
}

/** Starts a long-running child whose stdout and stderr go to `logFile` (appended). */
export function spawnManaged(options: SpawnOptions): ManagedProcess {
  mkdirSync(path.dirname(options.logFile), { recursive: true });
  const fd = openSync(options.logFile, "a");
  let child: ChildProcess;
  try {
    child = spawn(options.command, options.args, {
      cwd: options.cwd ?? repoRoot,
      env: options.env ?? childEnv(),
      stdio: ["ignore", fd, fd],
      detached: options.detached ?? true,
      uid: options.uid,
      gid: options.gid,
    });
  } finally {
    closeSync(fd);
  }
  if (child.pid === undefined) {
    throw new Error(`${options.name} could not be started (${options.command}); see ${options.logFile}`);
  }
  const pid = child.pid;
  const detached = options.detached ?? true;

  const exited = new Promise<ExitStatus>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", () => resolve({ code: null, signal: null }));
  });
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
    // Helpers the child left in its group (esbuild services, workers) go with it.
    if (detached) signalGroup(pid, "SIGTERM");
  });

  let stopping: Promise<ExitStatus> | null = null;
  const managed: ManagedProcess = {
    name: options.name,
    pid,
    logFile: options.logFile,
    exited,
    get stopping() {
      return stopping !== null;
    },
    stop(signal = "SIGTERM", timeoutMs = 15_000) {
      stopping ??= (async () => {
        if (!hasExited) {
          try {
            process.kill(pid, signal);
            // A stopped (SIGSTOP) process receives the signal only once it runs again.
            process.kill(pid, "SIGCONT");
          } catch {
            // already gone
          }
          const timer = setTimeout(() => {
            // Said where the reader of a slow stop looks: the process's own log.
            try {
              appendFileSync(options.logFile, `\n[stack] ${options.name} did not exit within ${timeoutMs / 1000} s of ${signal}: killed\n`);
            } catch {
              // the log is gone with its directory
            }
            if (detached) signalGroup(pid, "SIGKILL");
            else child.kill("SIGKILL");
          }, timeoutMs);
          try {
            return await exited;
          } finally {
            clearTimeout(timer);
          }
        }
        return exited;
      })();
      return stopping;
    },
  };
  return managed;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is empty
  }
}

/** Polls `probe` until it returns a value other than undefined/false, or throws after `timeoutMs`. */
export async function waitUntil<T>(
  probe: () => Promise<T | undefined | false>,
  { timeoutMs, intervalMs = 50, what, abort }: { timeoutMs: number; intervalMs?: number; what: string; abort?: Promise<unknown> },
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let aborted: unknown = null;
  let lastError: unknown = null;
  void abort?.then((reason) => {
    aborted = reason ?? true;
  });
  for (;;) {
    if (aborted) throw new Error(`${what}: the process exited before it was ready`);
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? ` (last error: ${lastError.message})` : "";
      throw new Error(`${what}: not ready after ${timeoutMs} ms${detail}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * The ports the kernel hands out by itself (`listen(0)`, outgoing connections): a port taken from
 * there and given to a process that binds it seconds later (a stack binds its API after deploying)
 * can meanwhile go to anyone's `listen(0)`. So ports are picked below this range, where nothing is
 * assigned unasked, and a process never hands out the same port twice.
 */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (low && high && low <= high) return [low, high];
  } catch {
    // Not Linux: the IANA dynamic range.
  }
  return [49152, 65535];
}

const PICKED_FROM = 20000;
const handedOut = new Set<number>();
let cursor: number | undefined;

/**
 * A TCP port free on 127.0.0.1 now and outside the kernel's ephemeral range, so that only another
 * explicit pick can take it before its process binds it. Processes start their walk at a point of
 * their own (from the pid) so that two test workers rarely meet.
 */
export async function freePort(): Promise<number> {
  const [low] = ephemeralRange();
  const span = low - PICKED_FROM;
  if (span < 1000) return kernelPort();
  cursor ??= (process.pid * 7919) % span;
  for (let tries = 0; tries < span; tries += 1) {
    const port = PICKED_FROM + (cursor % span);
    cursor += 1;
    if (handedOut.has(port)) continue;
    if (await portInUse(port)) continue;
    handedOut.add(port);
    return port;
  }
  return kernelPort();
}

/** A port the kernel chose (free a moment ago), where no range outside its own is usable. */
function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
export function portInUse(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(true));
    server.listen(port, host, () => server.close(() => resolve(false)));
  });
}
