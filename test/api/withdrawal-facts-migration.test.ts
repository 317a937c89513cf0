/**
 * A withdrawal's transaction stored once (migration 2026_12_02_0181), on a real Postgres holding
 * withdrawals as the code before it wrote them: certificates and the payment token with the hash
 * both on the withdrawal and in their chain operation (or only on the withdrawal, or without an
 * operation at all), shares with the hash beside the transaction they signed. After it the
 * operations hold every hash, the shares' is their signed transaction's, and every withdrawal
 * answers the same `tx_hash`, read one by one or a page at once; a copy that disagrees with its
 * operation, or with its signed transaction, stops the migration; `down` brings the copies back.
 * Migration 0185 then makes the operations hold the outcome too (when it completed, why it failed):
 * the answers compared after it are those of the code before both.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { keccak256 } from "viem";
import { describe, expect, it } from "vitest";
import type { Db } from "../../api/src/db/database.ts";
import { migrateToLatest } from "../../api/src/db/migrate.ts";
import { moduleMigrations } from "../../api/src/modules/index.ts";
import { down } from "../../api/src/modules/withdrawals/migrations/2026_12_02_0181_withdrawal_tx_in_operations.ts";
import { toWithdrawal, withdrawalAnswers } from "../../api/src/modules/withdrawals/withdrawal-transfers.ts";
import type { Withdrawal } from "../../api/src/modules/withdrawals/withdrawals.tables.ts";
import { useDatabaseMigratedUpTo } from "../support/migration-database.ts";

const BEFORE = "2026_12_02_0171_chain_tx_in_operations";
const database = useDatabaseMigratedUpTo("wd_facts_mig", BEFORE);
const refusing = useDatabaseMigratedUpTo("wd_facts_refuse", BEFORE);
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const wallet = () => `0x${randomBytes(20).toString("hex")}`;
const T1 = new Date("2026-11-30T10:00:00Z");
const T2 = new Date("2026-11-30T10:05:00Z");

/** A signed transaction as the custodial wallet kept it (any bytes: only its hash matters here). */
const signedTx = () => `0x${randomBytes(120).toString("hex")}`;

const operations = { findMany: (db: Db, keys: readonly string[]) => (keys.length === 0 ? Promise.resolve([]) : db.selectFrom("chain_operations").selectAll().where("key", "in", [...keys]).execute()) };

async function owner(db: Db): Promise<void> {
  await sql`insert into users (id, username, display_name, email, role, status, wallet_address, wallet_kind)
    values ('usr_holder', 'holder', 'Holder', 'holder@example.test', 'artist', 'active', ${wallet()}, 'siwe')`.execute(db);
  for (const id of ["art_1", "art_2", "art_3", "art_4"]) {
    await sql`insert into artworks (id, artist_id, title, year, medium, dimensions, status, image_source_url)
      values (${id}, 'usr_holder', ${id}, 2020, 'oil', '{"width":1,"height":1,"unit":"cm"}', 'pending_certification', 'https://example.test/a.png')`.execute(db);
  }
}

/** A withdrawal as the code before the migration wrote it (its tx_hash included). */
function withdrawal(db: Db, w: { id: string; asset: "certificate" | "shares" | "payment_token"; status: string; txHash?: string | null; artwork?: string; signed?: string }) {
  const done = w.status === "completed";
  return sql`insert into withdrawals (id, user_id, artwork_id, asset, token_id, amount_units, quantity, from_wallet, to_wallet, status, tx_hash, failure_reason, created_at, completed_at, sender_nonce, signed_tx)
    values (${w.id}, 'usr_holder', ${w.asset === "payment_token" ? null : w.artwork!}, ${w.asset}, ${w.asset === "payment_token" ? null : 7}, ${w.asset === "payment_token" ? 5_000_000 : null},
            ${w.asset === "shares" ? 3 : 1}, ${wallet()}, ${wallet()}, ${w.status}, ${w.txHash ?? null}, ${w.status === "failed" ? "the chain refused the transfer" : null},
            ${T1}, ${done ? T2 : null}, ${w.signed ? 4 : null}, ${w.signed ?? null})`.execute(db);
}

function operation(db: Db, id: string, kind: string, status: string, txHash: string | null, result: object | null) {
  return sql`insert into chain_operations (key, kind, payload, status, tx_hash, result, confirmed_from, confirmed_at, indexed_at)
    values (${`withdraw:${id}`}, ${kind}, ${JSON.stringify({ withdrawal_id: id })}::jsonb, ${status}, ${txHash}, ${result === null ? null : JSON.stringify(result)}::jsonb,
            ${status === "confirmed" ? "indexer" : null}, ${status === "confirmed" ? T2 : null}, ${status === "confirmed" ? T2 : null})`.execute(db);
}

