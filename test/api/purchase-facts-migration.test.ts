/**
 * One row per fact (migrations 2026_12_02_0111, 0112 and 0161), on a real Postgres holding rows as the code
 * before them wrote them: share purchases and ticket orders in every state, with their transactions
 * and chain operations, some older rows whose transaction lacks what the module's row kept, and a
 * share class written without its operation (as the seed did). After the migrations the copies are
 * gone, the transactions and chain operations hold what only the copies had, and every purchase and
 * order answers as it did.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb } from "../../api/src/db/connection.ts";
import { migrateToLatest, migrateUpTo } from "../../api/src/db/migrate.ts";
import { moduleMigrations } from "../../api/src/modules/index.ts";
import { centsToUsd } from "../../api/src/lib/money.ts";
import { iso, isoOrNull } from "../../api/src/lib/time.ts";
import { toOrder } from "../../api/src/modules/events/ticket-views.ts";
import type { TicketOrder } from "../../api/src/modules/events/events.tables.ts";
import type { FractionalPurchase } from "../../api/src/modules/fractional/fractional.tables.ts";
import { toPurchase } from "../../api/src/modules/fractional/share-purchases.ts";
import type { Purchase } from "../../api/src/modules/payments/purchases.service.ts";
import { dropDatabase, ensureDatabase, withDatabase } from "../../tools/stack/postgres.ts";
import { testEnvironment } from "../support/environment.ts";

const env = testEnvironment();
const name = `purchase_facts_mig_${randomBytes(4).toString("hex")}`;
let db: ReturnType<typeof createDb>;

beforeAll(async () => {
  await ensureDatabase(env.serverUrl, name);
  db = createDb(withDatabase(env.serverUrl, name), 2);
  await migrateUpTo(db, moduleMigrations, "2026_11_29_0048_withdrawal_after_block");
});

afterAll(async () => {
  await db?.destroy();
  await dropDatabase(env.serverUrl, name);
});

const at = (s: string) => new Date(s);
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const T1 = at("2026-11-30T10:00:00Z");
const T2 = at("2026-11-30T11:00:00Z");

/** The FractionalPurchase answer as the code before the migration gave it (its own row alone). */
function purchaseBefore(p: Record<string, any>) {
  return {
    purchase_id: p.id,
    artwork_id: p.artwork_id,
    buyer_id: p.buyer_id,
    shares_purchased: p.shares,
    price_per_share_usd: centsToUsd(BigInt(p.price_per_share_cents)),
    total_paid_usd: centsToUsd(BigInt(p.total_cents)),
    status: p.status,
    on_chain_tx: p.mint_tx_hash,
    new_ownership_pct: p.new_ownership_bps === null ? null : p.new_ownership_bps / 100,
    transaction_id: p.transaction_id,
    failure_reason: p.failure_reason,
    created_at: iso(p.created_at),
    confirmed_at: isoOrNull(p.confirmed_at),
  };
}

/** The TicketOrder answer as the code before the migration gave it (its own row alone). */
function orderBefore(o: Record<string, any>) {
  return {
    order_id: o.id,
    event_id: o.event_id,
    buyer_id: o.buyer_id,
    kind: o.kind,
    quantity: o.quantity,
    unit_price_usd: centsToUsd(BigInt(o.unit_price_cents)),
    total_usd: centsToUsd(BigInt(o.total_cents)),
    discount_usd: centsToUsd(BigInt(o.discount_cents)),
    amount_due_usd: centsToUsd(BigInt(o.total_cents) - BigInt(o.discount_cents)),
    status: o.status,
    payment_due_at: isoOrNull(o.payment_due_at),
    transaction_id: o.transaction_id,
    tickets: [],
    failure_reason: o.failure_reason,
    created_at: iso(o.created_at),
    confirmed_at: isoOrNull(o.confirmed_at),
    refunded_at: isoOrNull(o.refunded_at),
  };
}

