import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { idOf, idParam, plainString, timestamp } from "../../lib/schema.ts";
import { z } from "../../openapi/zod.ts";

const hash32 = (description: string) => z.string().openapi({ pattern: "^0x[0-9a-f]{64}$", example: `0x${"ab".repeat(32)}`, description });

export const entryIdParams = z.object({ entry_id: idParam("ledgerEntry", "entry_id") });

const entryFields = {
  entry_id: idOf("ledgerEntry"),
  seq: z.number().int().openapi({ description: "Position in the ledger: 1, 2, 3… without gaps" }),
  kind: z.string().openapi({ example: "sale.completed", description: "What happened" }),
  subject_id: z.string().openapi({ example: "txn_01JD3Y5V0Q3G7W7J6T4N4C2X1M", description: "The resource it happened to" }),
  actor_id: z.string().nullable().openapi({ description: "The user who did it; null for the platform itself" }),
  parties: z.array(z.string()).openapi({ description: "The users who may read the entry (sorted)" }),
  data: z.record(z.string(), z.unknown()).openapi({ description: "The facts recorded (JSON object)" }),
  created_at: timestamp,
  prev_hash: hash32("The entry_hash of entry seq-1 (32 zero bytes for entry 1)"),
  entry_hash: hash32("keccak256(prev_hash bytes ‖ UTF-8 of the RFC 8785 JSON of {seq, kind, subject_id, actor_id, parties, data, created_at})"),
};

export const anchorSchema = z
  .object({
    anchor_index: z.number().int().openapi({ description: "The AuditAnchor contract's index of the anchor (from 1): `anchorAt(anchor_index)`" }),
    first_seq: z.number().int(),
    last_seq: z.number().int(),
    merkle_root: hash32("The root anchored on-chain for entries first_seq..last_seq"),
    head_hash: hash32("The entry_hash of entry last_seq"),
    tx_hash: z.string().nullable().openapi({ description: "The transaction that anchored it" }),
    block_number: z.number().int().nullable(),
    chain_id: z.number().int(),
    contract_address: z.string().openapi({ description: "The AuditAnchor contract (lower-case)" }),
    proof: z.array(hash32("A sibling")).openapi({
      description: "Merkle proof of entry_hash under merkle_root, OpenZeppelin `MerkleProof.verify` convention (fold: keccak256 of the sorted pair)",
    }),
  })
  .openapi("LedgerAnchor");

export const entrySchema = z
  .object({ ...entryFields, anchor: anchorSchema.nullable().openapi({ description: "null until the entry's range is anchored and confirmed on-chain" }) })
  .openapi("LedgerEntry");

export const entrySummarySchema = z
  .object({ ...entryFields, anchor_index: z.number().int().nullable().openapi({ description: "The anchor holding the entry, null until anchored; the entry's own endpoint gives the proof" }) })
  .openapi("LedgerEntrySummary");

export const entryListQuery = z.object({
  subject_id: plainString({ min: 1, max: 128 }).optional().openapi({ description: "Only entries about this resource" }),
  kind: plainString({ min: 1, max: 64 }).optional().openapi({ description: "Only entries of this kind" }),
  ...paginationQuery(),
});

export const entryListSchema = z.object({ data: z.array(entrySummarySchema), pagination: paginationSchema }).openapi("LedgerEntryList");

export const verificationSchema = z
  .object({
    ok: z.boolean(),
    entries_checked: z.number().int().openapi({ description: "Entries whose hash and link were checked (up to the first problem)" }),
    anchors_checked: z.number().int().openapi({ description: "Confirmed anchors whose root and head were checked" }),
    first_bad_seq: z.number().int().nullable().openapi({ description: "The first entry found wrong (for an anchor: its first entry); null when ok" }),
    problem: z.string().nullable().openapi({ description: "What is wrong there; null when ok" }),
  })
  .openapi("LedgerVerification");