type RowBefore = Withdrawal & { tx_hash?: string | null; completed_at?: Date | null; failure_reason?: string | null };
const rowsOf = async (db: Db) => (await sql<RowBefore>`select * from withdrawals order by id`.execute(db)).rows;

/** The answer the code before the migrations gave: the withdrawal's own copies of its transaction, time and failure. */
function answeredBefore(w: RowBefore) {
  return { ...toWithdrawal(w, null, w.tx_hash ?? null), failure_reason: w.failure_reason ?? null, completed_at: w.completed_at?.toISOString() ?? null };
}

describe("withdrawal transaction migration", () => {
  it("keeps each withdrawal's transaction once (its operation's, or its signed transaction's) and every answer stays", async () => {
    const { db } = database;
    await owner(db);
    // A certificate withdrawn through its operation; one whose operation's result lacks the hash (the send's was lost).
    await withdrawal(db, { id: "wdr_a", asset: "certificate", status: "completed", txHash: hash(0xa), artwork: "art_1" });
    await operation(db, "wdr_a", "withdrawal", "confirmed", hash(0xa), { txHash: hash(0xa) });
    await withdrawal(db, { id: "wdr_b", asset: "certificate", status: "completed", txHash: hash(0xb), artwork: "art_1" });
    await operation(db, "wdr_b", "withdrawal", "confirmed", hash(0xb0), null);
    // A certificate on its way; one failed whose operation lost the hash it sent; one not sent yet.
    await withdrawal(db, { id: "wdr_c", asset: "certificate", status: "pending", txHash: hash(0xc), artwork: "art_2" });
    await operation(db, "wdr_c", "withdrawal", "sent", hash(0xc), null);
    await withdrawal(db, { id: "wdr_d", asset: "certificate", status: "failed", txHash: hash(0xd), artwork: "art_3" });
    await operation(db, "wdr_d", "withdrawal", "failed", null, null);
    await withdrawal(db, { id: "wdr_e", asset: "certificate", status: "pending", artwork: "art_4" });
    await operation(db, "wdr_e", "withdrawal", "pending", null, null);
    // The payment token: one mined with its operation, two recorded without one (completed, failed).
    await withdrawal(db, { id: "wdr_f", asset: "payment_token", status: "completed", txHash: hash(0xf) });
    await operation(db, "wdr_f", "withdrawal_payment_token", "confirmed", hash(0xf), { txHash: hash(0xf) });
    await withdrawal(db, { id: "wdr_g", asset: "payment_token", status: "completed", txHash: hash(0x9) });
    await withdrawal(db, { id: "wdr_h", asset: "payment_token", status: "failed", txHash: hash(0x8) });
    // Shares: signed and sent, done; signed and on their way; not signed yet.
    const [doneTx, onItsWay] = [signedTx(), signedTx()];
    await withdrawal(db, { id: "wdr_i", asset: "shares", status: "completed", txHash: keccak256(doneTx as `0x${string}`), artwork: "art_1", signed: doneTx });
    await operation(db, "wdr_i", "withdrawal_shares", "confirmed", keccak256(doneTx as `0x${string}`), { txHash: keccak256(doneTx as `0x${string}`) });
    await withdrawal(db, { id: "wdr_j", asset: "shares", status: "pending", txHash: keccak256(onItsWay as `0x${string}`), artwork: "art_2", signed: onItsWay });
    await operation(db, "wdr_j", "withdrawal_shares", "pending", null, null);
    await withdrawal(db, { id: "wdr_k", asset: "shares", status: "pending", artwork: "art_3" });
    await operation(db, "wdr_k", "withdrawal_shares", "pending", null, null);
    // Settled without a hash or an operation (0185 writes it one, for its time and its reason).
    await withdrawal(db, { id: "wdr_l", asset: "certificate", status: "completed", artwork: "art_4" });
    await withdrawal(db, { id: "wdr_m", asset: "shares", status: "failed", artwork: "art_4" });

    const rowsBefore = await rowsOf(db);
    const before = rowsBefore.map(answeredBefore);
    expect(before.filter((w) => w.tx_hash !== null)).toHaveLength(9);

    await migrateToLatest(db, moduleMigrations);

    const columns = await sql<{ column_name: string }>`select column_name from information_schema.columns where table_name = 'withdrawals'`.execute(db);
    expect(columns.rows.map((c) => c.column_name)).not.toContain("tx_hash");
    // Every withdrawal answers as it did, a page at once or one by one.
    const rowsAfter = await rowsOf(db);
    expect(await withdrawalAnswers(operations, db, rowsAfter)).toEqual(before);
    for (const row of rowsAfter) expect(await withdrawalAnswers(operations, db, [row])).toEqual([before.find((w) => w.id === row.id)]);

    // The operations hold what only the withdrawals had.
    const ops = new Map((await db.selectFrom("chain_operations").selectAll().execute()).map((o) => [o.key, o]));
    expect(ops.get("withdraw:wdr_b")).toMatchObject({ tx_hash: hash(0xb0), result: { txHash: hash(0xb) } });
    expect(ops.get("withdraw:wdr_c")).toMatchObject({ status: "sent", tx_hash: hash(0xc), result: null });
    expect(ops.get("withdraw:wdr_d")).toMatchObject({ status: "failed", tx_hash: hash(0xd) });
    expect(ops.get("withdraw:wdr_e")).toMatchObject({ status: "pending", tx_hash: null });
    expect(ops.get("withdraw:wdr_g")).toMatchObject({ kind: "withdrawal_payment_token", status: "confirmed", tx_hash: hash(0x9), result: { txHash: hash(0x9) }, confirmed_from: "chain", confirmed_at: T2, due_at: null });
    expect(ops.get("withdraw:wdr_h")).toMatchObject({ kind: "withdrawal_payment_token", status: "failed", tx_hash: hash(0x8), last_error: "the chain refused the transfer", due_at: null });
    expect(ops.get("withdraw:wdr_j")).toMatchObject({ status: "pending", tx_hash: null });
    // The outcome's facts are the operations' (0185): a failure's reason its operation had lost, the settled ones written.
    expect(ops.get("withdraw:wdr_d")).toMatchObject({ last_error: "the chain refused the transfer" });
    expect(ops.get("withdraw:wdr_l")).toMatchObject({ kind: "withdrawal", status: "confirmed", confirmed_at: T2, tx_hash: null });
    expect(ops.get("withdraw:wdr_m")).toMatchObject({ kind: "withdrawal_shares", status: "failed", last_error: "the chain refused the transfer" });
    expect(columns.rows.map((c) => c.column_name)).not.toContain("completed_at");
    expect(columns.rows.map((c) => c.column_name)).not.toContain("failure_reason");

    // Down brings every copy back as it was.
    await down(db);
    expect((await rowsOf(db)).map((w) => ({ id: w.id, tx_hash: w.tx_hash }))).toEqual(rowsBefore.map((w) => ({ id: w.id, tx_hash: w.tx_hash })));
  });

  it("stops, naming them, while a withdrawal's copy disagrees with its operation or its signed transaction", async () => {
    const { db } = refusing;
    await owner(db);
    await withdrawal(db, { id: "wdr_x", asset: "certificate", status: "completed", txHash: hash(0x1), artwork: "art_1" });
    await operation(db, "wdr_x", "withdrawal", "confirmed", hash(0x1), { txHash: hash(0x2) });
    const signed = signedTx();
    await withdrawal(db, { id: "wdr_y", asset: "shares", status: "completed", txHash: hash(0x3), artwork: "art_1", signed });
    await expect(migrateToLatest(db, moduleMigrations)).rejects.toThrow(/wdr_x: 0x0+1 \/ 0x0+2/);
    await sql`update chain_operations set result = ${JSON.stringify({ txHash: hash(0x1) })}::jsonb where key = 'withdraw:wdr_x'`.execute(db);
    await expect(migrateToLatest(db, moduleMigrations)).rejects.toThrow(/not the one they signed.*wdr_y/);
    await withdrawal(db, { id: "wdr_z", asset: "payment_token", status: "pending", txHash: hash(0x4) });
    await sql`update withdrawals set tx_hash = ${keccak256(signed as `0x${string}`)} where id = 'wdr_y'`.execute(db);
    await expect(migrateToLatest(db, moduleMigrations)).rejects.toThrow(/no chain operation.*wdr_z/);
    // Nothing changed meanwhile: the migration is one transaction.
    expect((await rowsOf(db)).every((w) => "tx_hash" in w)).toBe(true);
    await sql`delete from withdrawals where id = 'wdr_z'`.execute(db);
    await migrateToLatest(db, moduleMigrations);
    expect((await rowsOf(db)).some((w) => "tx_hash" in w)).toBe(false);
  });
});
