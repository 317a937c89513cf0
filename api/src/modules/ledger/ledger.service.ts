import type { Kysely, Transaction } from "kysely";
import type { Hex } from "viem";
import type { Database, Db } from "../../db/database.ts";
import { ApiError } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { Role } from "../../lib/actor.ts";
import { entryHashOf, GENESIS_HASH, type HashedEntry } from "./entry-hash.ts";
import * as merkle from "./merkle.ts";
import * as repo from "./ledger.repository.ts";
import type { LedgerAnchorRow, LedgerEntryRow } from "./ledger.tables.ts";

/** What a module appends: who did what to which subject, and who may read it. */
export interface LedgerAppend {
  /** What happened, dotted (`sale.completed`, `dispute.opened`). */
  kind: string;
  /** The resource it happened to (`txn_…`, `dsp_…`). */
  subjectId: string;
  /** The user who did it; null for the platform itself (a job, a sweep). */
  actorId: string | null;
  /** The users who may read the entry (admins always may); stored sorted and without repeats. */
  parties: string[];
  /** The facts, as JSON: stored as jsonb and hashed in its RFC 8785 form. */
  data: Record<string, unknown>;
}

export interface LedgerReader {
  userId: string;
  role: Role;
}

/** The chain's record of an anchor, as the indexer shows it (verification compares the table with it). */
export interface IndexedAnchor {
  anchorIndex: bigint;
  firstSeq: bigint;
  lastSeq: bigint;
  merkleRoot: string;
  headHash: string;
}

export interface LedgerVerification {
  ok: boolean;
  entries_checked: number;
  anchors_checked: number;
  first_bad_seq: number | null;
  problem: string | null;
}

/** Entries read per page by the verifier. */
const VERIFY_PAGE = 2_000;

/**
 * The marketplace's audit ledger: an append-only, hash-chained record of what happened to money and
 * certificates (sales, refunds, disputes), which other modules write in their own transactions
 * (`append`) and whose ranges LedgerAnchoring anchors on-chain. Readers are the entries' parties and
 * admins; anyone else gets 404.
 */
