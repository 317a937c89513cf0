import path from "node:path";
import type { ManagedProcess } from "./processes.ts";
import { clearProcessRecords, writeProcessRecords } from "./runtime-files.ts";

/** A startup step that failed: names the step and the log to read. */
export class StackStartupError extends Error {
  override name = "StackStartupError";
  constructor(
    readonly step: string,
    readonly logFile: string | null,
    cause: unknown,
  ) {
    const message = cause instanceof Error ? cause.message : String(cause);
    super(`${step} failed: ${message}${logFile && !message.includes(logFile) ? ` (log: ${logFile})` : ""}`, { cause });
  }
}

/** The stack's log files, one a process (and Ignition's), under LOG_DIR. */
export interface StackLogs {
  postgres: string;
  hardhatNode: string;
  ignition: string;
  ponder: string;
  api: string;
  worker: string;
}

export function stackLogs(logDir: string): StackLogs {
  return {
    postgres: path.join(logDir, "postgres.log"),
    hardhatNode: path.join(logDir, "hardhat-node.log"),
    ignition: path.join(logDir, "ignition.log"),
    ponder: path.join(logDir, "ponder.log"),
    api: path.join(logDir, "api.log"),
    worker: path.join(logDir, "worker.log"),
  };
}

/**
 * One start's bookkeeping: each step's time and failure (a StackStartupError naming it), the child
 * processes that run (listed in DATA_DIR/run/processes.json, so a later start can stop the leftovers
 * of a stack that was killed outright), and what stops them, in reverse order of starting.
 */
export class StackRun {
  /** How long each step took, in ms. */
  readonly timings: Record<string, number> = {};
  private readonly cleanups: Array<() => Promise<void>> = [];
  private readonly running = new Set<ManagedProcess>();
  private ownsRecords = false;
  private stopping: Promise<void> | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly onChild?: (child: ManagedProcess) => void,
  ) {}

  async step<T>(name: string, logFile: string | null, fn: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await fn();
    } catch (error) {
      throw error instanceof StackStartupError ? error : new StackStartupError(name, logFile, error);
    } finally {
      this.timings[name] = (this.timings[name] ?? 0) + Math.round(performance.now() - started);
    }
  }

  /** A child process started (`added`) or stopped for good: the records follow. */
  track(child: ManagedProcess, added: boolean): void {
    this.ownsRecords = true;
    if (added) {
      this.running.add(child);
      this.onChild?.(child);
    } else {
      this.running.delete(child);
    }
    writeProcessRecords(this.dataDir, [
      { name: "stack", pid: process.pid, marker: "stack/start" },
      ...[...this.running].map((c) => ({ name: c.name, pid: c.pid, marker: markerOf(c.name) })),
    ]);
  }

  /** Something to stop with the stack: stopped before whatever was registered before it. */
  onStop(cleanup: () => Promise<void>): void {
    this.cleanups.push(cleanup);
  }

  children(): ManagedProcess[] {
    return [...this.running];
  }

  /** Stops everything (once), then forgets the records. */
  stop(): Promise<void> {
    this.stopping ??= this.runCleanups().then(() => clearProcessRecords(this.dataDir));
    return this.stopping;
  }

  /** After a failed start: stops what started, and forgets the records if this start wrote them. */
  async abort(): Promise<void> {
    await this.runCleanups();
    if (this.ownsRecords) clearProcessRecords(this.dataDir);
  }

  private async runCleanups(): Promise<void> {
    for (const cleanup of this.cleanups.reverse()) {
      await cleanup().catch(() => {});
    }
  }
}

function markerOf(childName: string): string {
  if (childName === "api") return "api/src/server.ts";
  if (childName === "worker") return "api/src/worker.ts";
  if (childName.startsWith("indexer")) return "ponder";
  if (childName.startsWith("hardhat")) return "hardhat";
  return "postgres";
}
