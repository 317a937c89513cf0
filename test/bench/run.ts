/**
 * `npm run bench`: throughput and tail latency of the API next to a bare Express handler that
 * returns the same JSON, measured in the same run on the same machine, against a real Postgres
 * (embedded, throwaway) and a real Hardhat chain with the deployed contracts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import express from "express";
import { english, generateMnemonic, privateKeyToAccount } from "viem/accounts";
import { HARDHAT_DEV_RELAYER_KEY, loadConfig } from "../../api/src/config.ts";
import { startServer } from "../../api/src/server.ts";
import { startHardhatNode } from "../../api/src/stack/chain.ts";
import { deployPlatform } from "../../api/src/stack/deploy.ts";
import { ensureDatabase, startEmbeddedPostgres } from "../../api/src/stack/postgres.ts";
import { freePort } from "../../api/src/stack/processes.ts";

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ADMIN_KEY = "sk_bench_admin_key_000000000000000000";

interface Figure {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function measure(name: string, opts: autocannon.Options): Promise<Figure> {
  const result = await autocannon({ duration: DURATION_S, connections: CONNECTIONS, ...opts });
  const non2xx = result.non2xx + result.errors + result.timeouts;
  return { name, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: non2xx };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "art-bench-"));
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, "pg"), port: await freePort(), logFile: path.join(dir, "pg.log"), durable: false });
  const node = await startHardhatNode({ port: await freePort(), logFile: path.join(dir, "node.log") });
  const stops: (() => Promise<void>)[] = [() => pg.stop(), () => node.stop()];
  try {
    await ensureDatabase(pg.url("postgres"), "bench");
    const relayer = privateKeyToAccount(HARDHAT_DEV_RELAYER_KEY).address;
    const deployment = await deployPlatform({
      rpcUrl: node.rpcUrl,
      relayer,
      sharesUri: "http://127.0.0.1/{id}.json",
      deploymentId: `bench-${Date.now()}`,
      logFile: path.join(dir, "deploy.log"),
    });
    const api = await startServer(
      loadConfig({
        NODE_ENV: "development",
        PORT: "0",
        LOG_LEVEL: "silent",
        DATABASE_URL: pg.url("bench"),
        CHAIN_RPC_URL: node.rpcUrl,
        ART_CERTIFICATE_ADDRESS: deployment.artCertificate,
        ART_SHARES_ADDRESS: deployment.artShares,
        CUSTODY_MNEMONIC: generateMnemonic(english),
        BOOTSTRAP_ADMIN_API_KEY: ADMIN_KEY,
        RATE_LIMIT_TOKEN_PER_MINUTE: "100000000",
        RATE_LIMIT_ANONYMOUS_PER_MINUTE: "100000000",
      }),
    );
    stops.unshift(() => api.close());

    const post = async (p: string, body: unknown, token?: string) => {
      const res = await fetch(new URL(p, api.url), {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
      return res.json() as Promise<any>;
    };
    const admin = await post("/v1/auth/token", { api_key: ADMIN_KEY, scope: ["admin"] });
    const user = await post("/v1/admin/users", { username: "bench_artist", email: "bench@example.test", role: "artist" }, admin.token);
    const profile = await (await fetch(new URL(`/v1/users/${user.id}`, api.url))).json();
    const tokenBody = JSON.stringify({ api_key: user.api_key.secret, scope: ["read"] });
    const tokenSample = await post("/v1/auth/token", JSON.parse(tokenBody));

    // The baseline: the same JSON from a bare Express handler, no database, no middleware.
    const bare = express();
    bare.use(express.json());
    bare.get("/v1/users/:id", (_req, res) => {
      res.json(profile);
    });
    bare.post("/v1/auth/token", (_req, res) => {
      res.status(201).json(tokenSample);
    });
    const bareServer = bare.listen(0, "127.0.0.1");
    await new Promise((r) => bareServer.once("listening", r));
    const bareUrl = `http://127.0.0.1:${(bareServer.address() as { port: number }).port}`;
    stops.unshift(() => new Promise((r) => bareServer.close(() => r())));

    const figures: Figure[] = [];
    figures.push(await measure("GET /v1/users/:id  (API)", { url: `${api.url}/v1/users/${user.id}` }));
    figures.push(await measure("GET /v1/users/:id  (bare Express)", { url: `${bareUrl}/v1/users/${user.id}` }));
    const tokenReq = { method: "POST" as const, headers: { "content-type": "application/json" }, body: tokenBody };
    figures.push(await measure("POST /v1/auth/token (API)", { url: `${api.url}/v1/auth/token`, ...tokenReq }));
    figures.push(await measure("POST /v1/auth/token (bare Express)", { url: `${bareUrl}/v1/auth/token`, ...tokenReq }));

    process.stdout.write(`\n${CONNECTIONS} connections, ${DURATION_S} s each, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "cpu"})\n\n`);
    process.stdout.write(`| endpoint | req/s | p50 ms | p99 ms | non-2xx |\n|---|---:|---:|---:|---:|\n`);
    for (const f of figures) process.stdout.write(`| ${f.name} | ${Math.round(f.rps)} | ${f.p50} | ${f.p99} | ${f.errors} |\n`);
  } finally {
    for (const stop of stops) await stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