export class LedgerService {
  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      /** The indexer's anchors by index, null when its views cannot be read (verification then trusts the table). */
      indexedAnchors: () => Promise<Map<bigint, IndexedAnchor> | null>;
      /** The transaction that anchored a range (its chain operation's: LedgerAnchoring.transactionOfRange). */
      anchorTransaction: (db: Db, firstSeq: bigint, lastSeq: bigint) => Promise<string | null>;
    },
  ) {}

  /**
   * Appends one entry in the caller's transaction (one of its own when given the pool): takes the
   * ledger's advisory lock, reads the head, inserts entry head+1 chained to it. The lock is held to
   * the commit, so appends are serialized across processes and `seq` has no gaps (a rolled-back
   * append leaves none). **Call it as the transaction's last write**: every append anywhere waits
   * for this transaction to end. The transaction must be READ COMMITTED (the default), so the head
   * read after the lock sees the previous append's commit.
   */
  async append(db: Db, entry: LedgerAppend): Promise<{ id: string; seq: bigint; entryHash: string }> {
    if (!db.isTransaction) return (db as Kysely<Database>).transaction().execute((trx) => this.append(trx, entry));
    const trx = db as Transaction<Database>;
    const data = jsonObject(entry.data);
    if (!entry.kind) throw new TypeError("a ledger entry needs a kind");
    if (!entry.subjectId) throw new TypeError("a ledger entry needs a subject");
    const parties = [...new Set(entry.parties)].sort();

    await repo.lockLedger(trx);
    const { head, now, isolation } = await repo.readHead(trx);
    if (isolation !== "read committed") throw new Error(`ledger appends need a READ COMMITTED transaction, not ${isolation}`);
    const seq = (head?.seq ?? 0n) + 1n;
    // Never before the previous entry, whatever the clocks: created_at follows seq.
    const createdAt = head && head.created_at > now ? head.created_at : now;
    const prevHash = (head?.entry_hash ?? GENESIS_HASH) as Hex;
    const entryHash = entryHashOf(prevHash, {
      seq: Number(seq),
      kind: entry.kind,
      subject_id: entry.subjectId,
      actor_id: entry.actorId,
      parties,
      data,
      created_at: iso(createdAt),
    });
    const id = newId("ledgerEntry");
    await repo.insertEntry(trx, {
      id,
      seq,
      kind: entry.kind,
      subject_id: entry.subjectId,
      actor_id: entry.actorId,
      parties,
      data: JSON.stringify(data),
      created_at: createdAt,
      prev_hash: prevHash,
      entry_hash: entryHash,
    });
    return { id, seq, entryHash };
  }

  /** Whether an entry of `kind` about `subjectId` exists (a step a job may run twice appends once). */
  has(db: Db, kind: string, subjectId: string): Promise<boolean> {
    return repo.hasEntry(db, kind, subjectId);
  }

  /** One entry with its anchor and Merkle proof once anchored; 404 unless the reader is a party or an admin. */
  async get(reader: LedgerReader, entryId: string) {
    const { db } = this.deps;
    const row = isId("ledgerEntry", entryId) ? await repo.findEntry(db, entryId) : undefined;
    if (!row || !mayRead(reader, row)) throw ApiError.notFound("Ledger entry");
    const anchor = await repo.confirmedAnchorOf(db, row.seq);
    if (!anchor) return { ...toEntry(row), anchor: null };
    const [leaves, txHash] = await Promise.all([repo.entryHashes(db, anchor.first_seq, anchor.last_seq), this.deps.anchorTransaction(db, anchor.first_seq, anchor.last_seq)]);
    return { ...toEntry(row), anchor: { ...toAnchor(anchor, txHash), proof: merkle.proof(leaves as Hex[], Number(row.seq - anchor.first_seq)) } };
  }

  /** The reader's entries (an admin's: all), oldest first, with the index of their anchor. */
  async list(reader: LedgerReader, filter: { subject_id?: string | undefined; kind?: string | undefined }, page: Page) {
    const { db } = this.deps;
    const { rows, total } = await repo.listEntries(db, { partyId: reader.role === "admin" ? null : reader.userId, subjectId: filter.subject_id, kind: filter.kind }, page);
    const anchors = await repo.anchorIndexesOf(db, rows.map((r) => r.seq));
    return paginated(
      rows.map((r) => ({ ...toEntry(r), anchor_index: toNumberOrNull(anchors.get(r.seq)) })),
      page,
      total,
    );
  }

  /**
   * Recomputes the whole ledger: every entry's hash from its content, every link to the entry
   * before, seq without gaps, and every confirmed anchor's Merkle root and head from the entries
   * (and against the indexer's record of the chain, when readable). Stops at the first problem.
   */
  async verify(): Promise<LedgerVerification> {
    const { db } = this.deps;
    const anchors = await repo.confirmedAnchors(db);
    const indexed = await this.deps.indexedAnchors();
    let entriesChecked = 0;
    let anchorsChecked = 0;
    const bad = (seq: bigint, problem: string): LedgerVerification => ({
      ok: false,
      entries_checked: entriesChecked,
      anchors_checked: anchorsChecked,
      first_bad_seq: Number(seq),
      problem,
    });

    let expected = 1n;
    let prev: string = GENESIS_HASH;
    let next = 0;
    let leaves: Hex[] = [];
    for (;;) {
      const page = await repo.entriesAfter(db, expected - 1n, VERIFY_PAGE);
      for (const row of page) {
        if (row.seq !== expected) return bad(expected, `entry ${expected} is missing: the next entry is ${row.seq}`);
        if (row.prev_hash !== prev) return bad(row.seq, `prev_hash ${row.prev_hash} is not the entry_hash of entry ${row.seq - 1n} (${prev})`);
        const recomputed = entryHashOf(prev as Hex, hashedOf(row));
        if (recomputed !== row.entry_hash) return bad(row.seq, `entry_hash ${row.entry_hash} does not match the entry's content (recomputed: ${recomputed})`);
        entriesChecked++;

        const anchor = anchors[next];
        if (anchor && row.seq >= anchor.first_seq) {
          leaves.push(row.entry_hash as Hex);
          if (row.seq === anchor.last_seq) {
            const problem = anchorProblem(anchor, anchors[next - 1], leaves, indexed);
            if (problem) return bad(anchor.first_seq, problem);
            anchorsChecked++;
            next++;
            leaves = [];
          }
        }
        prev = row.entry_hash;
        expected++;
      }
      if (page.length < VERIFY_PAGE) break;
    }
    const dangling = anchors[next];
    if (dangling) return bad(dangling.first_seq, `anchor ${dangling.anchor_index} covers entries ${dangling.first_seq}..${dangling.last_seq}, but the ledger ends at entry ${expected - 1n}`);
    return { ok: true, entries_checked: entriesChecked, anchors_checked: anchorsChecked, first_bad_seq: null, problem: null };
  }
}

