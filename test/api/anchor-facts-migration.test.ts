/**
 * The transaction of a ledger anchor stored once (migration 2026_12_02_0182), and its failure and
 * confirmation time (0184), on a real Postgres
 * holding anchors as the code before it wrote them: the hash both on the anchor and in its chain
 * operation, only on the anchor (an operation that lost it, or none at all), a failed and a pending
 * range. After it the operations hold every hash, and every entry answers the same anchor, read
 * through the ledger's service; a copy that disagrees with its operation stops the migration; `down`
 * brings the copies back.
 */
import { sql } from "kysely";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { ChainOperations } from "../../api/src/chain/operations.ts";
import type { Config } from "../../api/src/config.ts";
import type { Db } from "../../api/src/db/database.ts";
import { migrateToLatest } from "../../api/src/db/migrate.ts";
import { newId } from "../../api/src/lib/ids.ts";
import { moduleMigrations } from "../../api/src/modules/index.ts";
import { LedgerAnchoring, type LedgerAnchoringDeps } from "../../api/src/modules/ledger/anchoring.ts";
import { LedgerService } from "../../api/src/modules/ledger/ledger.service.ts";
import { down } from "../../api/src/modules/ledger/migrations/2026_12_02_0182_anchor_tx_in_operations.ts";
import { useDatabaseMigratedUpTo } from "../support/migration-database.ts";

const BEFORE = "2026_12_02_0181_withdrawal_tx_in_operations";
const database = useDatabaseMigratedUpTo("anchor_facts_mig", BEFORE);
const refusing = useDatabaseMigratedUpTo("anchor_facts_refuse", BEFORE);
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const CONTRACT = `0x${"a".repeat(40)}`;
const T1 = new Date("2026-11-30T10:00:00Z");
const ADMIN = { userId: "usr_admin", role: "admin" as const };

/** The ledger's service as the module wires it, its anchors' transactions asked of LedgerAnchoring (which reads the operations). */
function ledgerOn(db: Db) {
  const operations = { find: (trx: Db, key: string) => trx.selectFrom("chain_operations").selectAll().where("key", "=", key).executeTakeFirst() };
  const anchoring = new LedgerAnchoring({ db, logger: pino({ level: "silent" }), config: { certification: { maxAttempts: 1, retryBaseMs: 1 } } as Config, operations: operations as unknown as ChainOperations } as LedgerAnchoringDeps);
  return new LedgerService({ db: db as never, indexedAnchors: async () => null, anchorTransaction: (trx, first, last) => anchoring.transactionOfRange(trx, first, last) });
}

/** Entries 1..n (their hashes made up: only the proofs read them). */
async function entries(db: Db, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let seq = 1; seq <= n; seq++) {
    ids.push(newId("ledgerEntry"));
    await sql`insert into audit_ledger (id, seq, kind, subject_id, actor_id, parties, data, created_at, prev_hash, entry_hash)
      values (${ids.at(-1)!}, ${seq}, 'sale.completed', 'txn_1', null, '{}', '{}'::jsonb, ${T1}, ${hash(seq === 1 ? 0 : 0x100 + seq - 1)}, ${hash(0x100 + seq)})`.execute(db);
  }
  return ids;
}

/** An anchor as the code before the migration wrote it (its tx_hash included). */
function anchor(db: Db, first: number, last: number, status: "pending" | "confirmed" | "failed", txHash: string | null, index?: number) {
  return sql`insert into ledger_anchors (first_seq, last_seq, merkle_root, head_hash, chain_id, contract_address, status, tx_hash, block_number, anchor_index, last_error, created_at, confirmed_at)
    values (${first}, ${last}, ${hash(0x200 + first)}, ${hash(0x100 + last)}, 31337, ${CONTRACT}, ${status}, ${txHash}, ${status === "confirmed" ? 40 + first : null}, ${index ?? null},
            ${status === "failed" ? "the anchor was refused" : null}, ${T1}, ${status === "confirmed" ? T1 : null})`.execute(db);
}

function operation(db: Db, first: number, last: number, status: string, txHash: string | null, result: object | null) {
  return sql`insert into chain_operations (key, kind, payload, status, tx_hash, result, confirmed_from, confirmed_at, indexed_at)
    values (${`ledger_anchor:${first}-${last}`}, 'ledger_anchor', ${JSON.stringify({ first_seq: first, last_seq: last })}::jsonb, ${status}, ${txHash},
            ${result === null ? null : JSON.stringify(result)}::jsonb, ${status === "confirmed" ? "indexer" : null}, ${status === "confirmed" ? T1 : null}, ${status === "confirmed" ? T1 : null})`.execute(db);
}

const anchorsOf = async (db: Db) => (await sql<{ first_seq: bigint; last_seq: bigint; status: string; tx_hash?: string | null }>`select * from ledger_anchors order by first_seq, last_seq`.execute(db)).rows;

