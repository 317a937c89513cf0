import type { ApiRouter } from "../../http/route.ts";
import * as s from "./ledger.schemas.ts";
import type { LedgerService } from "./ledger.service.ts";

const tags = ["Marketplace"];

const READERS = "An entry is readable by its `parties` and by admins; anyone else gets 404 `not_found`, as for an id that does not exist.";

const AUDIT = [
  "How to check an entry without trusting the API (docs/auditors.md#the-marketplace-ledger):",
  "1. recompute `entry_hash = keccak256(prev_hash ‖ UTF-8 bytes of the RFC 8785 canonical JSON of {seq, kind, subject_id, actor_id, parties, data, created_at})` (prev_hash as its 32 bytes);",
  "2. fold `anchor.proof` into it: for each sibling, `node = keccak256(min(node, sibling) ‖ max(node, sibling))` (OpenZeppelin `MerkleProof`);",
  "3. compare the result with `anchorAt(anchor_index).merkleRoot` of the AuditAnchor contract at `anchor.contract_address` on chain `anchor.chain_id` (or the `LedgerAnchored` event of `anchor.tx_hash`). The script `tools/ledger-verify.ts` does all three.",
].join("\n");

export function registerLedgerRoutes(api: ApiRouter, ledger: LedgerService): void {
  api.route({
    method: "get",
    path: "/v1/marketplace/ledger/:entry_id",
    operationId: "getLedgerEntry",
    summary: "A ledger entry, with its on-chain anchor and Merkle proof",
    description: [
      "The marketplace's audit ledger records what happened to money and certificates (sales, refunds, disputes) as append-only, hash-chained entries: the database refuses to change or delete them, and their Merkle roots are anchored on the AuditAnchor contract every `LEDGER_ANCHOR_INTERVAL_MS` (30 s by default).",
      "`anchor` is null until the entry's range is anchored and the anchor confirmed; then it names the anchor and carries the entry's Merkle proof.",
      AUDIT,
      READERS,
      "A malformed id is 404 too.",
    ].join("\n\n"),
    tags,
    auth: { scope: "marketplace:read" },
    params: s.entryIdParams,
    errors: [404],
    response: s.entrySchema,
    handler: ({ auth, params }) => ledger.get(auth, params.entry_id),
  });

  api.route({
    method: "get",
    path: "/v1/marketplace/ledger",
    operationId: "listLedgerEntries",
    summary: "Your ledger entries",
    description: [
      "The entries naming you among their `parties` (an admin: every entry), oldest first (by `seq`); filters `subject_id` (e.g. a transaction id: its whole history) and `kind`.",
      "Each entry carries `anchor_index` (null until anchored); its own endpoint gives the Merkle proof.",
    ].join("\n\n"),
    tags,
    auth: { scope: "marketplace:read" },
    query: s.entryListQuery,
    response: s.entryListSchema,
    handler: ({ auth, query }) => {
      const { page, limit, ...filter } = query;
      return ledger.list(auth, filter, { page, limit });
    },
  });

  api.route({
    method: "get",
    path: "/v1/admin/ledger/verify",
    operationId: "verifyLedger",
    summary: "Verify the audit ledger",
    description: [
      "Recomputes the whole ledger in seq order: each entry's `entry_hash` from its content, each `prev_hash` link to the entry before, seq without gaps, and for each confirmed anchor the Merkle root and head of its entries, compared with the anchor recorded at confirmation and with the indexer's record of the chain (`LedgerAnchored`), when readable.",
      "Stops at the first problem: `ok: false` with `first_bad_seq` (for an anchor, its first entry) and `problem`. A row changed behind the database's back (its append-only triggers disabled by a superuser) shows up here.",
      "It reads every entry: minutes for millions of them.",
    ].join("\n\n"),
    tags: ["Admin"],
    auth: { scope: "admin:read", roles: ["admin"] },
    response: s.verificationSchema,
    handler: () => ledger.verify(),
  });
}
