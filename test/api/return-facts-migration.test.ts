/**
 * The transaction of a certificate's return stored once (migration 2026_12_02_0183), on a real
 * Postgres holding disputes as the code before it wrote them: a return with its hash both on the
 * dispute and in its chain operation, one whose operation's result lacks it, one recorded without
 * an operation, and disputes whose certificate did not go back. After it the return's operation
 * holds every hash, each dispute answers as it did and its return's transaction is the same; a copy
 * that disagrees with its operation stops the migration; `down` brings the copies back.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { transactionOf } from "../../api/src/chain/operations.ts";
import type { Db } from "../../api/src/db/database.ts";
import { migrateToLatest } from "../../api/src/db/migrate.ts";
import { toDispute } from "../../api/src/modules/marketplace/disputes.service.ts";
import type { Dispute } from "../../api/src/modules/marketplace/marketplace.tables.ts";
import { down } from "../../api/src/modules/marketplace/migrations/2026_12_02_0183_return_tx_in_operations.ts";
import { moduleMigrations } from "../../api/src/modules/index.ts";
import { useDatabaseMigratedUpTo } from "../support/migration-database.ts";

const BEFORE = "2026_12_02_0182_anchor_tx_in_operations";
const database = useDatabaseMigratedUpTo("return_facts_mig", BEFORE);
const refusing = useDatabaseMigratedUpTo("return_facts_refuse", BEFORE);
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const wallet = () => `0x${randomBytes(20).toString("hex")}`;
const T1 = new Date("2026-11-30T10:00:00Z");

async function parties(db: Db): Promise<void> {
  for (const id of ["usr_buyer", "usr_seller"]) {
    await sql`insert into users (id, username, display_name, email, role, status, wallet_address, wallet_kind)
      values (${id}, ${id}, ${id}, ${`${id}@example.test`}, 'artist', 'active', ${wallet()}, 'siwe')`.execute(db);
  }
}

/** A refunded card sale of its own artwork and listing, disputed: the dispute as the code before the migration wrote it (its return_tx_hash included). */
async function disputed(db: Db, id: string, certificateReturn: "pending" | "returned" | "not_possible" | "waived" | null, returnTx: string | null): Promise<void> {
  const [artwork, listing, sale, token] = [`art_${id}`, `lst_${id}`, `txn_${id}`, BigInt(`0x${randomBytes(6).toString("hex")}`)];
  const sellerWallet = wallet();
  await sql`insert into artworks (id, artist_id, title, year, medium, dimensions, status, image_source_url, certificate_hash, token_id, certified_at)
    values (${artwork}, 'usr_seller', ${id}, 2020, 'oil', '{"width":1,"height":1,"unit":"cm"}', 'certified', 'https://example.test/a.png', ${hash(0x77)}, ${token}, ${T1})`.execute(db);
  await sql`insert into listings (id, artwork_id, seller_id, seller_wallet, token_id, price_cents, currency, accepts_offers, status)
    values (${listing}, ${artwork}, 'usr_seller', ${sellerWallet}, ${token}, 10000, 'USD', false, 'sold')`.execute(db);
  await sql`insert into transactions (id, type, status, stage, amount_cents, buyer_id, seller_id, recipient_id, reference_id, artwork_id, payment_method, payment_method_id, completed_at, refunded_at, created_at)
    values (${sale}, 'sale', 'refunded', 'done', 10000, 'usr_buyer', 'usr_seller', 'usr_seller', ${sale}, ${artwork}, 'card', 'pm_card_visa', ${T1}, ${T1}, ${T1})`.execute(db);
  await sql`insert into sales (id, listing_id, offer_id, artwork_id, token_id, buyer_id, seller_id, buyer_wallet, seller_wallet, price_cents, payment_method_id, status)
    values (${sale}, ${listing}, null, ${artwork}, ${token}, 'usr_buyer', 'usr_seller', ${wallet()}, ${sellerWallet}, 10000, 'pm_card_visa', 'refunded')`.execute(db);
  await sql`insert into disputes (id, transaction_id, buyer_id, seller_id, reason, status, resolution, resolved_at, refund_status, refund_id, refund_forced, certificate_return, return_tx_hash, created_at)
    values (${id}, ${sale}, 'usr_buyer', 'usr_seller', 'not as described', 'resolved', 'refund', ${T1}, 'refunded', 're_1', ${certificateReturn === "waived"}, ${certificateReturn}, ${returnTx}, ${T1})`.execute(db);
}

