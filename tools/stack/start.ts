/**
 * `npm start`: the whole platform on one machine, with no setup. Settings come from the
 * environment and an optional `.env` in the repository root (the environment wins); see
 * settings.ts for the stack's own and api/src/config.ts for the API's. The database and the local
 * chain are kept from one start to the next; `npm start -- --fresh` starts empty (the old ones archived).
 */
import path from "node:path";
import { parseArgs } from "node:util";
import dotenv from "dotenv";
import { type ManagedProcess, repoRoot } from "./processes.ts";
import { readStackSettings } from "./settings.ts";
import { type RunningStack, startStack } from "./stack.ts";

dotenv.config({ path: path.join(repoRoot, ".env"), quiet: true });

const say = (line: string) => process.stdout.write(`[stack] ${line}\n`);
const children = new Set<ManagedProcess>();
let stack: RunningStack | null = null;
let shuttingDown = false;
let signalDuringStartup: NodeJS.Signals | null = null;
let firstSignalAt = 0;
/**
 * One Ctrl-C reaches this process more than once: from the terminal (the whole process group) and
 * relayed by npm. Copies within this window are the same keypress. (`npm start` runs this file with
 * `node --import tsx`, not the tsx command: tsx's parent process kills its child outright when it
 * does not confirm a signal within 60 ms, which a loaded machine can miss, and the chain's last
 * blocks would not reach the journal.)
 */
const SAME_KEYPRESS_MS = 1_500;

async function shutdown(code: number): Promise<never> {
  shuttingDown = true;
  await stack?.stop();
  if (stack) say(code === 0 ? "Stopped: every process has exited." : "Stopped.");
  process.exit(code);
}

function onSignal(signal: NodeJS.Signals): void {
  if (shuttingDown && performance.now() - firstSignalAt < SAME_KEYPRESS_MS) return;
  if (!shuttingDown) firstSignalAt = performance.now();
  if (shuttingDown) {
    // A second Ctrl-C: stop waiting for graceful exits.
    say(`${signal} again: killing the remaining processes`);
    for (const child of children) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone
      }
    }
    process.exit(130);
  }
  if (!stack) {
    // Stopping what already runs (newest first) also ends the startup step waiting on it.
    signalDuringStartup = signal;
    shuttingDown = true;
    say(`${signal}: abandoning the startup (again to force)`);
    void (async () => {
      for (const child of [...children].reverse()) await child.stop("SIGINT", 15_000);
    })();
    return;
  }
  say(`${signal}: stopping the worker, the API, the indexer, the chain and the database...`);
  void shutdown(0).then(() => undefined);
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, onSignal);

process.on("uncaughtException", (error) => {
  say(`Unexpected error: ${error.stack ?? error.message}`);
  void shutdown(1);
});
process.on("unhandledRejection", (reason) => {
  say(`Unexpected error: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`);
  void shutdown(1);
});

// performance.now() counts from this process's start: what passed so far went to loading the code.
const loadedAt = performance.now();
try {
  const { values: args } = parseArgs({ options: { fresh: { type: "boolean", default: false } } });
  const settings = readStackSettings(process.env);
  stack = await startStack(settings, {
    log: say,
    fresh: args.fresh,
    onChild: (child) => {
      children.add(child);
      // A child started later (the watchdog's restarted indexer) is watched like the first ones.
      if (stack) watchForCrash(child);
    },
    startApi: true,
  });
} catch (error) {
  say(`Startup failed. ${error instanceof Error ? error.message : String(error)}`);
  process.exit(signalDuringStartup ? 0 : 1);
}
if (signalDuringStartup) await shutdown(0);

// A child that exits on its own takes the whole stack down: half a platform is worse than none.
function watchForCrash(child: ManagedProcess): void {
  void child.exited.then(({ code, signal }) => {
    if (child.stopping || shuttingDown) return;
    say(`${child.name} (pid ${child.pid}) exited unexpectedly (${signal ?? `exit code ${code}`}); see ${child.logFile}`);
    say("Stopping the stack.");
    void shutdown(1);
  });
}
for (const child of stack.children()) watchForCrash(child);

