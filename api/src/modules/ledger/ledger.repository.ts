import { type Insertable, sql, type Transaction } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import { lockNamed } from "../../db/locks.ts";
import { type Page, paginate } from "../../lib/pagination.ts";
import type { AuditLedgerTable, LedgerAnchorRow, LedgerAnchorsTable, LedgerEntryRow } from "./ledger.tables.ts";

// ---- entries ----

/** Serializes appends (held to the commit): the head read under it is the one the next entry follows. */
export async function lockLedger(trx: Transaction<Database>): Promise<void> {
  await lockNamed(trx, "audit_ledger");
}

export interface LedgerHead {
  seq: bigint;
  entry_hash: string;
  created_at: Date;
}

/** The last entry, if any, and the database's clock (milliseconds), read in one statement. */
export async function readHead(trx: Transaction<Database>): Promise<{ head: LedgerHead | null; now: Date; isolation: string }> {
  const row = await sql<{ seq: bigint | null; entry_hash: string | null; created_at: Date | null; now: Date; isolation: string }>`
    select h.seq, h.entry_hash, h.created_at, date_trunc('milliseconds', clock_timestamp()) as now, current_setting('transaction_isolation') as isolation
    from (select 1) as one
    left join lateral (select seq, entry_hash, created_at from audit_ledger order by seq desc limit 1) as h on true`
    .execute(trx)
    .then((r) => r.rows[0]!);
  const head = row.seq === null ? null : { seq: row.seq, entry_hash: row.entry_hash!, created_at: row.created_at! };
  return { head, now: row.now, isolation: row.isolation };
}

export async function insertEntry(trx: Transaction<Database>, row: Insertable<AuditLedgerTable>): Promise<void> {
  await trx.insertInto("audit_ledger").values(row).execute();
}

export async function hasEntry(db: Db, kind: string, subjectId: string): Promise<boolean> {
  return Boolean(await db.selectFrom("audit_ledger").select("id").where("kind", "=", kind).where("subject_id", "=", subjectId).executeTakeFirst());
}

export function findEntry(db: Db, id: string): Promise<LedgerEntryRow | undefined> {
  return db.selectFrom("audit_ledger").selectAll().where("id", "=", id).executeTakeFirst();
}

export interface EntryFilter {
  /** Only entries naming this user among their parties (null: every entry, for admins). */
  partyId: string | null;
  subjectId?: string | undefined;
  kind?: string | undefined;
}

/** Entries in seq order, oldest first. */
export function listEntries(db: Db, filter: EntryFilter, page: Page): Promise<{ rows: LedgerEntryRow[]; total: number }> {
  let query = db.selectFrom("audit_ledger");
  if (filter.partyId !== null) query = query.where("parties", "@>", sql<string[]>`array[${filter.partyId}]::text[]`);
  if (filter.subjectId !== undefined) query = query.where("subject_id", "=", filter.subjectId);
  if (filter.kind !== undefined) query = query.where("kind", "=", filter.kind);
  return paginate(query, page, (q) => q.selectAll().orderBy("seq", "asc"));
}

/** Entries after `afterSeq`, in seq order (the verifier's pages). */
export function entriesAfter(db: Db, afterSeq: bigint, limit: number): Promise<LedgerEntryRow[]> {
  return db.selectFrom("audit_ledger").selectAll().where("seq", ">", afterSeq).orderBy("seq").limit(limit).execute();
}

/** The entry hashes of seq first..last, in seq order. */
export async function entryHashes(db: Db, firstSeq: bigint, lastSeq: bigint): Promise<string[]> {
  const rows = await db.selectFrom("audit_ledger").select("entry_hash").where("seq", ">=", firstSeq).where("seq", "<=", lastSeq).orderBy("seq").execute();
  return rows.map((r) => r.entry_hash);
}

export async function headSeq(db: Db): Promise<bigint> {
  const row = await db.selectFrom("audit_ledger").select((eb) => eb.fn.max("seq").as("seq")).executeTakeFirst();
  return (row?.seq as bigint | null | undefined) ?? 0n;
}

// ---- anchors ----

