/**
 * The judgement behind the indexer watchdog, /readyz and confirmations from the chain, on a fake
 * clock: a stalled indexer (behind the chain head, indexing nothing new) is told apart from one at
 * the head and from one that is behind but progressing (a backfill). The watchdog restarts only
 * the stalled one, once per stall. The real processes: test/e2e/stack-indexer-stall.test.ts.
 */
import { describe, expect, it } from "vitest";
import express from "express";
import type { AddressInfo } from "node:net";
import { createPublicClient, http } from "viem";
import { IndexerLagTracker, type IndexerLagSample, type IndexerLagState, STALE_AFTER_MS, staleness } from "../../api/src/chain/indexer-lag.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { registerHealthRoutes } from "../../api/src/modules/health/health.routes.ts";
import { testEnvironment } from "../support/environment.ts";
import { IndexerWatchdog } from "../../tools/stack/indexer-watchdog.ts";

const bounds = { maxLagBlocks: 5, stallMs: 10_000 };
const at = (indexedBlock: number | null, headBlock: number): IndexerLagSample => ({
  indexedBlock: indexedBlock === null ? null : BigInt(indexedBlock),
  headBlock: BigInt(headBlock),
});

describe("IndexerLagTracker", () => {
  it("counts a stall from the first sample behind the head without progress, and only once the bound has passed", () => {
    const tracker = new IndexerLagTracker(bounds);
    expect(tracker.observe(at(17, 17), 0)).toMatchObject({ stalled: false, lagging: false, stuckSince: null, lagBlocks: 0 });
    // The chain moves on, the indexer does not: one block behind is enough, no block bound applies to a stall.
    expect(tracker.observe(at(17, 18), 1_000)).toMatchObject({ stalled: false, stuckSince: 1_000, lagBlocks: 1 });
    expect(tracker.observe(at(17, 30), 10_999)).toMatchObject({ stalled: false, lagging: false, farBehindSince: 10_999 });
    const stalled = tracker.observe(at(17, 44), 11_000);
    expect(stalled).toMatchObject({ stalled: true, lagging: true, stalledForMs: 10_000, lagBlocks: 27 });
    // Catching up ends it at once.
    expect(tracker.observe(at(44, 44), 11_500)).toMatchObject({ stalled: false, lagging: false, stuckSince: null, farBehindSince: null });
  });

  it("does not call an indexer that is behind but progressing stalled; far behind for the bound is lagging", () => {
    const tracker = new IndexerLagTracker(bounds);
    for (let t = 0, block = 100; t <= 30_000; t += 1_000, block += 3) {
      const state = tracker.observe(at(block, 1_000), t);
      expect(state.stalled).toBe(false);
      expect(state.lagging).toBe(t >= 10_000);
    }
  });

  it("takes an indexer that does not answer for one that makes no progress", () => {
    const tracker = new IndexerLagTracker(bounds);
    tracker.observe(at(20, 20), 0);
    expect(tracker.observe(at(null, 21), 1_000)).toMatchObject({ stalled: false, lagBlocks: null, stuckSince: 1_000 });
    // Answering again with the same block is still no progress.
    expect(tracker.observe(at(20, 22), 6_000)).toMatchObject({ stalled: false, stuckSince: 1_000 });
    expect(tracker.observe(at(null, 23), 11_000)).toMatchObject({ stalled: true, stalledForMs: 10_000 });
  });
});

