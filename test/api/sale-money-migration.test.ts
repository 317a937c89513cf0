/**
 * The move of a sale's money off `sales` into its `sale` transaction (migration 2026_12_02_0141),
 * on a real Postgres holding rows written by the code before it: whatever the transaction lacked
 * is taken from the sale, a card sale a wallet's fill beat (`sold_onchain`) ends `lost_to_fill`, and
 * `sales` no longer has the columns.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { migrateToLatest } from "../../api/src/db/migrate.ts";
import { moduleMigrations } from "../../api/src/modules/index.ts";
import { useDatabaseMigratedUpTo } from "../support/migration-database.ts";

const database = useDatabaseMigratedUpTo("sale_money_mig", "2026_11_29_0048_withdrawal_after_block");
const wallet = () => `0x${randomBytes(20).toString("hex")}`;
const hash = () => `0x${randomBytes(32).toString("hex")}`;

describe("sale money migration", () => {
  it("keeps every sale's money in its transaction, ends a sale a fill beat lost_to_fill, and drops the copies", async () => {
    const { db } = database;
    for (const id of ["usr_seller", "usr_buyer"]) {
      await sql`insert into users (id, username, display_name, email, role, status, wallet_address, wallet_kind)
        values (${id}, ${id}, ${id}, ${`${id}@example.test`}, 'collector', 'active', ${wallet()}, 'siwe')`.execute(db);
    }
    await sql`insert into artworks (id, artist_id, title, year, medium, dimensions, status, image_source_url)
      values ('art_1', 'usr_seller', 'One', 2020, 'oil', '{"width":1,"height":1,"unit":"cm"}', 'pending_certification', 'https://example.test/a.png')`.execute(db);
    const sellerWallet = wallet();
    const buyerWallet = wallet();
    const listing = (id: string, status: string) =>
      sql`insert into listings (id, artwork_id, seller_id, seller_wallet, token_id, price_cents, accepts_offers, status)
        values (${id}, 'art_1', 'usr_seller', ${sellerWallet}, 1, 10000, false, ${status})`.execute(db);
    await listing("lst_1", "sold");
    await listing("lst_2", "sold");
    await listing("lst_3", "sold");
    const settled = hash();
    const filled = hash();
    const completedAt = new Date("2026-11-20T10:00:00Z");
    // 1. A completed card sale whose transaction (an older row) lacks the chain transaction and the payout.
    await sql`insert into transactions (id, type, status, artwork_id, amount_cents, buyer_id, seller_id, recipient_id, fee_cents, royalty_cents, charge_id, completed_at)
      values ('txn_1', 'sale', 'completed', 'art_1', 10000, 'usr_buyer', 'usr_seller', 'usr_seller', 250, 0, 'ch_1', ${completedAt})`.execute(db);
    await sql`insert into sales (id, listing_id, artwork_id, token_id, buyer_id, seller_id, buyer_wallet, seller_wallet, price_cents, payment_method_id, status,
        charge_id, fee_cents, royalty_receiver, royalty_cents, payout_cents, settle_tx_hash, paid_at, completed_at)
      values ('txn_1', 'lst_1', 'art_1', 1, 'usr_buyer', 'usr_seller', ${buyerWallet}, ${sellerWallet}, 10000, 'pm_card_visa', 'completed',
        'ch_1', 250, ${sellerWallet}, 0, 9750, ${settled}, ${completedAt}, ${completedAt})`.execute(db);
    // 2. A card sale a wallet's fill beat before its charge: the sale says why, the transaction does not yet.
    await sql`insert into transactions (id, type, status, artwork_id, amount_cents, buyer_id, seller_id, recipient_id)
      values ('txn_2', 'sale', 'pending', 'art_1', 10000, 'usr_buyer', 'usr_seller', 'usr_seller')`.execute(db);
    await sql`insert into sales (id, listing_id, artwork_id, token_id, buyer_id, seller_id, buyer_wallet, seller_wallet, price_cents, payment_method_id, status, failure_code, failure_reason, failed_at)
      values ('txn_2', 'lst_2', 'art_1', 1, 'usr_buyer', 'usr_seller', ${buyerWallet}, ${sellerWallet}, 10000, 'pm_card_visa', 'payment_failed',
        'sold_onchain', 'A wallet bought the listing on-chain first', ${completedAt})`.execute(db);
    // 3. The on-chain sale that beat it, written in both rows.
    await sql`insert into transactions (id, type, status, artwork_id, amount_cents, buyer_wallet, payment_method, seller_id, recipient_id, fee_cents, royalty_cents, payout_cents, chain_tx, completed_at)
      values ('txn_3', 'sale', 'completed', 'art_1', 10000, ${buyerWallet}, 'onchain', 'usr_seller', 'usr_seller', 250, 500, 9250, ${filled}, ${completedAt})`.execute(db);
    await sql`insert into sales (id, listing_id, artwork_id, token_id, seller_id, buyer_wallet, seller_wallet, price_cents, payment_method, order_hash, status,
        fee_cents, royalty_receiver, royalty_cents, payout_cents, settle_tx_hash, paid_at, completed_at)
      values ('txn_3', 'lst_3', 'art_1', 1, 'usr_seller', ${buyerWallet}, ${sellerWallet}, 10000, 'onchain', ${hash()}, 'completed',
        250, ${wallet()}, 500, 9250, ${filled}, ${completedAt}, ${completedAt})`.execute(db);

    // 4. A card sale whose transfer failed for good: the older transaction row lacks why.
    await listing("lst_4", "active");
    await sql`insert into transactions (id, type, status, artwork_id, amount_cents, buyer_id, seller_id, recipient_id, fee_cents, charge_id, failed_at)
      values ('txn_4', 'sale', 'failed', 'art_1', 10000, 'usr_buyer', 'usr_seller', 'usr_seller', 250, 'ch_4', ${completedAt})`.execute(db);
    await sql`insert into sales (id, listing_id, artwork_id, token_id, buyer_id, seller_id, buyer_wallet, seller_wallet, price_cents, payment_method_id, status,
        charge_id, fee_cents, failure_code, failure_reason, paid_at, failed_at)
      values ('txn_4', 'lst_4', 'art_1', 1, 'usr_buyer', 'usr_seller', ${buyerWallet}, ${sellerWallet}, 10000, 'pm_card_visa', 'settlement_failed',
        'ch_4', 250, 'settlement_failed', 'The seller no longer holds the token', ${completedAt}, ${completedAt})`.execute(db);

    await migrateToLatest(db, moduleMigrations);

    const txs = (await sql<Record<string, unknown>>`select id, status, charge_id, fee_cents, royalty_cents, payout_cents, chain_tx, failure_code, failure_reason, completed_at, failed_at
      from transactions order by id`.execute(db)).rows;
    expect(txs).toEqual([
      { id: "txn_1", status: "completed", charge_id: "ch_1", fee_cents: 250n, royalty_cents: 0n, payout_cents: 9750n, chain_tx: null, failure_code: null, failure_reason: null, completed_at: completedAt, failed_at: null },
      { id: "txn_2", status: "pending", charge_id: null, fee_cents: 0n, royalty_cents: 0n, payout_cents: null, chain_tx: null, failure_code: null, failure_reason: null, completed_at: null, failed_at: null },
      { id: "txn_3", status: "completed", charge_id: null, fee_cents: 250n, royalty_cents: 500n, payout_cents: 9250n, chain_tx: filled, failure_code: null, failure_reason: null, completed_at: completedAt, failed_at: null },
      { id: "txn_4", status: "failed", charge_id: "ch_4", fee_cents: 250n, royalty_cents: 0n, payout_cents: null, chain_tx: null, failure_code: "settlement_failed", failure_reason: "The seller no longer holds the token", completed_at: null, failed_at: completedAt },
    ]);
    // A card sale's settlement hash is its chain operation's (migration 2026_12_02_0171), a fill's its transaction's.
    const settle = (await sql<{ status: string; result: unknown }>`select status, result from chain_operations where key = 'settle:txn_1'`.execute(db)).rows;
    expect(settle).toEqual([{ status: "confirmed", result: { txHash: settled } }]);
    const sales = (await sql<{ id: string; status: string }>`select id, status from sales order by id`.execute(db)).rows;
    expect(sales).toEqual([
      { id: "txn_1", status: "completed" },
      { id: "txn_2", status: "lost_to_fill" },
      { id: "txn_3", status: "completed" },
      { id: "txn_4", status: "settlement_failed" },
    ]);
    const columns = (await sql<{ column_name: string }>`select column_name from information_schema.columns where table_name = 'sales' order by column_name`.execute(db)).rows.map((r) => r.column_name);
    expect(columns).toEqual(["artwork_id", "buyer_id", "buyer_wallet", "created_at", "id", "listing_id", "offer_id", "order_hash", "payment_method", "payment_method_id", "price_cents", "seller_id", "seller_wallet", "status", "token_id", "updated_at"]);
    // The rules the sale still keeps hold: a card sale names its card and buyer.
    await expect(sql`update sales set payment_method_id = null where id = 'txn_1'`.execute(db)).rejects.toThrow(/sales_paid/);
  });
});
