/**
 * Verifying the API's webhook deliveries with Web Crypto (browsers, Node 20+, Deno, Bun, edge
 * workers). Each delivery carries two signatures of the exact body bytes
 * (api/src/modules/webhooks/signature.ts):
 *
 * - Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64
 *   HMAC-SHA256(base64-decoded secret after whsec_, "<id>.<timestamp>.<body>")>`;
 * - `X-Service-Signature: t=<timestamp>,v1=<hex HMAC-SHA256(the whole secret as UTF-8, "<t>.<body>")>`.
 *
 * After a secret rotation each header holds one signature per secret for a day; any one matching
 * is enough.
 */

const SECRET_PREFIX = "whsec_";

/** Header values as Node gives them (`req.headers`), a fetch Headers, or plain strings; names in any case. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyWebhookOptions {
  /** Largest accepted distance between the signature's timestamp and now (default 300 s). */
  toleranceSeconds?: number | undefined;
  /** The current time (a Date or milliseconds since the epoch); default now. */
  now?: Date | number | undefined;
}

/**
 * Whether `payload` (the raw bytes received: parse the JSON only after this check) is signed with
 * `secret` (`whsec_…`, shown when the subscription was made) within the tolerance. Uses the
 * Standard Webhooks headers when present, else `X-Service-Signature`.
 *
 * The arguments are in Standard Webhooks' order (`new Webhook(secret).verify(payload, headers)`),
 * and the same as the API's own verifier (api/src/modules/webhooks/signature.ts), which answers
 * synchronously with Node's crypto: this one answers a Promise (Web Crypto), so await it.
 */
export async function verifyWebhookSignature(payload: string | Uint8Array | ArrayBuffer, headers: WebhookHeaders, secret: string, options: VerifyWebhookOptions = {}): Promise<boolean> {
  // The SDK once took (secret, headers, body): that call compiles when the body is a string, so it throws rather than answer false.
  if (typeof payload === "string" && payload.startsWith(SECRET_PREFIX) && !secret.startsWith(SECRET_PREFIX)) {
    throw new TypeError("verifyWebhookSignature takes (payload, headers, secret): the secret came first");
  }
  const header = headerReader(headers);
  const nowSeconds = Math.floor((options.now === undefined ? Date.now() : typeof options.now === "number" ? options.now : options.now.getTime()) / 1000);
  const fresh = (t: number) => Math.abs(nowSeconds - t) <= (options.toleranceSeconds ?? 300);
  const bytes = typeof payload === "string" ? new TextEncoder().encode(payload) : new Uint8Array(payload);

  const standard = header("webhook-signature");
  if (standard !== undefined) {
    const id = header("webhook-id");
    const timestamp = parseTimestamp(header("webhook-timestamp"));
    const key = base64Bytes(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
    if (!id || timestamp === null || !fresh(timestamp) || !key) return false;
    const signatures = standard.split(" ").flatMap((entry) => {
      const [version, signature] = entry.split(",");
      return version === "v1" && signature !== undefined ? [base64Bytes(signature)] : [];
    });
    return anyVerifies(key, signatures, signed(`${id}.${timestamp}.`, bytes));
  }

  const service = header("x-service-signature");
  if (service === undefined) return false;
  let timestamp: number | null = null;
  const signatures: (Uint8Array<ArrayBuffer> | null)[] = [];
  for (const part of service.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === "t") timestamp = parseTimestamp(value);
    else if (name === "v1") signatures.push(hexBytes(value));
  }
  if (timestamp === null || !fresh(timestamp)) return false;
  return anyVerifies(new TextEncoder().encode(secret), signatures, signed(`${timestamp}.`, bytes));
}

/** Whether any signature is the HMAC-SHA256 of `data` under `key` (crypto.subtle.verify compares in constant time). */
async function anyVerifies(key: Uint8Array<ArrayBuffer>, signatures: (Uint8Array<ArrayBuffer> | null)[], data: Uint8Array<ArrayBuffer>): Promise<boolean> {
  const hmac = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  for (const signature of signatures) {
    if (signature && (await crypto.subtle.verify("HMAC", hmac, signature, data))) return true;
  }
  return false;
}

function signed(prefix: string, body: Uint8Array): Uint8Array<ArrayBuffer> {
  const head = new TextEncoder().encode(prefix);
  const data = new Uint8Array(head.length + body.length);
  data.set(head);
  data.set(body, head.length);
  return data;
}

function headerReader(headers: WebhookHeaders): (name: string) => string | undefined {
  if (!headers || typeof headers !== "object") return () => undefined;
  if (headers instanceof Headers) return (name) => headers.get(name) ?? undefined;
  const lower = new Map(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), Array.isArray(value) ? value.join(", ") : value]));
  return (name) => lower.get(name);
}

function parseTimestamp(value: string | undefined): number | null {
  return value !== undefined && /^\d{1,12}$/.test(value.trim()) ? Number(value.trim()) : null;
}

function base64Bytes(text: string): Uint8Array<ArrayBuffer> | null {
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

function hexBytes(text: string): Uint8Array<ArrayBuffer> | null {
  if (!/^(?:[0-9a-f]{2})+$/.test(text)) return null;
  return Uint8Array.from(text.match(/../g)!, (pair) => parseInt(pair, 16));
}