describe("IndexerWatchdog", () => {
  function harness(options: { failRestart?: boolean } = {}) {
    let now = 0;
    let sample: IndexerLagSample | null = at(10, 10);
    const restarts: string[] = [];
    const lines: string[] = [];
    const watchdog = new IndexerWatchdog({
      ...bounds,
      now: () => now,
      probe: async () => sample,
      restart: async (reason) => {
        restarts.push(reason);
        if (options.failRestart) throw new Error("port 42069 is taken");
      },
      log: (line) => lines.push(line),
    });
    return {
      watchdog,
      restarts,
      lines,
      /** Moves the clock, sets what the probe sees, and lets the watchdog look once. */
      async step(ms: number, next: IndexerLagSample | null) {
        now += ms;
        sample = next;
        return watchdog.check();
      },
    };
  }

  it("restarts a stalled indexer once, naming the stall, then gives the new process a fresh clock", async () => {
    const h = harness();
    await h.step(0, at(17, 17));
    await h.step(1_000, at(17, 20)); // stuck from here
    await h.step(9_999, at(17, 44));
    expect(h.restarts).toEqual([]);
    await h.step(1, at(17, 44));
    expect(h.restarts).toHaveLength(1);
    expect(h.restarts[0]).toMatch(/^indexer stalled: at block 17, 27 blocks behind the chain head 44, no new block indexed for 10 s/);
    expect(h.lines[0]).toMatch(/indexer stalled/);
    // The new process starts where the old one stopped: not stalled again until a full bound has passed.
    await h.step(1_000, at(17, 44));
    await h.step(9_000, at(17, 44));
    expect(h.restarts).toHaveLength(1);
    await h.step(1_000, at(17, 44));
    expect(h.restarts).toHaveLength(2);
    expect(h.watchdog.restarts).toBe(2);
  });

  it("leaves alone an indexer at the head or one that progresses, and judges nothing while the chain cannot be read", async () => {
    const h = harness();
    for (let i = 0; i < 40; i++) await h.step(1_000, at(100 + i, 100 + i));
    for (let i = 0; i < 40; i++) await h.step(1_000, at(200 + i, 2_000));
    for (let i = 0; i < 40; i++) expect(await h.step(1_000, null)).toBeNull();
    expect(h.restarts).toEqual([]);
  });

  it("tries again after the next stall when a restart fails", async () => {
    const h = harness({ failRestart: true });
    await h.step(0, at(5, 9));
    await h.step(10_000, at(5, 9));
    expect(h.restarts).toHaveLength(1);
    expect(h.lines.at(-1)).toMatch(/Restarting the indexer failed: port 42069 is taken; trying again/);
    await h.step(1_000, at(null, 9)); // the clock starts again
    await h.step(9_999, at(null, 9));
    expect(h.restarts).toHaveLength(1);
    await h.step(1, at(null, 9));
    expect(h.restarts).toHaveLength(2);
    expect(h.watchdog.restarts).toBe(0);
  });
});

describe("staleness of the indexer's answers", () => {
  it("counts an indexer behind the head as stale once it has made no progress for STALE_AFTER_MS, never one at the head", () => {
    const tracker = new IndexerLagTracker(bounds);
    expect(staleness(tracker.observe(at(17, 17), 0), 0)).toBeNull();
    const behind = tracker.observe(at(17, 19), 1_000);
    expect(staleness(behind, 1_000 + STALE_AFTER_MS - 1)).toBeNull();
    expect(staleness(behind, 1_000 + STALE_AFTER_MS)).toEqual({ lagBlocks: 2, behindForMs: STALE_AFTER_MS });
    // Progress restarts the clock; catching up ends it.
    expect(staleness(tracker.observe(at(18, 19), 4_000), 4_500)).toBeNull();
    expect(staleness(tracker.observe(at(19, 19), 9_000), 20_000)).toBeNull();
    expect(staleness(null, 0)).toBeNull();
  });

  it("makes /readyz say degraded (200) while the indexer is stale within the block bound, ready when it is not", async () => {
    const env = testEnvironment();
    const publicClient = createPublicClient({ transport: http(env.rpcUrl) });
    const db = createDb(env.databaseUrl, 1);
    let state: IndexerLagState | null = null;
    const app = express();
    registerHealthRoutes(app, {
      db,
      publicClient,
      maxLagBlocks: 5,
      indexer: { indexedBlock: async () => (await publicClient.getBlockNumber({ cacheTime: 0 })) - 2n, lag: () => state, stallTimeoutMs: 60_000 },
      failingProjections: async () => [],
    });
    const server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    const readyz = async () => {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`);
      return { status: res.status, body: (await res.json()) as { status: string; checks: { indexer: { status: string; behind_for_ms?: number } } } };
    };
    try {
      const stuck = new IndexerLagTracker({ maxLagBlocks: 5, stallMs: 60_000 });
      stuck.observe(at(10, 12), Date.now() - 10_000);
      state = stuck.observe(at(10, 12), Date.now());
      const degraded = await readyz();
      expect(degraded).toMatchObject({ status: 200, body: { status: "degraded", checks: { indexer: { status: "degraded" } } } });
      expect(degraded.body.checks.indexer.behind_for_ms).toBeGreaterThanOrEqual(10_000);
      state = new IndexerLagTracker(bounds).observe(at(12, 13), Date.now());
      expect(await readyz()).toMatchObject({ status: 200, body: { status: "ready", checks: { indexer: { status: "ok" } } } });
    } finally {
      server.close();
      await db.destroy();
    }
  });
});