describe("anchor transaction migration", () => {
  it("keeps each anchor's transaction once (its operation's) and every entry answers the same anchor", async () => {
    const { db } = database;
    const ids = await entries(db, 7);
    // Anchored through its operation; one whose operation's result lacks the hash; one without an operation.
    await anchor(db, 1, 2, "confirmed", hash(0xa), 1);
    await operation(db, 1, 2, "confirmed", hash(0xa), { anchorIndex: "1", txHash: hash(0xa) });
    await anchor(db, 3, 3, "confirmed", hash(0xb), 2);
    await operation(db, 3, 3, "confirmed", hash(0xb0), { anchorIndex: "2" });
    await anchor(db, 4, 5, "confirmed", hash(0xc), 3);
    // A range that failed (its operation lost the hash), then the pending one after it, with no operation.
    await anchor(db, 6, 6, "failed", hash(0xd));
    await operation(db, 6, 6, "failed", null, null);
    await anchor(db, 6, 7, "pending", hash(0xe));
    // An operation confirmed without its time (the anchor kept it: migration 0184 moves it).
    await sql`update chain_operations set confirmed_at = null where key = 'ledger_anchor:1-2'`.execute(db);

    const ledger = ledgerOn(db);
    const rowsBefore = await anchorsOf(db);
    const txBefore = (seq: number) => rowsBefore.find((a) => a.status === "confirmed" && a.first_seq <= BigInt(seq) && BigInt(seq) <= a.last_seq)?.tx_hash;
    // What the code before answered: the same entry, its anchor's transaction read from the anchor.
    const before = [];
    for (const [i, id] of ids.entries()) {
      const got = await ledger.get(ADMIN, id);
      before.push({ ...got, anchor: got.anchor && { ...got.anchor, tx_hash: txBefore(i + 1) } });
    }
    expect(before.map((e) => e.anchor?.tx_hash ?? null)).toEqual([hash(0xa), hash(0xa), hash(0xb), hash(0xc), hash(0xc), null, null]);

    await migrateToLatest(db, moduleMigrations);

    expect(rowsBefore.length).toBe(5);
    expect((await anchorsOf(db)).some((a) => "tx_hash" in a)).toBe(false);
    // Every entry answers as it did.
    for (const [i, id] of ids.entries()) expect(await ledger.get(ADMIN, id)).toEqual(before[i]);
    // The operations hold what only the anchors had.
    const ops = new Map((await db.selectFrom("chain_operations").selectAll().execute()).map((o) => [o.key, o]));
    expect(ops.get("ledger_anchor:3-3")).toMatchObject({ tx_hash: hash(0xb0), result: { anchorIndex: "2", txHash: hash(0xb) } });
    expect(ops.get("ledger_anchor:4-5")).toMatchObject({
      status: "confirmed",
      tx_hash: hash(0xc),
      result: { anchorIndex: "3", firstSeq: "4", lastSeq: "5", merkleRoot: hash(0x204), headHash: hash(0x105), txHash: hash(0xc), blockNumber: "44" },
      payload: { first_seq: 4, last_seq: 5, merkle_root: hash(0x204), head_hash: hash(0x105), contract_address: CONTRACT },
      due_at: null,
    });
    expect(ops.get("ledger_anchor:6-6")).toMatchObject({ status: "failed", tx_hash: hash(0xd) });
    expect(ops.get("ledger_anchor:6-7")).toMatchObject({ status: "sent", tx_hash: hash(0xe), due_at: expect.any(Date) });
    // The attempts' facts are the operations' too (0184): the failure's reason, the confirmation's time.
    expect(ops.get("ledger_anchor:6-6")).toMatchObject({ last_error: "the anchor was refused" });
    expect(ops.get("ledger_anchor:1-2")!.confirmed_at).toEqual(T1);
    expect((await anchorsOf(db)).some((a) => "last_error" in a || "confirmed_at" in a)).toBe(false);


    // Down brings every copy back as it was.
    await down(db);
    expect((await anchorsOf(db)).map((a) => a.tx_hash)).toEqual(rowsBefore.map((a) => a.tx_hash));
  });

  it("stops, naming it, while an anchor's copy disagrees with its operation", async () => {
    const { db } = refusing;
    await anchor(db, 1, 2, "confirmed", hash(0x1), 1);
    await operation(db, 1, 2, "confirmed", hash(0x1), { txHash: hash(0x2) });
    await expect(migrateToLatest(db, moduleMigrations)).rejects.toThrow(/1-2: 0x0+1 \/ 0x0+2/);
    expect((await anchorsOf(db)).every((a) => "tx_hash" in a)).toBe(true);
    await sql`update chain_operations set result = ${JSON.stringify({ txHash: hash(0x1) })}::jsonb`.execute(db);
    await migrateToLatest(db, moduleMigrations);
    expect((await anchorsOf(db)).some((a) => "tx_hash" in a)).toBe(false);
  });
});
