import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll } from "vitest";
import { binPath, childEnv, freePort, repoRoot } from "../../tools/stack/processes.ts";
import { type ProcessRecord, isRunning, readProcessRecords } from "../../tools/stack/runtime-files.ts";

export interface BootedStack {
  /** The API base URL from the banner. */
  url: string;
  indexerUrl: string;
  rpcUrl: string;
  /** The bootstrap admin API key the banner printed (a fresh data dir always creates one; a kept database none). */
  adminApiKey: string | null;
  dataDir: string;
  ports: { api: number; postgres: number; hardhat: number; ponder: number };
  /** Everything the stack printed so far (stdout and stderr). */
  output(): string;
  /** For a failed test's report: the output and the last lines of each log in DATA_DIR/logs. */
  diagnostics(lines?: number): string;
  /** The Hardhat node's own RPC, behind the journaled Chain RPC (from its command line): what no user is given. */
  nodeRpcUrl(): string;
  /** The stack's processes (its own and its children's), from DATA_DIR/run/processes.json. */
  processes: ProcessRecord[];
  /** Settles when the stack process exits, for whatever reason. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` (default SIGINT, Ctrl-C) and waits for the exit. Idempotent. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** stop(), then removes the data dir it made (unless KEEP_TEST_DIR=1; a DATA_DIR given in `env` is the caller's). */
  dispose(): Promise<void>;
}

export interface BootStackOptions {
  /** Extra settings for the stack (they win over the defaults below); a DATA_DIR here is used as is. */
  env?: Record<string, string>;
  /** Arguments of `npm start -- …` (e.g. --fresh). */
  args?: string[];
  timeoutMs?: number;
}

// Settings a developer's shell or .env may hold: blanked so the stack starts everything itself
// (an empty value counts as unset, and dotenv does not override variables already present).
const ISOLATED = [
  "DATABASE_URL", "CHAIN_RPC_URL", "CHAIN_WS_URL", "CHAIN_ID", "ART_CERTIFICATE_ADDRESS", "ART_SHARES_ADDRESS",
  "ART_MARKET_ADDRESS", "AUDIT_ANCHOR_ADDRESS", "ART_EXCHANGE_ADDRESS", "PAYMENT_TOKEN_ADDRESS",
  "CONTRACTS_START_BLOCK", "RELAYER_PRIVATE_KEY", "CUSTODY_MNEMONIC", "BOOTSTRAP_ADMIN_API_KEY", "INDEXER_URL",
  "INDEXER_VIEWS_SCHEMA", "PUBLIC_BASE_URL", "REDIS_URL", "NODE_ENV", "HOST",
];

/**
 * Stacks of this test file still running: a test that timed out never reached its own `finally`,
 * and its stack (Postgres, node, indexer, API) must not outlive the file and load the machine.
 */
const running = new Set<() => Promise<void>>();
afterAll(async () => {
  await Promise.all([...running].map((dispose) => dispose()));
}, 90_000);

/** Kills whatever the stack in `dataDir` recorded that still runs (each in its own process group). */
function killRecorded(dataDir: string): void {
  for (const record of readProcessRecords(dataDir).filter(isRunning)) {
    try {
      process.kill(-record.pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}

/**
 * Starts the platform exactly as `npm start` does (`node --import tsx tools/stack/start.ts` with
 * node_modules/.bin on PATH and telemetry off), in a temporary DATA_DIR on free ports, and
 * resolves once the banner is printed.
 */
export async function bootStack(options: BootStackOptions = {}): Promise<BootedStack> {
  const ownDataDir = !options.env?.DATA_DIR;
  const dataDir = options.env?.DATA_DIR ?? mkdtempSync(path.join(os.tmpdir(), "art-platform-stack-"));
  const ports = { api: await freePort(), postgres: await freePort(), hardhat: await freePort(), ponder: await freePort() };
  const env = childEnv({
    ...Object.fromEntries(ISOLATED.map((name) => [name, ""])),
    DATA_DIR: dataDir,
    PORT: String(ports.api),
    EMBEDDED_POSTGRES_PORT: String(ports.postgres),
    HARDHAT_NODE_PORT: String(ports.hardhat),
    PONDER_PORT: String(ports.ponder),
    LOG_LEVEL: "warn",
    ...options.env,
  });
  const child: ChildProcess = spawn(binPath("node"), ["--import", "tsx", "tools/stack/start.ts", ...(options.args ?? [])], {
    cwd: repoRoot,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let bannerPrinted!: () => void;
  const banner = new Promise<void>((resolve) => (bannerPrinted = resolve));
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (/Press Ctrl-C to stop/.test(output)) bannerPrinted();
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const abandon = async () => {
    child.kill("SIGINT");
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    await exited;
    clearTimeout(timer);
    killRecorded(dataDir);
    running.delete(abandon);
  };
  running.add(abandon);

  const timeoutMs = options.timeoutMs ?? 120_000;
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    banner.then(() => "banner" as const),
    exited.then(() => "exited" as const),
    new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), timeoutMs))),
  ]);
  clearTimeout(timer);
  if (outcome !== "banner") {
    await abandon();
    throw new Error(`The stack ${outcome === "exited" ? "exited" : `printed no banner within ${timeoutMs} ms`}; its output:\n${output}\n(data dir ${dataDir})`);
  }

  const field = (name: string) => new RegExp(`^\\s+${name}:\\s+(\\S+)`, "m").exec(output)?.[1] ?? null;
  let stopping: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | null = null;
  const stack: BootedStack = {
    url: field("API")!,
    indexerUrl: field("Indexer")!,
    rpcUrl: field("Chain RPC")!,
    adminApiKey: /^\s+Admin API key:\s+(sk_\S+)/m.exec(output)?.[1] ?? null,
    dataDir,
    ports,
    output: () => output,
    diagnostics(lines = 40) {
      const logDir = path.join(dataDir, "logs");
      const logs = existsSync(logDir) ? readdirSync(logDir).filter((name) => name.endsWith(".log")).sort() : [];
      const tails = logs.map((name) => {
        const text = readFileSync(path.join(logDir, name), "utf8").trimEnd().split("\n").slice(-lines).join("\n");
        return `--- ${name} (last ${lines} lines)\n${text}`;
      });
      return [`--- the stack's output\n${output}`, ...tails].join("\n");
    },
    processes: readProcessRecords(dataDir),
    nodeRpcUrl() {
      const node = stack.processes.find((p) => p.name === "hardhat node");
      const port = node ? /--port (\d+)/.exec(readFileSync(`/proc/${node.pid}/cmdline`, "utf8").replaceAll("\0", " "))?.[1] : undefined;
      if (!port) throw new Error(`The stack's Hardhat node is not running (data dir ${dataDir})`);
      return `http://127.0.0.1:${port}`;
    },
    exited,
    stop(signal = "SIGINT") {
      stopping ??= (async () => {
        child.kill(signal);
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        try {
          return await exited;
        } finally {
          clearTimeout(timer);
        }
      })();
      return stopping;
    },
    async dispose() {
      await stack.stop();
      running.delete(abandon);
      // Whatever survived a failed test must not outlive the run.
      killRecorded(dataDir);
      if (ownDataDir && process.env.KEEP_TEST_DIR !== "1") rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return stack;
}
