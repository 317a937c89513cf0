/**
 * `npm start` end to end: the real orchestrator in a fresh data dir on free ports (embedded
 * Postgres, Hardhat node, Ignition deployment, Ponder, the API), then Ctrl-C. Tests of API flows
 * against the running stack can join the `describe` below and use `stack`.
 */
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isRunning } from "../../tools/stack/runtime-files.ts";
import type { Token } from "../../clients/typescript/index.ts";
import { expectApiError, sdk } from "../support/sdk.ts";
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
    expect(banner).toMatch(/ArtMarket:\s+0x[0-9a-fA-F]{40}/);
    expect(banner).toMatch(/AuditAnchor:\s+0x[0-9a-fA-F]{40}/);
    expect(stack.indexerUrl).toBe(`http://127.0.0.1:${stack.ports.ponder}`);
    expect(banner).toContain(stack.dataDir);
    expect(stack.adminApiKey).toMatch(/\S{20,}/);
  });

  it("answers /healthz", async () => {
    // Raw HTTP: the probe an orchestrator sends, not an API call.
    const res = await fetch(`${stack.url}/healthz`);
    expect(res.status).toBe(200);
  });

  it("reports database, chain and indexer ready on /readyz", async () => {
    const body = await waitFor(async () => {
      // Raw HTTP: the readiness probe, read as a load balancer reads it.
      const res = await fetch(`${stack.url}/readyz`);
      return res.status === 200 ? ((await res.json()) as { status: string; checks: Record<string, { status: string; lag_blocks?: number }> }) : undefined;
    }, { timeoutMs: 20_000, what: "/readyz 200" });
    expect(body.status).toBe("ready");
    expect(body.checks.database?.status).toBe("ok");
    expect(body.checks.chain?.status).toBe("ok");
    expect(body.checks.indexer?.status).toBe("ok");
    expect(body.checks.indexer?.lag_blocks).toBe(0);
  });

  it("exchanges the admin key for scoped tokens, enforces scopes, and revokes at once", async () => {
    // The SDK exchanges the key itself on the first call; the exchange's answer is observed on the way.
    const exchanges: { status: number; body: Token }[] = [];
    const api = sdk(stack.url, {
      apiKey: stack.adminApiKey!,
      scope: ["users:read"],
      fetch: async (request) => {
        const response = await fetch(request);
        if (request.method === "POST" && new URL(request.url).pathname === "/v1/auth/token") exchanges.push({ status: response.status, body: (await response.clone().json()) as Token });
        return response;
      },
    });

    const { data: profile, response: me } = await api.GET("/v1/users/me");
    expect(me.status).toBe(200);
    expect(exchanges).toHaveLength(1);
    expect(exchanges[0]!.status).toBe(201);
    const { token, scope, token_type } = exchanges[0]!.body;
    expect(token_type).toBe("Bearer");
    expect(scope).toEqual(["users:read"]);
    expect(await api.accessToken()).toBe(token);
    expect(profile.role).toBe("admin");
    expect(profile.wallet_address).toMatch(/^0x[0-9a-fA-F]{40}$/);

    await expectApiError(api.GET("/v1/admin/users"), 403, "insufficient_scope");

    const { response: revoked } = await api.DELETE("/v1/auth/token");
    expect(revoked.status).toBe(200);
    // The client still holds the token (it cannot know it was revoked): refused at once.
    await expectApiError(api.GET("/v1/users/me"), 401, "token_revoked");
    expect(exchanges).toHaveLength(1);
  });

  it("signs in with Ethereum using a real signature bound to the stack's domain and chain", async () => {
    const anonymous = sdk(stack.url);
    const { data: issued, response: nonceRes } = await anonymous.POST("/v1/auth/siwe/nonce");
    expect(nonceRes.status).toBe(201);
    const { nonce } = issued;
    const account = privateKeyToAccount(generatePrivateKey());
    const message = createSiweMessage({
      domain: new URL(stack.url).host,
      address: account.address,
      uri: stack.url,
      version: "1",
      chainId: 31337,
      nonce,
      issuedAt: new Date(),
    });
    const { data: session, response: verify } = await anonymous.POST("/v1/auth/siwe/verify", { body: { message, signature: await account.signMessage({ message }) } });
    expect(verify.status).toBe(201);
    const { data: me } = await sdk(stack.url, { token: session.token }).GET("/v1/users/me");
    expect(me.wallet_address).toBe(account.address);
  });

  it("stops every process on Ctrl-C and exits 0", async () => {
    const processes = stack.processes;
    expect(processes.map((p) => p.name).sort()).toEqual(["api", "hardhat node", "indexer (ponder)", "postgres", "stack", "worker"]);
    expect(processes.every(isRunning)).toBe(true);

    const exit = await stack.stop("SIGINT");
    expect(exit).toEqual({ code: 0, signal: null });
    expect(stack.output()).toContain("stopping the worker, the API, the indexer, the chain and the database");
    expect(stack.output().trimEnd().endsWith("Stopped: every process has exited.")).toBe(true);
    await waitFor(() => processes.every((p) => !isRunning(p)), { timeoutMs: 5_000, what: "no orphan processes" });
    // Raw HTTP: nothing listens any more, so the probe's connection is refused.
    const res = await fetch(`${stack.url}/healthz`).catch(() => null);
    expect(res).toBeNull();
  }, 60_000);
});
