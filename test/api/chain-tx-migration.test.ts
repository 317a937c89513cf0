/**
 * A purchase's chain transaction stored once (migration 2026_12_02_0171), on a real Postgres holding
 * transactions as the code before it wrote them: card sales and share purchases with the hash both
 * on the transaction and in their chain operation (or only on the transaction, or without an
 * operation at all), royalty payouts carrying their sale's copy, a wallet's on-chain sale and a
 * pending sale. After it only on-chain purchases keep `chain_tx`, the operations hold every hash the
 * platform sent, and every transaction answers the same `on_chain_tx`.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import type { Db } from "../../api/src/db/database.ts";
import { migrateToLatest } from "../../api/src/db/migrate.ts";
import { moduleMigrations } from "../../api/src/modules/index.ts";
import type { TransactionRow } from "../../api/src/modules/payments/payments.tables.ts";
import { transactionAnswers } from "../../api/src/modules/payments/transaction-reads.ts";
import { toTransaction } from "../../api/src/modules/payments/transactions.schemas.ts";
import { useDatabaseMigratedUpTo } from "../support/migration-database.ts";

const database = useDatabaseMigratedUpTo("chain_tx_mig", "2026_12_02_0161_share_class_activation_in_operation");
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const T1 = new Date("2026-11-30T10:00:00Z");

/** A transaction as the code before the migration wrote it (its chain_tx included). */
function txn(t: { id: string; type: string; status?: string; method?: "card" | "onchain"; chainTx?: string | null; parent?: string; reference?: string }) {
  const completed = (t.status ?? "completed") !== "pending";
  return sql`insert into transactions (id, type, status, stage, amount_cents, buyer_id, seller_id, recipient_id, reference_id, parent_id, payment_method, buyer_wallet, payment_method_id, chain_tx, completed_at, created_at)
    values (${t.id}, ${t.type}, ${t.status ?? "completed"}, ${completed ? "done" : "effecting"}, 10000, 'usr_buyer', 'usr_seller', 'usr_seller', ${t.reference ?? t.id}, ${t.parent ?? null},
            ${t.method ?? "card"}, ${t.method === "onchain" ? `0x${"b".repeat(40)}` : null}, ${t.method === "onchain" ? null : "pm_card_visa"}, ${t.chainTx ?? null}, ${completed ? T1 : null}, ${T1})`.execute(database.db);
}

function operation(key: string, kind: string, status: string, txHash: string | null, result: object | null) {
  return sql`insert into chain_operations (key, kind, payload, status, tx_hash, result, confirmed_from, confirmed_at, indexed_at)
    values (${key}, ${kind}, '{}'::jsonb, ${status}, ${txHash}, ${result === null ? null : JSON.stringify(result)}::jsonb,
            ${status === "confirmed" ? "indexer" : null}, ${status === "confirmed" ? T1 : null}, ${status === "confirmed" ? T1 : null})`.execute(database.db);
}

/** The registered kinds' rule (sales.service.ts, share-purchases.ts): which operation sent a purchase's transaction. */
const hooks = {
  chainOperationOf: (p: TransactionRow) => (p.type === "sale" && p.payment_method === "card" ? `settle:${p.id}` : p.type === "share_purchase" && p.reference_id ? `mint:${p.reference_id}` : null),
  operations: { findMany: (db: Db, keys: readonly string[]) => (keys.length === 0 ? Promise.resolve([]) : db.selectFrom("chain_operations").selectAll().where("key", "in", [...keys]).execute()) },
};

