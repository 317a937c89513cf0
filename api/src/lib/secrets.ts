import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** A high-entropy secret with a readable prefix (`sk_…`, `at_…`); only its hash is stored. */
export function newSecret(prefix: string, bytes = 32): string {
  return `${prefix}_${randomBytes(bytes).toString("base64url")}`;
}

/** SHA-256 is right for random 256-bit secrets: no dictionary to slow down, lookups by index. */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

export function sha256Hex(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

export function safeEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a);
  const bb = Buffer.from(b);
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}
