import { randomBytes } from "node:crypto";
import { afterAll, beforeAll } from "vitest";
import { type Config, loadConfig } from "../../api/src/config.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { type RunningPlatform, startPlatform } from "../../api/src/platform.ts";
import { dropDatabase, ensureDatabase, withDatabase } from "../../tools/stack/postgres.ts";
import { custodyMnemonic } from "./custody.ts";
import { testEnvironment } from "./environment.ts";

/** Every API test server shares this admin key (the first server to start bootstraps the admin). */
export const ADMIN_API_KEY = "sk_test_bootstrap_admin_key_0123456789";

export interface TestApi {
  url: string;
  config: Config;
  /** Both halves (HTTP and worker) in this process. */
  server: RunningPlatform;
  db: ReturnType<typeof createDb>;
  request(method: string, path: string, opts?: RequestOptions): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  /** Sent as-is (for malformed JSON tests). */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** The settings of a test server (also for one started in a child process). */
export function testApiSettings(overrides: Record<string, string> = {}): Record<string, string> {
  const env = testEnvironment();
  const settings: Record<string, string> = {
    NODE_ENV: "test",
    PORT: "0",
    // TEST_LOG_LEVEL=error (or warn, info) shows the test servers' logs, to read what a failing test met.
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    DATABASE_URL: env.databaseUrl,
    DATABASE_POOL_SIZE: "5",
    CHAIN_RPC_URL: env.rpcUrl,
    CHAIN_ID: String(env.chainId),
    ART_CERTIFICATE_ADDRESS: env.artCertificateAddress,
    ART_SHARES_ADDRESS: env.artSharesAddress,
    ART_MARKET_ADDRESS: env.artMarketAddress,
    AUDIT_ANCHOR_ADDRESS: env.auditAnchorAddress,
    ART_EXCHANGE_ADDRESS: env.artExchangeAddress,
    PAYMENT_TOKEN_ADDRESS: env.paymentTokenAddress,
    // Anchors must be contiguous on the run's shared AuditAnchor, and every test database's ledger starts
    // at entry 1: only tests with an AuditAnchor of their own anchor (test/api/ledger.test.ts).
    LEDGER_ANCHOR_INTERVAL_MS: "0",
    CUSTODY_MNEMONIC: custodyMnemonic(),
    BOOTSTRAP_ADMIN_API_KEY: ADMIN_API_KEY,
    SIWE_DOMAINS: "api.test.local",
    JOBS_CONCURRENCY: "2",
    // Each idle job worker polls the shared database: few of them per test server.
    WEBHOOK_CONCURRENCY: "2",
    CERTIFICATION_CONCURRENCY: "2",
    IMAGE_FETCH_CONCURRENCY: "2",
    // Every test server counts on its own, also in a shared Redis; only the rate-limit test sets low limits.
    RATE_LIMIT_KEY_PREFIX: `rl-test-${randomBytes(4).toString("hex")}`,
    RATE_LIMIT_ANONYMOUS_PER_MINUTE: "100000",
    RATE_LIMIT_TOKEN_PER_MINUTE: "100000",
    ...(env.redisUrl ? { REDIS_URL: env.redisUrl } : {}),
    ...overrides,
  };
  return { ...settings, DATABASE_URL: withGenericPlans(settings.DATABASE_URL!) };
}

/**
 * The test servers' connections plan every named statement generically (plan_cache_mode), as
 * Postgres may from a statement's sixth execution on (api/src/db/prepared.ts): a statement that
 * cannot run without its parameters' values (an ON CONFLICT whose index predicate is a parameter)
 * fails in every test that sends it twice, not only on the connection and Postgres version where
 * the planner happens to switch.
 */
function withGenericPlans(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  if (!url.searchParams.has("options")) url.searchParams.set("options", "-c plan_cache_mode=force_generic_plan");
  return url.toString();
}

export async function startTestApi(overrides: Record<string, string> = {}): Promise<TestApi> {
  const config = loadConfig(testApiSettings(overrides));
  const server = await startPlatform(config, { http: true, worker: true });
  const db = createDb(config.database.url, 3);
  const url = server.url;
  return {
    url,
    config,
    server,
    db,
    request: (method, path, opts = {}) => send(url, method, path, opts),
    async close() {
      await server.close();
      await db.destroy();
    },
  };
}

/** The object a test file's `use…` helper returns: it stands for what beforeAll started, inside tests. */
export function standIn<T extends object>(current: () => T | undefined, what: string): T {
  return new Proxy({} as T, {
    get(_target, property) {
      const value = current();
      if (!value) throw new Error(`${what} runs only inside tests (after beforeAll)`);
      return Reflect.get(value, property);
    },
  });
}

/**
 * Starts an API server for the calling test file (beforeAll) and stops it after (afterAll); the
 * returned object stands for that server inside tests.
 */
export function useTestApi(overrides: Record<string, string> = {}): TestApi {
  let current: TestApi | undefined;
  beforeAll(async () => {
    current = await startTestApi(overrides);
  });
  afterAll(async () => {
    await current?.close();
  });
  return standIn(() => current, "The test API");
}

/**
 * A database of its own, migrated by the first server that starts on it. A file needs one
 * when it counts a table's rows, or when its jobs must run on a server with its settings: every
 * test server runs the job queue of its database (a webhook delivery must be sent by a server with
 * the retry schedule or URL policy under test, not by another test file's).
 */
export async function createIsolatedDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const { serverUrl } = testEnvironment();
  const name = `isolated_${randomBytes(6).toString("hex")}`;
  await ensureDatabase(serverUrl, name);
  return { url: withDatabase(serverUrl, name), drop: () => dropDatabase(serverUrl, name) };
}

