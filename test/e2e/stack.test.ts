/**
 * `npm start` end to end: the real orchestrator in a fresh data dir on free ports (embedded
 * Postgres, Hardhat node, Ignition deployment, Ponder, the API), then Ctrl-C. Tests of API flows
 * against the running stack can join the `describe` below and use `stack`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isRunning } from "../../api/src/stack/runtime-files.ts";
import { type BootedStack, bootStack } from "../support/stack.ts";
import { waitFor } from "../support/wait.ts";

let stack: BootedStack;

beforeAll(async () => {
  const started = performance.now();
  stack = await bootStack();
  console.log(`[stack test] banner after ${Math.round(performance.now() - started)} ms (cold start, fresh data dir)`);
}, 180_000);

afterAll(async () => {
  await stack?.dispose();
}, 90_000);

describe("npm start", () => {
  it("prints a banner with the API, chain, contracts, indexer, admin key and data locations", () => {
    const banner = stack.output();
    expect(stack.url).toBe(`http://127.0.0.1:${stack.ports.api}`);
    expect(banner).toContain(`Docs:            ${stack.url}/docs`);
    expect(banner).toContain(`OpenAPI:         ${stack.url}/v1/openapi.json`);
    expect(stack.rpcUrl).toBe(`http://127.0.0.1:${stack.ports.hardhat}`);
    expect(banner).toMatch(/chain id 31337/);
    expect(banner).toMatch(/ArtCertificate:\s+0x[0-9a-fA-F]{40}/);
    expect(banner).toMatch(/ArtShares:\s+0x[0-9a-fA-F]{40}/);
    expect(stack.indexerUrl).toBe(`http://127.0.0.1:${stack.ports.ponder}`);
    expect(banner).toContain(stack.dataDir);
    expect(stack.adminApiKey).toMatch(/\S{20,}/);
  });

  it("answers /healthz", async () => {
    const res = await fetch(`${stack.url}/healthz`);
    expect(res.status).toBe(200);
  });

  it("reports database, chain and indexer ready on /readyz", async () => {
    const body = await waitFor(async () => {
      const res = await fetch(`${stack.url}/readyz`);
      return res.status === 200 ? ((await res.json()) as { status: string; checks: Record<string, { status: string; lag_blocks?: number }> }) : undefined;
    }, { timeoutMs: 20_000, what: "/readyz 200" });
    expect(body.status).toBe("ready");
    expect(body.checks.database?.status).toBe("ok");
    expect(body.checks.chain?.status).toBe("ok");
    expect(body.checks.indexer?.status).toBe("ok");
    expect(body.checks.indexer?.lag_blocks).toBe(0);
  });

  it("stops every process on Ctrl-C and exits 0", async () => {
    const processes = stack.processes;
    expect(processes.map((p) => p.name).sort()).toEqual(["hardhat node", "indexer (ponder)", "postgres", "stack"]);
    expect(processes.every(isRunning)).toBe(true);

    const exit = await stack.stop("SIGINT");
    expect(exit).toEqual({ code: 0, signal: null });
    expect(stack.output()).toContain("stopping the API, the indexer, the chain and the database");
    await waitFor(() => processes.every((p) => !isRunning(p)), { timeoutMs: 5_000, what: "no orphan processes" });
    const res = await fetch(`${stack.url}/healthz`).catch(() => null);
    expect(res).toBeNull();
  }, 60_000);
});
