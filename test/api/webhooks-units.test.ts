import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it, vi } from "vitest";
import { signWebhook, verifyWebhookSignature } from "../../api/src/modules/webhooks/signature.ts";
import { retryDelayMs } from "../../api/src/modules/webhooks/webhooks.delivery.ts";

const secret = () => `whsec_${randomBytes(32).toString("base64")}`;
const body = JSON.stringify({ id: "whe_01JD3Y5V0Q3G7W7J6T4N4C2X1M", event: "offer.accepted", created_at: "2026-11-22T10:00:00.000Z", amount_usd: 12.5 });
const id = "whd_01JD3Y5V0Q3G7W7J6T4N4C2X1M";

describe("verifyWebhookSignature", () => {
  it("accepts both schemes of a signed body, from a headers object or a fetch Headers", () => {
    const s = secret();
    const t = Math.floor(Date.now() / 1000);
    const headers = signWebhook({ id, timestamp: t, body, secrets: [s] });
    expect(headers["X-Service-Signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(verifyWebhookSignature(body, { "X-Service-Signature": headers["X-Service-Signature"] }, s)).toBe(true);
    expect(verifyWebhookSignature(Buffer.from(body), headers, s)).toBe(true);
    expect(verifyWebhookSignature(new TextEncoder().encode(body).buffer, new Headers(headers), s)).toBe(true);
    // only the Standard Webhooks headers, lower-case as Node gives them
    const standard = { "webhook-id": id, "webhook-timestamp": String(t), "webhook-signature": headers["webhook-signature"] };
    expect(verifyWebhookSignature(body, standard, s)).toBe(true);
    expect(verifyWebhookSignature(body, { "x-service-signature": headers["X-Service-Signature"] }, s)).toBe(true);
  });

  it("refuses a changed body, another secret, a stale or future timestamp, and malformed headers", () => {
    const s = secret();
    const t = Math.floor(Date.now() / 1000);
    const headers = signWebhook({ id, timestamp: t, body, secrets: [s] });
    const standard = { "webhook-id": id, "webhook-timestamp": String(t), "webhook-signature": headers["webhook-signature"] };
    for (const header of [{ "X-Service-Signature": headers["X-Service-Signature"] }, standard]) {
      expect(verifyWebhookSignature(body.replace("12.5", "1250"), header, s)).toBe(false);
      expect(verifyWebhookSignature(body, header, secret())).toBe(false);
      expect(verifyWebhookSignature(body, header, s, { now: (t + 301) * 1000 })).toBe(false);
      expect(verifyWebhookSignature(body, header, s, { now: new Date((t - 301) * 1000) })).toBe(false);
      expect(verifyWebhookSignature(body, header, s, { now: (t + 299) * 1000 })).toBe(true);
      expect(verifyWebhookSignature(body, header, s, { now: (t + 10) * 1000, toleranceSeconds: 5 })).toBe(false);
    }
    // the id is signed in the Standard Webhooks scheme
    expect(verifyWebhookSignature(body, { ...standard, "webhook-id": "whd_other" }, s)).toBe(false);
    for (const bad of ["", "t=abc,v1=00", `v1=${"0".repeat(64)}`, `t=${t}`, "garbage", `t=${t},v1=`]) {
      expect(verifyWebhookSignature(body, { "x-service-signature": bad }, s)).toBe(false);
    }
    expect(verifyWebhookSignature(body, {}, s)).toBe(false);
  });

  it("accepts any of several signatures (secret rotation)", () => {
    const [next, previous] = [secret(), secret()];
    const t = Math.floor(Date.now() / 1000);
    const headers = signWebhook({ id, timestamp: t, body, secrets: [next, previous] });
    expect(headers["X-Service-Signature"].match(/v1=/g)).toHaveLength(2);
    expect(headers["webhook-signature"].split(" ")).toHaveLength(2);
    for (const s of [next, previous]) {
      expect(verifyWebhookSignature(body, { "X-Service-Signature": headers["X-Service-Signature"] }, s)).toBe(true);
      expect(verifyWebhookSignature(body, headers, s)).toBe(true);
      expect(() => new Webhook(s).verify(body, headers)).not.toThrow();
    }
    expect(verifyWebhookSignature(body, headers, secret())).toBe(false);
  });

  it("agrees with the standardwebhooks package both ways", () => {
    const s = secret();
    const t = Math.floor(Date.now() / 1000);
    const ours = signWebhook({ id, timestamp: t, body, secrets: [s] });
    expect(new Webhook(s).verify(body, ours)).toEqual(JSON.parse(body));
    const theirs = new Webhook(s).sign(id, new Date(t * 1000), body);
    expect(theirs).toBe(ours["webhook-signature"]);
    expect(verifyWebhookSignature(body, { "webhook-id": id, "webhook-timestamp": String(t), "webhook-signature": theirs }, s)).toBe(true);
  });
});

describe("retryDelayMs", () => {
  const schedule = [5, 30, 120, 600, 3600, 21600, 86400, 86400];
  const response = (status: number, retryAfter?: string) => ({ status, headers: retryAfter ? { "retry-after": retryAfter } : {} });

  it("follows the schedule with ±10 % jitter, then gives up", () => {
    schedule.forEach((seconds, i) => {
      expect(retryDelayMs(i + 1, schedule, response(500), () => 0)).toBe(seconds * 900);
      expect(retryDelayMs(i + 1, schedule, null, () => 0.5)).toBe(seconds * 1000);
      expect(retryDelayMs(i + 1, schedule, response(502), () => 0.999999)! / (seconds * 1100)).toBeCloseTo(1, 5);
    });
    expect(retryDelayMs(schedule.length + 1, schedule, response(500))).toBeNull();
    expect(retryDelayMs(schedule.length + 1, schedule, response(503, "1"))).toBeNull();
  });

  it("takes Retry-After (seconds or a date) on 429 and 503 only, between 1 s and 24 h", () => {
    expect(retryDelayMs(1, schedule, response(503, "120"))).toBe(120_000);
    expect(retryDelayMs(1, schedule, response(429, " 7 "))).toBe(7_000);
    expect(retryDelayMs(1, schedule, response(429, "0"))).toBe(1_000);
    expect(retryDelayMs(1, schedule, response(503, String(30 * 24 * 3600)))).toBe(24 * 3600_000);
    // A date has whole seconds: half a second past one, a date a minute ahead is 59.5 s away.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.parse("2030-01-01T00:00:00.500Z") });
    try {
      expect(retryDelayMs(1, schedule, response(429, "Tue, 01 Jan 2030 00:01:00 GMT"))).toBe(59_500);
      expect(retryDelayMs(1, schedule, response(503, "Tue, 01 Jan 2030 00:00:00 GMT"))).toBe(1_000);
    } finally {
      vi.useRealTimers();
    }
    expect(retryDelayMs(1, schedule, response(500, "120"), () => 0.5)).toBe(5_000);
    expect(retryDelayMs(1, schedule, response(503, "soon"), () => 0.5)).toBe(5_000);
  });
});
