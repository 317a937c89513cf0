/**
 * `npm start` replaces a stalled indexer. Ponder's websocket feed goes through a proxy the test
 * freezes: the connection stays open and delivers nothing, Ponder's /ready stays 200, and the
 * chain moves on. The stack's watchdog sees the indexer behind the chain head without progress for
 * INDEXER_STALL_TIMEOUT_MS, restarts it on polling (no websocket again), watches the new process
 * like the first, and the indexer catches up; Ctrl-C still stops everything and exits 0.
 * The watchdog's judgement on a fake clock: test/api/indexer-lag.test.ts.
 */
import { afterAll, beforeAll, expect, it, onTestFailed } from "vitest";
import { chainClient } from "../../tools/stack/chain.ts";
import { freePort } from "../../tools/stack/processes.ts";
import { isRunning, readProcessRecords } from "../../tools/stack/runtime-files.ts";
import { type BootedStack, bootStack } from "../support/stack.ts";
import { type FreezableProxy, startFreezableProxy } from "../support/freezable-proxy.ts";
import { waitFor } from "../support/wait.ts";

let stack: BootedStack | undefined;
let feed: FreezableProxy | undefined;

beforeAll(async () => {
  const hardhatPort = await freePort();
  feed = await startFreezableProxy(hardhatPort);
  stack = await bootStack({
    env: { HARDHAT_NODE_PORT: String(hardhatPort), CHAIN_WS_URL: `ws://127.0.0.1:${feed.port}`, INDEXER_STALL_TIMEOUT_MS: "3000" },
  });
}, 300_000);

afterAll(async () => {
  await stack?.dispose();
  await feed?.close();
}, 90_000);

const indexerRecord = () => readProcessRecords(stack!.dataDir).find((r) => r.name.startsWith("indexer"));
async function readyz() {
  // Raw HTTP: the readiness probe; the indexer's /status below is Ponder's own, not the API.
  const res = await fetch(`${stack!.url}/readyz`);
  return { status: res.status, indexer: ((await res.json()) as { checks: { indexer: { block?: number; lag_blocks?: number } } }).checks.indexer };
}
const indexedBlock = async () => {
  const status = (await (await fetch(`${stack!.indexerUrl}/status`)).json()) as Record<string, { block: { number: number } }>;
  return Object.values(status)[0]!.block.number;
};

it("restarts a stalled indexer on polling, watches the new process, and still stops cleanly", async () => {
  const s = stack!;
  onTestFailed(() => console.log(`[stack-indexer-stall] ${s.diagnostics()}`));
  const chain = chainClient(s.rpcUrl);
  const mine = () => chain.request({ method: "evm_mine", params: [] } as never);
  await waitFor(async () => (await readyz()).status === 200, { timeoutMs: 30_000, what: "/readyz 200 at start" });
  const stalled = indexerRecord()!;
  const websocketConnections = feed!.connections();
  expect(websocketConnections).toBeGreaterThanOrEqual(1);

  feed!.freeze();
  const stuckAt = await indexedBlock();
  for (let i = 0; i < 3; i++) await mine();
  const head = Number(await chain.getBlockNumber({ cacheTime: 0 }));
  expect(head).toBeGreaterThan(stuckAt);

  // The watchdog replaces it with a new process...
  const restarted = await waitFor(
    () => {
      // The stalled process's record may still be listed while it stops: the new one is the other.
      const record = readProcessRecords(s.dataDir).find((r) => r.name.startsWith("indexer") && r.pid !== stalled.pid);
      return record ?? null;
    },
    // Stopping the stalled process can take its whole 20 s grace under load (then SIGKILL, whose
    // schema lock makes the next start wait 15-25 s), before the new one starts and backfills.
    { timeoutMs: 150_000, what: "a new indexer process" },
  );
  expect(isRunning(stalled)).toBe(false);
  expect(isRunning(restarted)).toBe(true);
  expect(s.output()).toMatch(/The indexer stalled: at block \d+, \d+ blocks behind the chain head \d+, no new block indexed for \d+ s/);
  expect(s.output()).toMatch(/Restarting the indexer on polling \(its websocket feed stopped delivering blocks\)/);

  // ...that catches up and follows the chain by polling: no new websocket connection.
  await waitFor(async () => {
    const ready = await readyz();
    return ready.status === 200 && ready.indexer.lag_blocks === 0 && ready.indexer.block! >= head;
  }, { timeoutMs: 60_000, what: "the restarted indexer at the chain head" });
  await mine();
  const next = Number(await chain.getBlockNumber({ cacheTime: 0 }));
  await waitFor(async () => (await indexedBlock()) === next, { timeoutMs: 15_000, what: "the next block indexed" });
  expect(feed!.connections()).toBe(websocketConnections);
  expect(s.output()).toMatch(/The indexer runs again \(pid \d+, polling\)/);
  expect(s.output()).not.toMatch(/exited unexpectedly/);

  // Ctrl-C stops the new indexer with the rest.
  const records = readProcessRecords(s.dataDir);
  expect(records.map((r) => r.pid)).toContain(restarted.pid);
  expect(await s.stop("SIGINT")).toEqual({ code: 0, signal: null });
  await waitFor(() => records.every((r) => !isRunning(r)), { timeoutMs: 10_000, what: "no orphan processes" });
}, 300_000);
