import type { ColumnType, Selectable } from "kysely";
import type { Timestamp } from "../../db/columns.ts";

/**
 * The marketplace's audit ledger: append-only (the database refuses UPDATE, DELETE and TRUNCATE
 * with triggers) and hash-chained. `entry_hash = keccak256(prev_hash ‖ UTF-8 of the RFC 8785 JSON
 * of {seq, kind, subject_id, actor_id, parties, data, created_at})` (entry-hash.ts); `seq` runs
 * 1, 2, 3… without gaps; the first entry's `prev_hash` is 32 zero bytes.
 */
export interface AuditLedgerTable {
  id: string;
  seq: ColumnType<bigint, bigint, never>;
  kind: string;
  subject_id: string;
  actor_id: string | null;
  /** The users who may read the entry (besides admins). */
  parties: string[];
  /** jsonb: written as JSON text. */
  data: ColumnType<Record<string, unknown>, string, never>;
  /** Millisecond precision: the hashed text is its ISO form. */
  created_at: ColumnType<Date, Date, never>;
  /** 0x + 64 lower-case hex. */
  prev_hash: string;
  entry_hash: string;
}

export type AnchorStatus = "pending" | "confirmed" | "failed";

/**
 * Ranges of entries anchored (or being anchored) on the AuditAnchor contract: one chain operation
 * `ledger_anchor:<first_seq>-<last_seq>` each, which holds its transaction. Ranges are contiguous:
 * each starts after the last pending or confirmed one (a failed range is requested again, possibly longer).
 */
export interface LedgerAnchorsTable {
  first_seq: ColumnType<bigint, bigint, never>;
  last_seq: ColumnType<bigint, bigint, never>;
  /** The Merkle root of the range's entry hashes (merkle.ts); the chain's, once confirmed. */
  merkle_root: string;
  /** The entry hash of `last_seq`: the chain's head at that entry. */
  head_hash: string;
  chain_id: number;
  /** The AuditAnchor contract it is sent to (lower-case). */
  contract_address: string;
  status: AnchorStatus;
  block_number: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  /** The contract's index of the anchor (from 1), once confirmed. */
  anchor_index: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface LedgerTables {
  audit_ledger: AuditLedgerTable;
  ledger_anchors: LedgerAnchorsTable;
}

export type LedgerEntryRow = Selectable<AuditLedgerTable>;
export type LedgerAnchorRow = Selectable<LedgerAnchorsTable>;