/** A confirmed anchor as its resource (without its proof), with its transaction. */
function toAnchor(a: LedgerAnchorRow, txHash: string | null) {
  return {
    anchor_index: Number(a.anchor_index),
    first_seq: Number(a.first_seq),
    last_seq: Number(a.last_seq),
    merkle_root: a.merkle_root,
    head_hash: a.head_hash,
    tx_hash: txHash,
    block_number: toNumberOrNull(a.block_number),
    chain_id: a.chain_id,
    contract_address: a.contract_address,
  };
}

function mayRead(reader: LedgerReader, row: LedgerEntryRow): boolean {
  return reader.role === "admin" || row.parties.includes(reader.userId);
}

/** The fields an entry's hash covers, as stored. */
export function hashedOf(row: LedgerEntryRow): HashedEntry {
  return {
    seq: Number(row.seq),
    kind: row.kind,
    subject_id: row.subject_id,
    actor_id: row.actor_id,
    parties: row.parties,
    data: row.data,
    created_at: iso(row.created_at),
  };
}

function toEntry(row: LedgerEntryRow) {
  return {
    entry_id: row.id,
    ...hashedOf(row),
    prev_hash: row.prev_hash,
    entry_hash: row.entry_hash,
  };
}

/** What is wrong with a confirmed anchor given its entries' hashes (in seq order), or null. */
function anchorProblem(anchor: LedgerAnchorRow, previous: LedgerAnchorRow | undefined, leaves: Hex[], indexed: Map<bigint, IndexedAnchor> | null): string | null {
  const name = `anchor ${anchor.anchor_index} (entries ${anchor.first_seq}..${anchor.last_seq})`;
  if (anchor.first_seq !== (previous?.last_seq ?? 0n) + 1n) return `${name} does not follow the anchor before it`;
  const root = merkle.root(leaves);
  if (root !== anchor.merkle_root) return `${name}: the entries' Merkle root ${root} is not the anchored root ${anchor.merkle_root}`;
  if (leaves.at(-1) !== anchor.head_hash) return `${name}: the entry_hash of entry ${anchor.last_seq} is not the anchored head ${anchor.head_hash}`;
  if (indexed) {
    const chain = indexed.get(anchor.anchor_index!);
    if (!chain) return `${name} is not on the chain as the indexer shows it`;
    if (chain.firstSeq !== anchor.first_seq || chain.lastSeq !== anchor.last_seq || chain.merkleRoot !== anchor.merkle_root || chain.headHash !== anchor.head_hash) {
      return `${name} differs from the chain's anchor ${chain.anchorIndex} (entries ${chain.firstSeq}..${chain.lastSeq}, root ${chain.merkleRoot})`;
    }
  }
  return null;
}

/** The data as jsonb will give it back (undefined dropped, dates as text): what is hashed is what is read. */
function jsonObject(data: Record<string, unknown>): Record<string, unknown> {
  const copy: unknown = JSON.parse(JSON.stringify(data));
  if (copy === null || typeof copy !== "object" || Array.isArray(copy)) throw new TypeError("ledger entry data must be a JSON object");
  return copy as Record<string, unknown>;
}

function toNumberOrNull(value: bigint | null | undefined): number | null {
  return value === null || value === undefined ? null : Number(value);
}