/** Serializes the anchoring workers' decisions (one new range at a time). */
export async function lockAnchoring(trx: Transaction<Database>): Promise<void> {
  await lockNamed(trx, "ledger_anchor");
}

export function pendingAnchor(db: Db): Promise<LedgerAnchorRow | undefined> {
  return db.selectFrom("ledger_anchors").selectAll().where("status", "=", "pending").orderBy("first_seq").limit(1).executeTakeFirst();
}

/** The last seq of the pending and confirmed anchors (0 when none): where the next range starts after. */
export async function anchoredThrough(db: Db): Promise<bigint> {
  const row = await db
    .selectFrom("ledger_anchors")
    .select((eb) => eb.fn.max("last_seq").as("last"))
    .where("status", "in", ["pending", "confirmed"])
    .executeTakeFirst();
  return (row?.last as bigint | null | undefined) ?? 0n;
}

/** Records the range as pending (again, if it had failed). */
export async function upsertPendingAnchor(db: Db, row: Insertable<LedgerAnchorsTable>): Promise<LedgerAnchorRow> {
  return db
    .insertInto("ledger_anchors")
    .values({ ...row, status: "pending" })
    .onConflict((oc) =>
      oc.columns(["first_seq", "last_seq"]).doUpdateSet({
        status: "pending",
        merkle_root: sql<string>`excluded.merkle_root`,
        head_hash: sql<string>`excluded.head_hash`,
        chain_id: sql<number>`excluded.chain_id`,
        contract_address: sql<string>`excluded.contract_address`,
        updated_at: sql<Date>`now()`,
      }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

export interface AnchorFacts {
  anchorIndex: bigint;
  merkleRoot: string;
  headHash: string;
  blockNumber: bigint;
}

/** Records the chain's facts of the range (its root and head as the chain holds them; its transaction is its operation's); the row as now. */
export function confirmAnchor(trx: Transaction<Database>, firstSeq: bigint, lastSeq: bigint, facts: AnchorFacts): Promise<LedgerAnchorRow | undefined> {
  return trx
    .updateTable("ledger_anchors")
    .set({
      status: "confirmed",
      anchor_index: facts.anchorIndex,
      merkle_root: facts.merkleRoot,
      head_hash: facts.headHash,
      block_number: facts.blockNumber,
      updated_at: sql<Date>`now()`,
    })
    .where("first_seq", "=", firstSeq)
    .where("last_seq", "=", lastSeq)
    .returningAll()
    .executeTakeFirst();
}

/** The range failed (why is its chain operation's `last_error`): requested again by the next anchoring. */
export async function failAnchor(trx: Transaction<Database>, firstSeq: bigint, lastSeq: bigint): Promise<void> {
  await trx
    .updateTable("ledger_anchors")
    .set({ status: "failed", updated_at: sql<Date>`now()` })
    .where("first_seq", "=", firstSeq)
    .where("last_seq", "=", lastSeq)
    .where("status", "=", "pending")
    .execute();
}

/** The confirmed anchor whose range holds `seq`. */
export function confirmedAnchorOf(db: Db, seq: bigint): Promise<LedgerAnchorRow | undefined> {
  return db
    .selectFrom("ledger_anchors")
    .selectAll()
    .where("status", "=", "confirmed")
    .where("first_seq", "<=", seq)
    .where("last_seq", ">=", seq)
    .executeTakeFirst();
}

/** For each seq, the index of the confirmed anchor holding it (absent: not anchored yet). */
export async function anchorIndexesOf(db: Db, seqs: bigint[]): Promise<Map<bigint, bigint>> {
  if (seqs.length === 0) return new Map();
  const rows = await sql<{ seq: bigint; anchor_index: bigint }>`
    select s.seq, a.anchor_index
    from unnest(${seqs.map(String)}::bigint[]) as s(seq)
    join ledger_anchors a on a.status = 'confirmed' and s.seq between a.first_seq and a.last_seq`.execute(db);
  return new Map(rows.rows.map((r) => [r.seq, r.anchor_index]));
}

export function confirmedAnchors(db: Db): Promise<LedgerAnchorRow[]> {
  return db.selectFrom("ledger_anchors").selectAll().where("status", "=", "confirmed").orderBy("first_seq").execute();
}