function operation(db: Db, id: string, status: string, txHash: string | null, result: object | null) {
  return sql`insert into chain_operations (key, kind, payload, status, tx_hash, result, confirmed_from, confirmed_at, indexed_at)
    values (${`settle:return:${id}`}, 'marketplace_settle', ${JSON.stringify({ sale_id: `return:${id}` })}::jsonb, ${status}, ${txHash},
            ${result === null ? null : JSON.stringify(result)}::jsonb, ${status === "confirmed" ? "indexer" : null}, ${status === "confirmed" ? T1 : null}, ${status === "confirmed" ? T1 : null})`.execute(db);
}

const disputesOf = async (db: Db) => (await sql<Dispute & { return_tx_hash?: string | null }>`select * from disputes order by id`.execute(db)).rows;

/** Each dispute's return transaction as the code reads it now: its confirmed return operation's. */
async function returnsOf(db: Db, ids: string[]): Promise<(string | null)[]> {
  const ops = new Map((await db.selectFrom("chain_operations").selectAll().where("key", "like", "settle:return:%").execute()).map((o) => [o.key, o]));
  return ids.map((id) => transactionOf(ops.get(`settle:return:${id}`), { confirmed: true }));
}

describe("certificate return transaction migration", () => {
  it("keeps each return's transaction once (its operation's) and every dispute answers the same", async () => {
    const { db } = database;
    await parties(db);
    // Returned through its operation; one whose operation's result lacks the hash; one recorded without an operation.
    await disputed(db, "dsp_a", "returned", hash(0xa));
    await operation(db, "dsp_a", "confirmed", hash(0xa), { saleId: "return:dsp_a", txHash: hash(0xa) });
    await disputed(db, "dsp_b", "returned", hash(0xb));
    await operation(db, "dsp_b", "confirmed", hash(0xb0), { saleId: "return:dsp_b" });
    await disputed(db, "dsp_c", "returned", hash(0xc));
    // A return under way; one that was not possible; a forced refund that waived it.
    await disputed(db, "dsp_d", "pending", null);
    await operation(db, "dsp_d", "sent", hash(0xd), null);
    await disputed(db, "dsp_e", "not_possible", null);
    await operation(db, "dsp_e", "failed", hash(0xe), null);
    await disputed(db, "dsp_f", "waived", null);

    const rowsBefore = await disputesOf(db);
    const ids = rowsBefore.map((d) => d.id);
    const before = rowsBefore.map(toDispute);
    const returnsBefore = rowsBefore.map((d) => d.return_tx_hash ?? null);
    expect(returnsBefore).toEqual([hash(0xa), hash(0xb), hash(0xc), null, null, null]);

    await migrateToLatest(db, moduleMigrations);

    const rowsAfter = await disputesOf(db);
    expect(rowsAfter.some((d) => "return_tx_hash" in d)).toBe(false);
    // Every dispute answers as it did, and its return's transaction is the same.
    expect(rowsAfter.map(toDispute)).toEqual(before);
    expect(rowsAfter.map((d) => d.certificate_return)).toEqual(["returned", "returned", "returned", "pending", "not_possible", "waived"]);
    expect(await returnsOf(db, ids)).toEqual(returnsBefore);
    // The operations hold what only the disputes had.
    const ops = new Map((await db.selectFrom("chain_operations").selectAll().execute()).map((o) => [o.key, o]));
    expect(ops.get("settle:return:dsp_b")).toMatchObject({ tx_hash: hash(0xb0), result: { saleId: "return:dsp_b", txHash: hash(0xb) } });
    expect(ops.get("settle:return:dsp_c")).toMatchObject({ kind: "marketplace_settle", status: "confirmed", tx_hash: hash(0xc), result: { txHash: hash(0xc) }, due_at: null });

    // Down brings every copy back as it was.
    await down(db);
    expect((await disputesOf(db)).map((d) => d.return_tx_hash)).toEqual(returnsBefore);
  });

  it("stops, naming it, while a dispute's copy disagrees with its return's operation", async () => {
    const { db } = refusing;
    await parties(db);
    await disputed(db, "dsp_x", "returned", hash(0x1));
    await operation(db, "dsp_x", "confirmed", hash(0x1), { txHash: hash(0x2) });
    await expect(migrateToLatest(db, moduleMigrations)).rejects.toThrow(/dsp_x: 0x0+1 \/ 0x0+2/);
    expect((await disputesOf(db)).every((d) => "return_tx_hash" in d)).toBe(true);
    await sql`update chain_operations set result = ${JSON.stringify({ txHash: hash(0x1) })}::jsonb`.execute(db);
    await migrateToLatest(db, moduleMigrations);
    expect(await returnsOf(db, ["dsp_x"])).toEqual([hash(0x1)]);
  });
});