printBanner(stack, loadedAt, performance.now());

function printBanner(s: RunningStack, loadedAt: number, readyAt: number): void {
  const rel = (p: string) => (p.startsWith(repoRoot) ? path.relative(repoRoot, p) || "." : p);
  const api = s.api!;
  const lines = [
    "",
    "  Art platform API is running",
    "",
    `  API:             ${api.url} (HTTP process, pid ${api.http.pid}; log ${rel(s.logs.api)})`,
    `  Worker:          pid ${api.worker.pid} (jobs, chain operations, indexer listener, sweeps; log ${rel(s.logs.worker)})`,
    `  Docs:            ${api.url}/docs`,
    `  OpenAPI:         ${api.url}/v1/openapi.json`,
    `  Chain RPC:       ${s.chain.rpcUrl} (chain id ${s.chain.chainId}${s.chain.node ? ", local Hardhat node" : ""})`,
    ...(s.chain.journal
      ? [`  Chain journal:   ${rel(s.chain.journal.file)} (${s.chain.journal.replayedBlocks > 0 ? `${s.chain.journal.replayedBlocks} blocks brought back from an earlier start` : "a new chain"})`]
      : []),
    `  ArtCertificate:  ${s.contracts.artCertificate}`,
    `  ArtShares:       ${s.contracts.artShares}`,
    `  ArtMarket:       ${s.contracts.artMarket}`,
    `  AuditAnchor:     ${s.contracts.auditAnchor}`,
    `  ArtExchange:     ${s.exchange.artExchange}${s.exchange.deployedNow ? " (deployed now by Ignition)" : ""}`,
    `  Payment token:   ${s.exchange.paymentToken}`,
    `  Start block:     ${s.contracts.startBlock}${s.contracts.deployedNow ? " (deployed now by Ignition)" : ""}`,
    `  Relayer:         ${s.relayer}`,
    `  Indexer:         ${s.indexer.url} (views schema "${s.indexer.viewsSchema}", build schema ${s.indexer.schema})`,
    `  Database:        ${s.postgres ? `embedded Postgres on port ${s.postgres.port}, data in ${rel(s.postgres.dataDir)}` : "DATABASE_URL"}`,
    `  Data:            ${rel(s.settings.dataDir)}`,
    `  Logs:            ${rel(s.settings.logDir)}/ (api.log, worker.log, hardhat-node.log, ponder.log, postgres.log, ignition.log)`,
  ];
  if (s.archived) lines.push(`  Archived:        ${rel(s.archived.dir)} (the earlier data; ${s.archived.why})`);
  if (api.bootstrapAdminKey) {
    lines.push("", `  Admin API key:   ${api.bootstrapAdminKey}`, "  (created now and shown once: keep it)");
  } else if (api.adminKeyKept) {
    lines.push("", "  Admin API key:   kept from an earlier start (not shown again; npm run admin-key prints a new one)");
  }
  const steps = [["loading the code", loadedAt] as const, ...Object.entries(s.timings)]
    .filter(([, ms]) => ms >= 50)
    .map(([name, ms]) => `${stepLabel(name)} ${(ms / 1000).toFixed(1)} s`)
    .join(", ");
  lines.push("", `  Started in ${(readyAt / 1000).toFixed(1)} s (${steps}).`, "  Press Ctrl-C to stop.", "");
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** A step's name in the banner's timing line: "Starting the embedded Postgres" -> "embedded Postgres". */
function stepLabel(step: string): string {
  if (step === "Replaying the chain") return "chain replay";
  if (step === "Reading the chain") return "chain identity";
  return step.replace(/^(Starting|Migrating|Deploying|Recording|Checking for|Checking) (the )?/, "");
}