/** useTestApi on an isolated database. */
export function useIsolatedTestApi(overrides: Record<string, string> = {}): TestApi {
  let current: TestApi | undefined;
  let database: Awaited<ReturnType<typeof createIsolatedDatabase>> | undefined;
  beforeAll(async () => {
    database = await createIsolatedDatabase();
    current = await startTestApi({ DATABASE_URL: database.url, ...overrides });
  });
  afterAll(async () => {
    await current?.close();
    await database?.drop();
  });
  return standIn(() => current, "The test API");
}

export async function send(baseUrl: string, method: string, path: string, opts: RequestOptions = {}): Promise<TestResponse> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | Buffer | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(new URL(path, baseUrl), { method, headers, body });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

export function uniqueName(prefix = "user"): string {
  return `${prefix}_${randomBytes(5).toString("hex")}`;
}

/** An admin token with every scope. */
export async function adminToken(api: TestApi): Promise<string> {
  const res = await api.request("POST", "/v1/auth/token", { body: { api_key: ADMIN_API_KEY, scope: ["admin"] } });
  if (res.status !== 201) throw new Error(`admin token exchange failed: ${res.status} ${res.text}`);
  return res.body.token;
}

export interface TestUser {
  id: string;
  apiKey: string;
  username: string;
  email: string;
  token: string;
}

/** A fresh user created through the admin API, with a token of `scope`. */
export async function createUser(
  api: TestApi,
  opts: { role?: "collector" | "artist" | "admin"; scope?: string[] } = {},
): Promise<TestUser> {
  const admin = await adminToken(api);
  const username = uniqueName();
  const email = `${username}@example.test`;
  const created = await api.request("POST", "/v1/admin/users", {
    token: admin,
    body: { username, email, role: opts.role ?? "collector" },
  });
  if (created.status !== 201) throw new Error(`user creation failed: ${created.status} ${created.text}`);
  const token = await api.request("POST", "/v1/auth/token", {
    body: { api_key: created.body.api_key.secret, scope: opts.scope ?? ["write"] },
  });
  if (token.status !== 201) throw new Error(`token exchange failed: ${token.status} ${token.text}`);
  return { id: created.body.id, apiKey: created.body.api_key.secret, username, email, token: token.body.token };
}

export function expectProblem(res: TestResponse, status: number, code: string): void {
  const problem = res.body as { status?: number; code?: string; request_id?: string; type?: string; title?: string; detail?: string };
  const ok =
    res.status === status &&
    res.headers.get("content-type")?.startsWith("application/problem+json") === true &&
    problem?.code === code &&
    problem.status === status &&
    typeof problem.request_id === "string" &&
    problem.type === `/problems/${code}` &&
    typeof problem.title === "string" &&
    typeof problem.detail === "string";
  if (!ok) throw new Error(`expected problem ${status} ${code}, got ${res.status} ${res.headers.get("content-type")} ${res.text}`);
}
