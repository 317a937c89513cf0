/** Requests/s and tail latency of hot endpoints next to a bare Express handler returning the same JSON. */
import os from "node:os";
import autocannon from "autocannon";
import express from "express";
import { BENCH_ADMIN_KEY, type BenchContext, call, table } from "./context.ts";

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);

/** One row of a table: requests/s, p50 and p99 latency (ms) and failures of `opts` under load. */
export async function measure(name: string, opts: autocannon.Options): Promise<(string | number)[]> {
  const r = await autocannon({ duration: DURATION_S, connections: CONNECTIONS, ...opts });
  return [name, Math.round(r.requests.average), r.latency.p50, r.latency.p99, r.non2xx + r.errors + r.timeouts];
}

export async function benchHttp(ctx: BenchContext): Promise<string> {
  const api = await ctx.startApi();
  const admin = await call(api.url, "POST", "/v1/auth/token", { api_key: BENCH_ADMIN_KEY, scope: ["admin"] });
  const user = await call(api.url, "POST", "/v1/admin/users", { username: "bench_http", email: "bench_http@example.test", role: "artist" }, admin.token);
  const profile = await call(api.url, "GET", `/v1/users/${user.id}`);
  const tokenBody = JSON.stringify({ api_key: user.api_key.secret, scope: ["read"] });
  const tokenSample = await call(api.url, "POST", "/v1/auth/token", JSON.parse(tokenBody));

  const bareUrl = await bareExpress(ctx, (bare) => {
    bare.get("/v1/users/:id", (_req, res) => {
      res.json(profile);
    });
    bare.post("/v1/auth/token", (_req, res) => {
      res.status(201).json(tokenSample);
    });
  });

  const post = { method: "POST" as const, headers: { "content-type": "application/json" }, body: tokenBody };
  const rows = [
    await measure("GET /v1/users/:id (API)", { url: `${api.url}/v1/users/${user.id}` }),
    await measure("GET /v1/users/:id (bare Express)", { url: `${bareUrl}/v1/users/${user.id}` }),
    await measure("POST /v1/auth/token (API)", { url: `${api.url}/v1/auth/token`, ...post }),
    await measure("POST /v1/auth/token (bare Express)", { url: `${bareUrl}/v1/auth/token`, ...post }),
  ];
  return [
    `HTTP: ${CONNECTIONS} connections, ${DURATION_S} s per endpoint, ${os.cpus().length} cores`,
    "",
    table(["endpoint", "req/s", "p50 ms", "p99 ms", "non-2xx"], rows),
  ].join("\n");
}

/** The baseline: the same JSON from bare Express handlers (declared by `routes`), no database, no middleware; its URL. */
export async function bareExpress(ctx: BenchContext, routes: (app: express.Express) => void): Promise<string> {
  const bare = express();
  bare.use(express.json());
  routes(bare);
  const server = bare.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  ctx.onDispose(() => new Promise((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}
