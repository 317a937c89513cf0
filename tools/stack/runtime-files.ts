import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { english, generateMnemonic } from "viem/accounts";
import { waitUntil } from "./processes.ts";

/** The custody mnemonic of a local stack: generated once, kept in DATA_DIR/custody-mnemonic (0600). */
export function localCustodyMnemonic(dataDir: string): string {
  const file = path.join(dataDir, "custody-mnemonic");
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    try {
      writeFileSync(file, `${generateMnemonic(english)}\n`, { mode: 0o600, flag: "wx" });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  }
  return readFileSync(file, "utf8").trim();
}

/** The processes of a running stack, kept in DATA_DIR/run/processes.json while it runs. */
export interface ProcessRecord {
  name: string;
  pid: number;
  /** A string of its command line, to recognise it (a recycled pid is someone else's). */
  marker: string;
}

function processesFile(dataDir: string): string {
  return path.join(dataDir, "run", "processes.json");
}

export function writeProcessRecords(dataDir: string, records: ProcessRecord[]): void {
  mkdirSync(path.join(dataDir, "run"), { recursive: true });
  writeFileSync(processesFile(dataDir), `${JSON.stringify(records, null, 2)}\n`);
}

export function readProcessRecords(dataDir: string): ProcessRecord[] {
  try {
    return JSON.parse(readFileSync(processesFile(dataDir), "utf8")) as ProcessRecord[];
  } catch {
    return [];
  }
}

export function clearProcessRecords(dataDir: string): void {
  rmSync(processesFile(dataDir), { force: true });
}

export function isRunning(record: ProcessRecord): boolean {
  try {
    process.kill(record.pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${record.pid}/cmdline`, "utf8").replaceAll("\0", " ").includes(record.marker);
  } catch {
    return true; // no /proc: trust the pid
  }
}

/**
 * A stack that was killed outright (SIGKILL, a closed terminal) leaves its children running in their
 * own process groups. Refuses when the stack itself still runs; otherwise stops its leftovers.
 */
export async function reapLeftoverProcesses(dataDir: string, log: (line: string) => void): Promise<void> {
  const records = readProcessRecords(dataDir);
  const stack = records.find((r) => r.name === "stack");
  if (stack && stack.pid !== process.pid && isRunning(stack)) {
    throw new Error(`Another stack (pid ${stack.pid}) is running with DATA_DIR ${dataDir}: stop it first, or use another DATA_DIR`);
  }
  // Newest first: the indexer before the chain and the database it reads.
  for (const record of records.filter((r) => r.name !== "stack" && isRunning(r)).reverse()) {
    log(`Stopping ${record.name} (pid ${record.pid}) left running by an earlier stack`);
    try {
      process.kill(-record.pid, "SIGINT");
    } catch {
      process.kill(record.pid, "SIGINT");
    }
    await waitUntil(async () => !isRunning(record), { timeoutMs: 15_000, what: `${record.name} pid ${record.pid} to stop` }).catch(
      () => {
        try {
          process.kill(-record.pid, "SIGKILL");
        } catch {
          // gone
        }
      },
    );
  }
  clearProcessRecords(dataDir);
}

/**
 * DATA_DIR/archive/<this start's time>/: where a start moves what it will not use (a database of
 * another chain, a chain journal that does not replay, both under --fresh), made on first use. The
 * `keep` newest archives stay.
 */
export class StartArchive {
  private dir: string | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly keep: number,
    private readonly log: (line: string) => void,
  ) {}

  /** This start's archive, or null while nothing was moved into it. */
  get path(): string | null {
    return this.dir;
  }

  /** Moves `from` into this start's archive under its own name, intact; answers where it went. */
  moveAside(from: string): string {
    const root = path.join(this.dataDir, "archive");
    this.dir ??= path.join(root, new Date().toISOString().replace(/[:.]/g, "-"));
    const to = path.join(this.dir, path.basename(from));
    mkdirSync(this.dir, { recursive: true });
    renameSync(from, to);
    const old = readdirSync(root).sort().reverse().slice(this.keep);
    for (const name of old) rmSync(path.join(root, name), { recursive: true, force: true });
    if (old.length > 0) this.log(`Removed the oldest archives (keeping ${this.keep}): ${old.join(", ")}`);
    return to;
  }
}