describe("purchase facts migration", () => {
  it("moves what only the share purchases, share classes and ticket orders kept to their purchases and chain operations, and every answer stays", async () => {
    // ---- rows as the code before the migration wrote them ----
    for (const [id, role] of [["usr_buyer", "collector"], ["usr_owner", "artist"]]) {
      await sql`insert into users (id, username, display_name, email, role, status, wallet_address, wallet_kind)
        values (${id}, ${id}, ${id}, ${`${id}@example.test`}, ${role}, 'active', ${`0x${randomBytes(20).toString("hex")}`}, 'siwe')`.execute(db);
    }
    for (const [id, token] of [["art_1", 1], ["art_2", 2], ["art_3", 3], ["art_4", 4]] as const) {
      await sql`insert into artworks (id, artist_id, title, year, medium, dimensions, status, image_source_url, certificate_hash, token_id, certified_at)
        values (${id}, 'usr_owner', ${id}, 2020, 'oil', '{"width":1,"height":1,"unit":"cm"}', 'certified', 'https://example.test/a.png', ${hash(token)}, ${token}, ${T1})`.execute(db);
    }
    const shareClass = (artwork: string, token: number, status: string, txHash: string | null, failure: string | null, activatedAt = T1) =>
      sql`insert into fractional_artworks (artwork_id, token_id, owner_id, created_by, total_shares, price_per_share_cents, shares_sold, shares_confirmed, status, class_tx_hash, failure_reason, activated_at)
        values (${artwork}, ${token}, 'usr_owner', 'usr_owner', 100, 250, 40, 20, ${status}, ${txHash}, ${failure}, ${status === "active" ? activatedAt : null})`.execute(db);
    const operation = (key: string, kind: string, status: string, txHash: string | null, result: object | null, lastError: string | null = null) =>
      sql`insert into chain_operations (key, kind, payload, status, tx_hash, result, last_error, confirmed_from, confirmed_at, indexed_at)
        values (${key}, ${kind}, '{}'::jsonb, ${status}, ${txHash}, ${result === null ? null : JSON.stringify(result)}::jsonb, ${lastError},
                ${status === "confirmed" ? "indexer" : null}, ${status === "confirmed" ? T1 : null}, ${status === "confirmed" ? T1 : null})`.execute(db);
    // A class created through its operation; one the seed wrote without one; one whose creation failed.
    await shareClass("art_1", 1, "active", hash(0xc1), null);
    await operation("share_class:art_1", "fractional_create_class", "confirmed", hash(0xc1), { tokenId: "1", txHash: hash(0xc1) });
    await shareClass("art_2", 2, "active", hash(0xc2), null);
    await shareClass("art_3", 3, "failed", null, "ArtSharesClassCapExceeded()");
    await operation("share_class:art_3", "fractional_create_class", "failed", hash(0xc3), null);
    // An active class whose confirmed operation lacks the time (only the class kept when it went on-chain).
    await shareClass("art_4", 4, "active", hash(0xc4), null, T2);
    await sql`insert into chain_operations (key, kind, payload, status, tx_hash, result, confirmed_from, indexed_at)
      values ('share_class:art_4', 'fractional_create_class', '{}'::jsonb, 'confirmed', ${hash(0xc4)}, ${JSON.stringify({ tokenId: "4", txHash: hash(0xc4) })}::jsonb, 'indexer', ${T2})`.execute(db);

    const txn = (id: string, type: string, status: string, stage: string, f: { charge?: string; fee?: number; failureCode?: string; failure?: string; chainTx?: string; completedAt?: Date; failedAt?: Date; refundedAt?: Date; refundId?: string; method?: string | null } = {}) =>
      sql`insert into transactions (id, type, status, stage, amount_cents, buyer_id, seller_id, recipient_id, reference_id, payment_method_id, charge_id, fee_cents,
             failure_code, failure_reason, chain_tx, completed_at, failed_at, refunded_at, refund_id, created_at)
        values (${id}, ${type}, ${status}, ${stage}, 2500, 'usr_buyer', ${type === "share_purchase" ? "usr_owner" : null}, ${type === "share_purchase" ? "usr_owner" : null},
                ${id.replace("txn_", "")}, ${f.method === undefined ? "pm_card_visa" : f.method}, ${f.charge ?? null}, ${f.fee ?? 0}, ${f.failureCode ?? null}, ${f.failure ?? null},
                ${f.chainTx ?? null}, ${f.completedAt ?? null}, ${f.failedAt ?? null}, ${f.refundedAt ?? null}, ${f.refundId ?? null}, ${T1})`.execute(db);
    const sharePurchase = (id: string, status: string, stage: string, f: { charge?: string; fee?: number; mintTx?: string; failureCode?: string; failure?: string; confirmedAt?: Date; failedAt?: Date; bps?: number } = {}) =>
      sql`insert into fractional_purchases (id, artwork_id, token_id, buyer_id, buyer_wallet, owner_id, shares, price_per_share_cents, total_cents, payment_method_id, transaction_id,
             purchase_key, status, stage, charge_id, fee_cents, mint_tx_hash, new_ownership_bps, failure_code, failure_reason, created_at, confirmed_at, failed_at)
        values (${id}, 'art_1', 1, 'usr_buyer', ${`0x${"b".repeat(40)}`}, 'usr_owner', 10, 250, 2500, 'pm_card_visa', ${`txn_${id}`}, ${`0x${randomBytes(32).toString("hex")}`},
                ${status}, ${stage}, ${f.charge ?? null}, ${f.fee ?? null}, ${f.mintTx ?? null}, ${f.bps ?? null}, ${f.failureCode ?? null}, ${f.failure ?? null}, ${T1}, ${f.confirmedAt ?? null}, ${f.failedAt ?? null})`.execute(db);

    // Confirmed (minted); charged and minting; declined; its mint failed and the charge came back.
    await txn("txn_frac_a", "share_purchase", "completed", "done", { charge: "ch_a", fee: 63, chainTx: hash(0xa1), completedAt: T2 });
    await sharePurchase("frac_a", "confirmed", "done", { charge: "ch_a", fee: 63, mintTx: hash(0xa1), confirmedAt: T2, bps: 1000 });
    await operation("mint:frac_a", "fractional_mint", "confirmed", hash(0xa1), { purchaseKey: "0x", txHash: hash(0xa1) });
    await txn("txn_frac_b", "share_purchase", "pending", "effecting", { charge: "ch_b", fee: 63 });
    await sharePurchase("frac_b", "pending", "minting", { charge: "ch_b", fee: 63 });
    await operation("mint:frac_b", "fractional_mint", "pending", null, null);
    await txn("txn_frac_c", "share_purchase", "failed", "done", { failureCode: "card_declined", failure: "Your card was declined.", failedAt: T2 });
    await sharePurchase("frac_c", "failed", "done", { failureCode: "card_declined", failure: "Your card was declined.", failedAt: T2 });
    const mintFailed = "The shares could not be minted: ArtSharesCapExceeded()";
    await txn("txn_frac_d", "share_purchase", "failed", "done", { charge: "ch_d", fee: 63, failureCode: "mint_failed", failure: `${mintFailed}; the payment was refunded (re_d)`, refundId: "re_d", failedAt: T2 });
    await sharePurchase("frac_d", "failed", "done", { charge: "ch_d", fee: 63, failureCode: "mint_failed", failure: mintFailed, failedAt: T2 });
    await operation("mint:frac_d", "fractional_mint", "failed", hash(0xd1), null, "ArtSharesCapExceeded()");
    // Older rows: the transaction lacks the charge, the fee, the card, the mint's hash, the failure; the mint has no operation.
    await txn("txn_frac_e", "share_purchase", "completed", "done", { method: null, completedAt: T2 });
    await sharePurchase("frac_e", "confirmed", "done", { charge: "ch_e", fee: 63, mintTx: hash(0xe1), confirmedAt: T2, bps: 500 });
    await txn("txn_frac_f", "share_purchase", "failed", "done", { method: null, failedAt: T2 });
    await sharePurchase("frac_f", "failed", "done", { failureCode: "card_declined", failure: "Your card was declined.", failedAt: T2 });

    await sql`insert into platform_events (id, title, type, format, location, starts_at, ends_at, status, in_person_price_cents, in_person_capacity, in_person_sold, created_by)
      values ('evt_1', 'Talk', 'talk', 'in_person', 'Lisbon', ${T1}, ${T2}, 'cancelled', 2500, 50, 5, 'usr_owner')`.execute(db);
    const order = (id: string, status: string, f: { txn?: boolean; total?: number; refundStage?: string; charge?: string; fee?: number; failureCode?: string; failure?: string; confirmedAt?: Date; failedAt?: Date; refundedAt?: Date; dueAt?: Date } = {}) =>
      sql`insert into ticket_orders (id, event_id, buyer_id, kind, quantity, unit_price_cents, total_cents, payment_due_at, payment_method_id, transaction_id, status, refund_stage,
             charge_id, fee_cents, failure_code, failure_reason, created_at, confirmed_at, failed_at, refunded_at)
        values (${id}, 'evt_1', 'usr_buyer', 'in_person', 1, ${f.total ?? 2500}, ${f.total ?? 2500}, ${f.dueAt ?? null}, ${f.txn === false ? null : "pm_card_visa"}, ${f.txn === false ? null : `txn_${id}`},
                ${status}, ${f.refundStage ?? null}, ${f.charge ?? null}, ${f.fee ?? null}, ${f.failureCode ?? null}, ${f.failure ?? null}, ${T1}, ${f.confirmedAt ?? null}, ${f.failedAt ?? null}, ${f.refundedAt ?? null})`.execute(db);
    const cancelled = "The event was cancelled before the order was paid; any payment taken is refunded";
    // Confirmed; confirmed with its refund under way; refunded; declined; failed at its charge by the
    // cancellation (the charge came back); a hold expired; a hold failed by the cancellation; free.
    await txn("txn_ord_a", "ticket_purchase", "completed", "done", { charge: "ch_ta", fee: 63, completedAt: T2 });
    await order("ord_a", "confirmed", { charge: "ch_ta", fee: 63, confirmedAt: T2 });
    await txn("txn_ord_b", "ticket_purchase", "completed", "refunding", { charge: "ch_tb", fee: 63, completedAt: T2 });
    await order("ord_b", "confirmed", { charge: "ch_tb", fee: 63, confirmedAt: T2, refundStage: "refunding" });
    await txn("txn_ord_c", "ticket_purchase", "refunded", "done", { charge: "ch_tc", fee: 63, completedAt: T1, refundedAt: T2, refundId: "re_tc" });
    await order("ord_c", "refunded", { charge: "ch_tc", fee: 63, confirmedAt: T1, refundStage: "refunded", refundedAt: T2 });
    await txn("txn_ord_d", "ticket_purchase", "failed", "done", { failureCode: "card_declined", failure: "Your card was declined.", failedAt: T2 });
    await order("ord_d", "failed", { failureCode: "card_declined", failure: "Your card was declined.", failedAt: T2 });
    await txn("txn_ord_e", "ticket_purchase", "failed", "done", { charge: "ch_te", fee: 63, failureCode: "event_cancelled", failure: `${cancelled}; the payment was refunded (re_te)`, refundId: "re_te", failedAt: T2 });
    await order("ord_e", "failed", { charge: "ch_te", failureCode: "event_cancelled", failure: cancelled, failedAt: T2 });
    await order("ord_f", "expired", { txn: false, failure: "Not paid before payment_due_at: the seats were released", dueAt: T1 });
    await order("ord_g", "failed", { txn: false, failureCode: "event_cancelled", failure: "The event was cancelled before the order was paid", failedAt: T2, dueAt: T2 });
    await order("ord_h", "confirmed", { txn: false, total: 0, confirmedAt: T1 });
    // An older row: its transaction lacks the charge, the fee and the failure the order kept.
    await txn("txn_ord_i", "ticket_purchase", "failed", "done", { method: null, failedAt: T2 });
    await order("ord_i", "failed", { failureCode: "card_declined", failure: "Your card was declined.", failedAt: T2 });
    await txn("txn_ord_j", "ticket_purchase", "completed", "done", { method: null, completedAt: T2 });
    await order("ord_j", "confirmed", { charge: "ch_tj", fee: 63, confirmedAt: T2 });

    const purchasesBefore = (await sql<Record<string, any>>`select * from fractional_purchases order by id`.execute(db)).rows.map(purchaseBefore);
    const ordersBefore = (await sql<Record<string, any>>`select * from ticket_orders order by id`.execute(db)).rows.map(orderBefore);

    await migrateToLatest(db, moduleMigrations);

    // ---- the copies are gone ----
    const columns = async (table: string) => (await sql<{ column_name: string }>`select column_name from information_schema.columns where table_name = ${table}`.execute(db)).rows.map((r) => r.column_name);
    for (const gone of ["total_cents", "payment_method_id", "stage", "charge_id", "fee_cents", "mint_tx_hash", "failure_code", "failure_reason", "confirmed_at", "failed_at"]) {
      expect(await columns("fractional_purchases")).not.toContain(gone);
    }
    for (const gone of ["class_tx_hash", "failure_reason", "activated_at"]) expect(await columns("fractional_artworks")).not.toContain(gone);
    for (const gone of ["refund_stage", "charge_started_at", "charge_id", "fee_cents", "failure_code", "payment_method_id"]) expect(await columns("ticket_orders")).not.toContain(gone);

    // ---- the purchases hold what only the module's rows had ----
    const purchases = new Map((await db.selectFrom("transactions").selectAll().execute()).map((t) => [t.id, t as Purchase]));
    expect(purchases.get("txn_frac_e")).toMatchObject({ charge_id: "ch_e", fee_cents: 63n, payment_method_id: "pm_card_visa", chain_tx: null });
    expect(purchases.get("txn_frac_f")).toMatchObject({ failure_code: "card_declined", failure_reason: "Your card was declined.", payment_method_id: "pm_card_visa" });
    expect(purchases.get("txn_ord_i")).toMatchObject({ failure_code: "card_declined", failure_reason: "Your card was declined.", payment_method_id: "pm_card_visa" });
    expect(purchases.get("txn_ord_j")).toMatchObject({ charge_id: "ch_tj", fee_cents: 63n, payment_method_id: "pm_card_visa" });
    // What the purchases had already is kept as it was (a refund's note included).
    expect(purchases.get("txn_frac_d")!.failure_reason).toBe(`${mintFailed}; the payment was refunded (re_d)`);
    expect(purchases.get("txn_ord_b")).toMatchObject({ status: "completed", stage: "refunding", charge_id: "ch_tb" });

    // ---- the chain operations hold the classes' and mints' transactions ----
    const ops = new Map((await db.selectFrom("chain_operations").selectAll().execute()).map((o) => [o.key, o]));
    expect(ops.get("share_class:art_1")).toMatchObject({ status: "confirmed", result: { txHash: hash(0xc1) } });
    expect(ops.get("share_class:art_2")).toMatchObject({ kind: "fractional_create_class", status: "confirmed", tx_hash: hash(0xc2), result: { tokenId: "2", txHash: hash(0xc2) }, payload: { artwork_id: "art_2", token_id: "2", cap: "100" } });
    expect(ops.get("share_class:art_3")).toMatchObject({ status: "failed", last_error: "ArtSharesClassCapExceeded()" });
    // When each active class went on-chain is its operation's confirmation (the class's copy is gone).
    expect(ops.get("share_class:art_1")!.confirmed_at).toEqual(T1);
    expect(ops.get("share_class:art_2")!.confirmed_at).toEqual(T1);
    expect(ops.get("share_class:art_4")).toMatchObject({ confirmed_at: T2, tx_hash: hash(0xc4) });
    expect(ops.get("share_class:art_3")!.confirmed_at).toBeNull();
    expect(ops.get("mint:frac_e")).toMatchObject({ kind: "fractional_mint", status: "confirmed", result: { txHash: hash(0xe1) }, indexed_at: expect.any(Date) });
    expect(ops.get("mint:frac_a")!.result).toEqual({ purchaseKey: "0x", txHash: hash(0xa1) });
    // Nothing new to send: every share operation the migration wrote is confirmed and indexed (the
    // artworks' later migration writes certify operations of its own, outside this test's subject).
    const shareOps = [...ops.values()].filter((o) => o.kind === "fractional_create_class" || o.kind === "fractional_mint");
    expect(shareOps.length).toBeGreaterThan(0);
    expect(shareOps.filter((o) => o.status === "confirmed" && o.indexed_at === null)).toEqual([]);

    // ---- every purchase and order answers as it did ----
    const purchasesAfter = (await db.selectFrom("fractional_purchases").selectAll().orderBy("id").execute()).map((p: FractionalPurchase) => {
      const mint = ops.get(`mint:${p.id}`);
      return toPurchase(p, purchases.get(p.transaction_id)!, mint?.status === "confirmed" ? (mint.result as { txHash: string }).txHash : null);
    });
    expect(purchasesAfter).toEqual(purchasesBefore);
    const ordersAfter = (await db.selectFrom("ticket_orders").selectAll().orderBy("id").execute()).map((o: TicketOrder) => toOrder(o, [], o.transaction_id ? purchases.get(o.transaction_id) : undefined));
    expect(ordersAfter).toEqual(ordersBefore);
  });
});
