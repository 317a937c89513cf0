import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll } from "vitest";
import { dropDatabase, ensureDatabase, withDatabase } from "../../tools/stack/postgres.ts";
import { Recording } from "./wait.ts";
import { testEnvironment } from "./environment.ts";
import { startTestApi, type TestApi } from "./api.ts";

/**
 * A database of its own, migrated by the first server that starts on it. Webhook tests need one:
 * every test server runs the job queue of its database, and a delivery must be sent by a server
 * with the settings under test (retry schedule, URL policy), not by another test file's.
 */
export async function createIsolatedDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const { serverUrl } = testEnvironment();
  const name = `webhooks_${randomBytes(6).toString("hex")}`;
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
  return new Proxy({} as TestApi, {
    get(_target, property) {
      if (!current) throw new Error("The test API runs only inside tests (after beforeAll)");
      return Reflect.get(current, property);
    },
  });
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The raw body, exactly as received (signatures cover these bytes). */
  body: string;
  at: number;
}

export type Reply = { status: number; headers?: Record<string, string>; body?: string } | "hang";
/** The answer to request number `n` on a path (from 1); a promise holds the request until it settles. */
export type Script = (n: number, req: ReceivedRequest) => Reply | Promise<Reply>;

/**
 * A webhook receiver on loopback: records every request and answers as each path's script says
 * (by the number of the request on that path, from 1); 200 by default.
 */
export class Receiver {
  private server!: http.Server;
  private readonly received = new Recording<ReceivedRequest>();
  private readonly scripts = new Map<string, Script>();
  private readonly hanging = new Set<http.ServerResponse>();
  base = "";

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const path = new URL(req.url ?? "/", "http://x").pathname;
        const record: ReceivedRequest = { method: req.method ?? "", path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now() };
        this.received.push(record);
        const n = this.received.items.filter((r) => r.path === path).length;
        const reply = (await this.scripts.get(path)?.(n, record)) ?? { status: 200, body: "ok" };
        if (reply === "hang" || res.destroyed) {
          this.hanging.add(res);
          res.on("close", () => this.hanging.delete(res));
          return;
        }
        res.writeHead(reply.status, reply.headers).end(reply.body ?? "");
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** A fresh path on this receiver, answered by `script`. */
  endpoint(script?: Script): string {
    const path = `/hook/${randomBytes(6).toString("hex")}`;
    if (script) this.scripts.set(path, script);
    return `${this.base}${path}`;
  }

  requests(url: string): ReceivedRequest[] {
    const path = new URL(url).pathname;
    return this.received.items.filter((r) => r.path === path);
  }

  /**
   * Resolves with the requests `url` received once there are `count` of them, or once they pass
   * `count` as a test (checked as each request arrives).
   */
  async waitForRequests(url: string, count: number | ((requests: ReceivedRequest[]) => boolean), timeoutMs = 15_000, what = `${count} request(s) at ${url}`): Promise<ReceivedRequest[]> {
    const test = typeof count === "number" ? (requests: ReceivedRequest[]) => requests.length >= count : count;
    await this.received.until(() => test(this.requests(url)), what, timeoutMs);
    return this.requests(url);
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export function useReceiver(): Receiver {
  const receiver = new Receiver();
  beforeAll(() => receiver.start());
  afterAll(() => receiver.stop());
  return receiver;
}