describe("chain transaction migration", () => {
  it("keeps each purchase's chain transaction once (the operation's, or an on-chain purchase's own) and every answer stays", async () => {
    const { db } = database;
    for (const id of ["usr_buyer", "usr_seller"]) {
      await sql`insert into users (id, username, display_name, email, role, status, wallet_address, wallet_kind)
        values (${id}, ${id}, ${id}, ${`${id}@example.test`}, 'collector', 'active', ${`0x${randomBytes(20).toString("hex")}`}, 'siwe')`.execute(db);
    }
    // A card sale settled through its operation, with its royalty payout's copy.
    await txn({ id: "txn_a", type: "sale", chainTx: hash(0xa) });
    await operation("settle:txn_a", "marketplace_settle", "confirmed", hash(0xa), { saleId: "txn_a", txHash: hash(0xa) });
    await txn({ id: "txn_a_royalty", type: "royalty_payout", chainTx: hash(0xa), parent: "txn_a", reference: "txn_a" });
    // A card sale whose operation's result lacks the hash; one recorded without an operation.
    await txn({ id: "txn_b", type: "sale", chainTx: hash(0xb) });
    await operation("settle:txn_b", "marketplace_settle", "confirmed", hash(0xb), null);
    await txn({ id: "txn_c", type: "sale", chainTx: hash(0xc) });
    // A wallet's fill: the purchase's own transaction, and its payout's copy.
    await txn({ id: "txn_d", type: "sale", method: "onchain", chainTx: hash(0xd) });
    await txn({ id: "txn_d_royalty", type: "royalty_payout", method: "onchain", chainTx: hash(0xd), parent: "txn_d", reference: "txn_d" });
    // A share purchase minted; one whose mint's operation lacks the hash in its result.
    await txn({ id: "txn_e", type: "share_purchase", chainTx: hash(0xe), reference: "frac_e" });
    await operation("mint:frac_e", "fractional_mint", "confirmed", hash(0xe), { purchaseKey: "0x01", txHash: hash(0xe) });
    await txn({ id: "txn_f", type: "share_purchase", chainTx: hash(0xf), reference: "frac_f" });
    await operation("mint:frac_f", "fractional_mint", "confirmed", hash(0xf0), { purchaseKey: "0x02" });
    // A sale still being settled and a ticket purchase: no chain transaction.
    await txn({ id: "txn_g", type: "sale", status: "pending" });
    await operation("settle:txn_g", "marketplace_settle", "sent", hash(0x9), null);
    await txn({ id: "txn_h", type: "ticket_purchase", reference: "ord_h" });

    const rowsBefore = (await sql<TransactionRow>`select * from transactions order by id`.execute(db)).rows;
    const before = rowsBefore.map((t) => toTransaction(t, t.chain_tx));
    expect(before.filter((t) => t.on_chain_tx !== null)).toHaveLength(8);

    await migrateToLatest(db, moduleMigrations);

    // Only on-chain purchases keep the column, and the check keeps it so.
    const kept = await db.selectFrom("transactions").select(["id", "chain_tx"]).where("chain_tx", "is not", null).orderBy("id").execute();
    expect(kept).toEqual([{ id: "txn_d", chain_tx: hash(0xd) }]);
    await expect(sql`update transactions set chain_tx = ${hash(1)} where id = 'txn_a'`.execute(db)).rejects.toThrow(/transactions_chain_tx_onchain/);
    await expect(sql`update transactions set chain_tx = ${hash(1)} where id = 'txn_d_royalty'`.execute(db)).rejects.toThrow(/transactions_chain_tx_onchain/);

    // The operations hold what only the transactions had.
    const ops = new Map((await db.selectFrom("chain_operations").selectAll().execute()).map((o) => [o.key, o]));
    expect(ops.get("settle:txn_b")!.result).toEqual({ txHash: hash(0xb) });
    expect(ops.get("settle:txn_c")).toMatchObject({ kind: "marketplace_settle", status: "confirmed", tx_hash: hash(0xc), result: { txHash: hash(0xc) }, indexed_at: expect.any(Date) });
    expect(ops.get("mint:frac_f")!.result).toEqual({ purchaseKey: "0x02", txHash: hash(0xf) });
    expect(ops.get("settle:txn_g")).toMatchObject({ status: "sent", result: null });

    // Every transaction answers as it did, read one by one or all at once.
    const rowsAfter = await db.selectFrom("transactions").selectAll().orderBy("id").execute();
    expect(await transactionAnswers(db, rowsAfter, hooks)).toEqual(before);
    for (const row of rowsAfter) expect(await transactionAnswers(db, [row], hooks)).toEqual([before.find((t) => t.tx_id === row.id)]);
  });
});
