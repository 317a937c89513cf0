/**
 * Webhook tests' pieces: a receiver on loopback that records what it gets and answers by script,
 * and the webhook tests' API with the reads and waits they make on it.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect } from "vitest";
import { Webhook } from "standardwebhooks";
import { recordEvent } from "../../api/src/jobs/outbox.ts";
import { verifyWebhookSignature } from "../../api/src/modules/webhooks/signature.ts";
import { type TestApi, type TestUser, useIsolatedTestApi } from "./api.ts";
import { Recording, waitFor } from "./wait.ts";

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

// Test scale: retries after about 1 s each (three of them), attempts time out after 2 s.
export const RETRY_SCHEDULE_SECONDS = [1, 1, 1];

/** No test emits this event for the webhook tests' subscriptions' owners: they receive only their own pings. */
export const QUIET = ["artwork.certification_failed"];

export async function subscribe(a: TestApi, user: TestUser, body: Record<string, unknown>) {
  const res = await a.request("POST", "/v1/webhooks", { token: user.token, body });
  if (res.status !== 201) throw new Error(`subscription failed: ${res.status} ${res.text}`);
  return res.body as { id: string; secret: string; url: string; events: string[]; status: string; all_users: boolean };
}

/**
 * The stored next_retry_at is `delay` after the moment the sender computed it, a moment between the
 * attempt's start (last_attempt_at) and the recording of its outcome (updated_at): so a delay within
 * [minMs, maxMs] puts next_retry_at within [last_attempt_at + minMs, updated_at + maxMs] (the API
 * and Postgres read the same host clock; 1 ms for the sender's whole milliseconds).
 */
/** `req` carries valid signatures by `secret` in both schemes, checked with the platform's helper and with `standardwebhooks`. */
export function expectSignedBy(req: ReceivedRequest, secret: string) {
  expect(verifyWebhookSignature(req.body, { "x-service-signature": req.headers["x-service-signature"] }, secret)).toBe(true);
  expect(verifyWebhookSignature(req.body, req.headers, secret)).toBe(true);
  expect(() => new Webhook(secret).verify(req.body, req.headers as Record<string, string>)).not.toThrow();
}

export function expectRetryAfter(row: { next_retry_at: Date | null; last_attempt_at: Date | null; updated_at: Date }, minMs: number, maxMs: number) {
  const next = row.next_retry_at!.getTime();
  expect(next - row.last_attempt_at!.getTime()).toBeGreaterThanOrEqual(Math.floor(minMs) - 1);
  expect(next - row.updated_at.getTime()).toBeLessThanOrEqual(Math.ceil(maxMs));
}

/**
 * The webhook tests' API (useIsolatedTestApi at the test scale of the retry schedule) and receiver
 * for the calling file, with the reads and waits the tests make on them.
 */
export function useWebhooksApi() {
  // The receiver is on loopback: keep its answers, as a developer alone on a machine may (webhooks-ssrf.test.ts tests the default).
  const api = useIsolatedTestApi({
    WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE_SECONDS.join(","),
    WEBHOOK_TIMEOUT_SECONDS: "2",
    WEBHOOK_CONCURRENCY: "4",
    WEBHOOK_LOOPBACK_RESPONSE_BODIES: "true",
  });
  const receiver = useReceiver();

  async function delivery(subscriptionId: string, deliveryId: string, user: TestUser) {
    const res = await api.request("GET", `/v1/webhooks/${subscriptionId}/deliveries/${deliveryId}`, { token: user.token });
    expect(res.status).toBe(200);
    return res.body;
  }

  function waitForDelivery(subscriptionId: string, deliveryId: string, user: TestUser, check: (d: any) => boolean, timeoutMs = 15_000) {
    return waitFor(async () => {
      const d = await delivery(subscriptionId, deliveryId, user);
      return check(d) ? d : null;
    }, { timeoutMs, what: `delivery ${deliveryId}` });
  }

  /** The delivery's row once failed attempt number `attempts` has scheduled the next one. */
  function scheduledRetry(deliveryId: string, attempts: number, timeoutMs = 15_000) {
    return waitFor(
      () =>
        api.db
          .selectFrom("webhook_deliveries")
          .selectAll()
          .where("id", "=", deliveryId)
          .where("attempts", "=", attempts)
          .where("next_retry_at", "is not", null)
          .executeTakeFirst(),
      { timeoutMs, what: `the retry after attempt ${attempts} of ${deliveryId}` },
    );
  }

  /** Records an event that concerns `audience` (user ids), as a producer does. */
  async function emit(type: string, payload: Record<string, unknown>, audience: string[]): Promise<string> {
    return api.db.transaction().execute((trx) => recordEvent(trx, type, payload, audience));
  }

  /** Waits until the event's dispatch (the fan-out) has run after `since`. */
  async function dispatched(eventId: string, since = new Date(0)): Promise<void> {
    await waitFor(async () => {
      const row = await api.db.selectFrom("outbox_events").select("dispatched_at").where("id", "=", eventId).executeTakeFirstOrThrow();
      return row.dispatched_at !== null && row.dispatched_at > since;
    }, { what: `dispatch of ${eventId}` });
  }

  const countSubscriptions = async (userId: string) =>
    Number((await api.db.selectFrom("webhook_subscriptions").select((eb) => eb.fn.countAll<string>().as("n")).where("user_id", "=", userId).executeTakeFirstOrThrow()).n);

  return { api, receiver, delivery, waitForDelivery, scheduledRetry, emit, dispatched, countSubscriptions };
}
