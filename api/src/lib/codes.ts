import { randomBytes } from "node:crypto";

/** Crockford's base 32: digits and letters without I, L, O, U (read aloud and typed without confusion). */
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** `length` characters of Crockford base 32 from 5 × `length` random bits: unguessable codes people type. */
export function randomCode(length: number): string {
  let bits = 0n;
  for (const b of randomBytes(Math.ceil((length * 5) / 8))) bits = (bits << 8n) | BigInt(b);
  let out = "";
  for (let i = 0; i < length; i++) {
    out += CROCKFORD[Number(bits & 31n)];
    bits >>= 5n;
  }
  return out;
}
