import canonicalize from "canonicalize";
import { concat, type Hex, keccak256, stringToHex } from "viem";

/** The `prev_hash` of entry 1. */
export const GENESIS_HASH: Hex = `0x${"0".repeat(64)}`;

/** What an entry's hash covers: every field but its id and the hashes themselves. */
export interface HashedEntry {
  seq: number;
  kind: string;
  subject_id: string;
  actor_id: string | null;
  parties: string[];
  data: Record<string, unknown>;
  /** ISO 8601 UTC with milliseconds and `Z` (`2026-11-23T10:00:00.000Z`). */
  created_at: string;
}

/** RFC 8785 (JCS) text of the hashed fields: the exact characters whose UTF-8 bytes are hashed. */
export function canonicalEntry(entry: HashedEntry): string {
  const { seq, kind, subject_id, actor_id, parties, data, created_at } = entry;
  const text = canonicalize({ seq, kind, subject_id, actor_id, parties, data, created_at });
  if (text === undefined) throw new Error("the ledger entry cannot be canonicalized");
  return text;
}

/** `entry_hash = keccak256(prev_hash (32 bytes) ‖ UTF-8 of canonicalEntry(entry))`, lower-case 0x-hex. */
export function entryHashOf(prevHash: Hex, entry: HashedEntry): Hex {
  if (!/^0x[0-9a-f]{64}$/.test(prevHash)) throw new TypeError(`prev_hash must be 32 bytes of lower-case 0x-hex: ${prevHash}`);
  return keccak256(concat([prevHash, stringToHex(canonicalEntry(entry))]));
}
