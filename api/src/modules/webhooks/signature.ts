/**
 * Webhook signatures, both schemes the service sends on every delivery:
 *
 * - `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(key, "<t>.<raw body>")>`, where the
 *   key is the whole secret string (`whsec_…`) as UTF-8 bytes;
 * - Standard Webhooks (https://www.standardwebhooks.com): `webhook-id`, `webhook-timestamp` and
 *   `webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<t>.<raw body>")>`, where the key is the
 *   base64-decoded part of the secret after `whsec_`.
 *
 * While a rotated secret is still valid, each header carries one signature per secret.
 *
 * Self-contained on purpose (Node's crypto only): receivers may copy this file as it is.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export const WEBHOOK_SECRET_PREFIX = "whsec_";

/** Header values as Node gives them (`req.headers`), a fetch Headers, or plain strings; names in any case. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** Largest accepted distance between the signature's timestamp and now (default 300 s). */
  toleranceSeconds?: number | undefined;
  /** The current time (a Date or milliseconds since the epoch); for tests. */
  now?: Date | number | undefined;
}

/**
 * Whether `payload` (the exact bytes received: parse the JSON only after this check) carries a
 * valid signature made with `secret` within the tolerance: the Standard Webhooks headers when
 * present (`webhook-id`, `webhook-timestamp`, `webhook-signature`), else `X-Service-Signature`.
 * Standard Webhooks' argument order (`new Webhook(secret).verify(payload, headers)`), the same as
 * the SDK's verifyWebhookSignature (clients/typescript/webhooks.ts, which answers a Promise).
 */
export function verifyWebhookSignature(payload: string | Uint8Array | ArrayBuffer, headers: WebhookHeaders, secret: string, options: VerifyOptions = {}): boolean {
  const body = toBuffer(payload);
  const nowMs = options.now === undefined ? Date.now() : typeof options.now === "number" ? options.now : options.now.getTime();
  const fresh = (t: number) => Math.abs(Math.floor(nowMs / 1000) - t) <= (options.toleranceSeconds ?? 300);
  const header = headerReader(headers);

  const standard = header("webhook-signature");
  if (standard !== undefined) {
    const id = header("webhook-id");
    const timestamp = parseTimestamp(header("webhook-timestamp"));
    if (!id || timestamp === null || !fresh(timestamp)) return false;
    const expected = standardSignature(secret, id, timestamp, body);
    return standard
      .split(" ")
      .map((entry) => entry.split(","))
      .some(([version, signature]) => version === "v1" && signature !== undefined && safeEqual(signature, expected));
  }
  const service = header("x-service-signature");
  return service !== undefined && verifyServiceSignature(body, service, secret, fresh);
}

/**
 * The signature headers of one delivery attempt, signed with every secret in `secrets` (newest
 * first). The service calls this; receivers need only verifyWebhookSignature.
 */
export function signWebhook(input: { id: string; timestamp: number; body: string | Uint8Array; secrets: readonly string[] }): {
  "X-Service-Signature": string;
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
} {
  const body = toBuffer(input.body);
  return {
    "X-Service-Signature": [`t=${input.timestamp}`, ...input.secrets.map((s) => `v1=${serviceSignature(s, input.timestamp, body)}`)].join(","),
    "webhook-id": input.id,
    "webhook-timestamp": String(input.timestamp),
    "webhook-signature": input.secrets.map((s) => `v1,${standardSignature(s, input.id, input.timestamp, body)}`).join(" "),
  };
}

function verifyServiceSignature(body: Buffer, header: string, secret: string, fresh: (t: number) => boolean): boolean {
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === "t") timestamp = parseTimestamp(value);
    else if (key === "v1") signatures.push(value);
  }
  if (timestamp === null || !fresh(timestamp)) return false;
  const expected = serviceSignature(secret, timestamp, body);
  return signatures.some((signature) => safeEqual(signature, expected));
}

function serviceSignature(secret: string, timestamp: number, body: Buffer): string {
  return createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.`).update(body).digest("hex");
}

function standardSignature(secret: string, id: string, timestamp: number, body: Buffer): string {
  const key = Buffer.from(secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret, "base64");
  return createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest("base64");
}

function parseTimestamp(value: string | undefined): number | null {
  return value !== undefined && /^\d{1,12}$/.test(value.trim()) ? Number(value.trim()) : null;
}

function headerReader(headers: WebhookHeaders): (name: string) => string | undefined {
  if (!headers || typeof headers !== "object") return () => undefined;
  if (headers instanceof Headers) return (name) => headers.get(name) ?? undefined;
  const lower = new Map(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), Array.isArray(value) ? value.join(", ") : value]));
  return (name) => lower.get(name);
}

function toBuffer(data: string | Uint8Array | ArrayBuffer): Buffer {
  if (typeof data === "string") return Buffer.from(data, "utf8");
  return data instanceof ArrayBuffer ? Buffer.from(data) : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

function safeEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a);
  const bb = Buffer.from(b);
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}
