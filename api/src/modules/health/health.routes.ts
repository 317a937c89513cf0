import type { Express } from "express";
import type { Kysely } from "kysely";
import type { PublicClient } from "viem";
import { describeLag, type IndexerProbe, staleness } from "../../chain/indexer-lag.ts";
import type { Database } from "../../db/database.ts";
import { databaseReachable } from "../../db/connection.ts";
import { withDeadline } from "../../lib/deadline.ts";

/** A failed check that still reports what it measured. */
class CheckFailure extends Error {
  constructor(
    message: string,
    readonly details: Record<string, unknown>,
  ) {
    super(message);
  }
}

interface Check {
  /** `degraded`: working, but the indexer's view of the chain is behind (answers carry `Indexer-Lag`). */
  status: "ok" | "degraded" | "error";
  latency_ms: number;
  error?: string;
  [key: string]: unknown;
}

async function timed(fn: () => Promise<Record<string, unknown> | void>, timeoutMs = 2000): Promise<Check> {
  const started = performance.now();
  try {
    const extra = await withDeadline(fn(), timeoutMs);
    return { status: "ok", latency_ms: Math.round(performance.now() - started), ...(extra ?? {}) };
  } catch (err) {
    const details = err instanceof CheckFailure ? err.details : {};
    return { status: "error", latency_ms: Math.round(performance.now() - started), error: (err as Error).message, ...details };
  }
}

/** A projection of indexed facts that fails to record the facts past its block (ChainOperations.failingProjections). */
export interface FailingProjection {
  consumer: string;
  block: bigint;
  failingSince: Date;
  error: string | null;
}

/** Liveness and readiness, outside /v1 and outside rate limits so orchestrators can poll freely. */
export function registerHealthRoutes(
  app: Express,
  deps: {
    db: Kysely<Database>;
    publicClient: PublicClient;
    indexer: IndexerProbe | null;
    maxLagBlocks: number;
    failingProjections: () => Promise<FailingProjection[]>;
  },
): void {
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });

  app.get("/readyz", async (_req, res) => {
    let head: bigint | null = null;
    const [database, chain] = await Promise.all([
      timed(async () => {
        await databaseReachable(deps.db);
      }),
      timed(async () => {
        head = await deps.publicClient.getBlockNumber({ cacheTime: 0 });
        return { block: Number(head) };
      }),
    ]);
    const indexer: Check = deps.indexer
      ? await timed(async () => {
          const indexed = await deps.indexer!.indexedBlock();
          if (indexed === null) throw new Error("the indexer has not indexed any block yet");
          const lag = head === null ? null : Number(head - indexed);
          const measured = { block: Number(indexed), lag_blocks: lag };
          // A stall (behind, indexing nothing) fails even within the block bound: it will not catch up by itself.
          const state = deps.indexer!.lag?.() ?? null;
          const stillStuck = state?.stalled && lag !== 0 && (state.indexedBlock === null || indexed <= state.indexedBlock);
          if (state && stillStuck) {
            const bounds = { maxLagBlocks: deps.maxLagBlocks, stallMs: deps.indexer!.stallTimeoutMs ?? 0 };
            throw new CheckFailure(`${describeLag(state, bounds)}; certifications are confirmed from the chain meanwhile`, {
              ...measured,
              stalled: true,
              stalled_for_ms: state.stalledForMs,
            });
          }
          if (lag !== null && lag > deps.maxLagBlocks) throw new CheckFailure(`indexer is ${lag} blocks behind (max ${deps.maxLagBlocks})`, measured);
          // Behind without progress for a moment, not yet stalled: still serving, but what it shows of the chain is old.
          const stale = lag !== 0 ? staleness(state, Date.now()) : null;
          return { ...measured, stalled: false, ...(stale ? { status: "degraded", behind_for_ms: stale.behindForMs } : {}) };
        })
      : { status: "error", latency_ms: 0, error: "no indexer configured (INDEXER_URL)" };
    // A projection that cannot record a fact holds the facts after it (wallets' purchases unrecorded)
    // while everything else works: degraded, for an operator to look at, never out of rotation.
    const projections = await timed(async () => {
      const failing = await deps.failingProjections();
      if (failing.length === 0) return {};
      return {
        status: "degraded",
        failing: failing.map((f) => ({ consumer: f.consumer, block: Number(f.block), failing_since: f.failingSince.toISOString(), error: f.error })),
      };
    });
    if (projections.status === "error") projections.status = "degraded";
    const checks = { database, chain, indexer, projections };
    const ready = Object.values(checks).every((c) => c.status !== "error");
    if (ready) {
      res.json({ status: Object.values(checks).some((c) => c.status === "degraded") ? "degraded" : "ready", checks });
      return;
    }
    res
      .status(503)
      .type("application/problem+json")
      .send(
        JSON.stringify({
          type: "/problems/service_unavailable",
          title: "Service unavailable",
          status: 503,
          code: "service_unavailable",
          detail: `Not ready: ${Object.entries(checks)
            .filter(([, c]) => c.status === "error")
            .map(([name, c]) => `${name} (${c.error})`)
            .join(", ")}`,
          request_id: res.getHeader("X-Request-Id"),
          status_detail: "not_ready",
          checks,
        }),
      );
  });
}
