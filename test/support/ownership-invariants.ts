/**
 * What test/api/ownership-model.test.ts checks after every step, on the real stack: the run's
 * work settled (payments, refunds, chain operations, the indexer at the chain's head), then the
 * invariants of docs/ownership-and-money.md compared with the chain, the indexer's views, the
 * API's tables and the sandbox processor's, and with the model.
 */
import { sql } from "kysely";
import { expect } from "vitest";
import { readIndexerStatus } from "../../api/src/chain/indexer-views.ts";
import { transactionOf } from "../../api/src/chain/operations.ts";
import type { TransactionRow } from "../../api/src/modules/payments/payments.tables.ts";
import { type ArtworkPlatform, publicClient } from "./artworks.ts";
import { indexedCertificate, ownerOnChain } from "./marketplace.ts";
import { expectedNetCents, expectedPoints, type OwnershipModel } from "./ownership-model.ts";
import { waitFor } from "./wait.ts";

/** The run's users (a model run creates its own) and when it started. */
export interface RunScope {
  userIds: readonly string[];
  /** Lower-case, in the order of `userIds`. */
  wallets: readonly string[];
  /** `u0 (artist)`: how messages name a user. */
  labels: readonly string[];
  startedAt: Date;
}

type Platform = Pick<ArtworkPlatform, "db" | "views" | "indexer">;

const nameOfWallet = (scope: RunScope, wallet: string | null | undefined) => {
  const i = wallet ? scope.wallets.indexOf(wallet.toLowerCase()) : -1;
  return i < 0 ? `${wallet} (no user of the run)` : scope.labels[i]!;
};
const nameOfUser = (scope: RunScope, id: string | null) => {
  const i = id ? scope.userIds.indexOf(id) : -1;
  return i < 0 ? `${id} (no user of the run)` : scope.labels[i]!;
};
const sum = (values: bigint[]) => values.reduce((a, b) => a + b, 0n);

/**
 * Waits for the facts a step leaves behind: no payment of the run pending, no refund or return
 * under way, no chain operation of the run unsettled, no share class being created; then the
 * indexer at the chain's head as it is once all of that is mined.
 */
export async function settled(p: Platform, scope: RunScope): Promise<void> {
  const { db } = p;
  await waitFor(
    async () => {
      const [transactions, disputes, operations, classes, events] = await Promise.all([
        db.selectFrom("transactions").select("id").where("buyer_id", "in", scope.userIds).where("status", "=", "pending").execute(),
        db
          .selectFrom("disputes")
          .select("id")
          .where("buyer_id", "in", scope.userIds)
          .where((eb) => eb.or([eb("refund_status", "=", "pending"), eb("certificate_return", "=", "pending")]))
          .execute(),
        db.selectFrom("chain_operations").select("key").where("status", "in", ["pending", "sent"]).where("created_at", ">=", scope.startedAt).execute(),
        db.selectFrom("fractional_artworks").select("artwork_id").where("owner_id", "in", scope.userIds).where("status", "=", "pending").execute(),
        // The run's events handed to their handlers (rewards' points among them).
        db.selectFrom("outbox_events").select("id").where("dispatched_at", "is", null).where("created_at", ">=", scope.startedAt).execute(),
      ]);
      return transactions.length + disputes.length + operations.length + classes.length + events.length === 0;
    },
    { timeoutMs: 30_000, what: "the run's payments, refunds and chain operations to settle" },
  );
  const head = await publicClient().getBlockNumber({ cacheTime: 0 });
  await waitFor(
    async () => {
      const { indexedBlock } = await readIndexerStatus({ db: p.db, viewsSchema: p.indexer.viewsSchema });
      return indexedBlock !== null && indexedBlock >= head;
    },
    { timeoutMs: 20_000, what: `the indexer at the chain's head (block ${head})` },
  );
}

/** Every check below, once the run has settled. */
export async function checkInvariants(p: Platform, m: OwnershipModel, scope: RunScope): Promise<void> {
  await settled(p, scope);
  const transactions = await p.db.selectFrom("transactions").selectAll().where("buyer_id", "in", scope.userIds).orderBy("created_at").execute();
  await ownersAgree(p, m, scope);
  await recordsMatchModel(p, m, scope, transactions);
  await moneyIsConserved(p, m, transactions);
  await nobodyPaidForWhatTheyDoNotHold(p, scope, transactions);
  await refundsReturnedWhatWasBought(p, m, scope, transactions);
  await pointsFollowWhatStands(p, m, scope);
}

/** 5. Each user's points are what the rules give for what stands now (docs/rewards.md): nothing from a refunded sale or a deleted post. */
async function pointsFollowWhatStands(p: Platform, m: OwnershipModel, scope: RunScope): Promise<void> {
  const balances = await p.db.selectFrom("reward_balances").select(["user_id", "service_points"]).where("user_id", "in", scope.userIds).execute();
  const actual = new Map(balances.map((b) => [b.user_id, b.service_points]));
  scope.userIds.forEach((id, user) => {
    expect(actual.get(id) ?? 0, `${scope.labels[user]}'s points`).toBe(expectedPoints(m, user));
  });
}

/** 1. The owner the API uses (the indexer's, and an open listing's seller) is the chain's `ownerOf`, and the model's. */
async function ownersAgree(p: Platform, m: OwnershipModel, scope: RunScope): Promise<void> {
  for (const art of m.artworks) {
    const chain = nameOfWallet(scope, await ownerOnChain(art.tokenId));
    expect(nameOfWallet(scope, (await indexedCertificate(p, art.id)).owner), `${art.id}: the indexer's owner is ownerOf`).toBe(chain);
    expect(chain, `${art.id}: ownerOf is the model's owner`).toBe(scope.labels[art.owner]);
    const open = await p.db.selectFrom("listings").select(["id", "seller_id", "seller_wallet"]).where("artwork_id", "=", art.id).where("status", "in", ["active", "pending_payment"]).execute();
    expect(
      open.map((l) => ({ id: l.id, seller: nameOfUser(scope, l.seller_id), wallet: nameOfWallet(scope, l.seller_wallet) })),
      `${art.id}: its open listing, sold by the holder`,
    ).toEqual(art.listing ? [{ id: art.listing.id, seller: chain, wallet: chain }] : []);
  }
}

/** The model's records as the API keeps them: sales with their amounts, offers, share classes. */
async function recordsMatchModel(p: Platform, m: OwnershipModel, scope: RunScope, transactions: TransactionRow[]): Promise<void> {
  const byId = new Map(transactions.map((t) => [t.id, t]));
  for (const sale of m.sales) {
    const t = byId.get(sale.id);
    expect(
      t && { status: t.status, buyer: nameOfUser(scope, t.buyer_id), seller: nameOfUser(scope, t.seller_id), amount: t.amount_cents, fee: t.fee_cents, royalty: t.royalty_cents, payout: t.payout_cents },
      `sale ${sale.id}`,
    ).toEqual({
      status: sale.status,
      buyer: scope.labels[sale.buyer],
      seller: scope.labels[sale.seller],
      amount: sale.priceCents,
      fee: sale.feeCents,
      royalty: sale.royaltyCents,
      payout: sale.priceCents - sale.feeCents - sale.royaltyCents,
    });
  }
  for (const purchase of m.purchases) {
    const t = byId.get(purchase.txId);
    expect(t && { status: t.status, amount: t.amount_cents, fee: t.fee_cents, payout: t.payout_cents }, `share purchase ${purchase.txId}`).toEqual({
      status: "completed",
      amount: purchase.totalCents,
      fee: purchase.feeCents,
      payout: purchase.totalCents - purchase.feeCents,
    });
  }
  const offers = m.offers.length ? await p.db.selectFrom("offers").select(["id", "status"]).where("id", "in", m.offers.map((o) => o.id)).execute() : [];
  expect(Object.fromEntries(offers.map((o) => [o.id, o.status])), "the offers' states").toEqual(Object.fromEntries(m.offers.map((o) => [o.id, o.status])));
  for (const art of m.artworks.filter((a) => a.shares)) {
    const row = await p.db.selectFrom("fractional_artworks").select(["status", "total_shares", "shares_sold"]).where("artwork_id", "=", art.id).executeTakeFirst();
    const minted = await p.views.selectFrom("share_class").select("minted").where("token_id", "=", art.tokenId).executeTakeFirst();
    expect({ ...row, minted: minted?.minted }, `${art.id}: its share class`).toEqual({ status: "active", total_shares: art.shares!.total, shares_sold: art.shares!.sold, minted: BigInt(art.shares!.sold) });
  }
}

/**
 * 2. Money is conserved: what the processor charged the run's buyers, less what it refunded, is
 * what the completed (not refunded) purchases kept as fee, royalty and payout (a royalty_payout is
 * part of its sale, not counted again), and what the model says was bought.
 */
async function moneyIsConserved(p: Platform, m: OwnershipModel, transactions: TransactionRow[]): Promise<void> {
  const paid = transactions.filter((t) => t.type !== "royalty_payout");
  const { charged, refunded } = await chargesOf(p, paid.map((t) => t.id));
  const kept = paid.filter((t) => t.status === "completed");
  for (const t of kept) expect(t.fee_cents + t.royalty_cents + (t.payout_cents ?? 0n), `${t.id}: fee + royalty + payout is its amount`).toBe(t.amount_cents);
  const net = sum(charged.map((c) => c.amount_cents)) - sum(refunded.map((r) => r.amount_cents));
  expect(net, "charged - refunded = what completed purchases kept").toBe(sum(kept.map((t) => t.fee_cents + t.royalty_cents + (t.payout_cents ?? 0n))));
  expect(net, "charged - refunded = what the model says was bought").toBe(expectedNetCents(m));
  for (const c of charged) expect(c.amount_refunded_cents, `${c.idempotency_key}: the charge's refunded amount is its refunds'`).toBe(sum(refunded.filter((r) => r.charge_id === c.id).map((r) => r.amount_cents)));
  // A royalty payout goes with its sale: one, of the sale's royalty, in the sale's state.
  for (const sale of paid.filter((t) => t.type === "sale" && t.royalty_cents > 0n)) {
    const payouts = transactions.filter((t) => t.type === "royalty_payout" && t.parent_id === sale.id).map((t) => ({ amount: t.amount_cents, status: t.status }));
    expect(payouts, `${sale.id}: its royalty payout`).toEqual([{ amount: sale.royalty_cents, status: sale.status }]);
  }
}

/** The processor's succeeded charges for `transactionIds` (their metadata names them) and their refunds. */
async function chargesOf(p: Platform, transactionIds: string[]) {
  if (transactionIds.length === 0) return { charged: [], refunded: [] };
  const charged = await p.db
    .selectFrom("sandbox_charges")
    .select(["id", "idempotency_key", "amount_cents", "amount_refunded_cents"])
    .where(sql<string>`metadata->>'transaction_id'`, "in", transactionIds)
    .where("status", "=", "succeeded")
    .execute();
  const refunded = charged.length ? await p.db.selectFrom("sandbox_refunds").select(["charge_id", "amount_cents"]).where("charge_id", "in", charged.map((c) => c.id)).execute() : [];
  return { charged, refunded };
}

/**
 * 3. Nobody is paid for what they don't hold: a sale's certificate left its seller's wallet in its
 * settlement; a share purchase paid the certificate's holder when its shares were minted.
 */
async function nobodyPaidForWhatTheyDoNotHold(p: Platform, scope: RunScope, transactions: TransactionRow[]): Promise<void> {
  for (const t of transactions.filter((x) => x.status === "completed" || x.status === "refunded")) {
    if (t.type === "sale") {
      expect(t.recipient_id, `${t.id}: paid to its seller`).toBe(t.seller_id);
      const settlement = await p.views.selectFrom("sale_settlement").select(["tx_hash", "token_id"]).where("sale_id", "=", t.id).executeTakeFirst();
      expect(settlement, `${t.id}: settled on-chain`).toBeDefined();
      const moved = await p.views.selectFrom("certificate_transfer").select(["from", "to"]).where("tx_hash", "=", settlement!.tx_hash).where("token_id", "=", settlement!.token_id).execute();
      expect(
        moved.map((x) => `${nameOfWallet(scope, x.from)} -> ${nameOfWallet(scope, x.to)}`),
        `${t.id}: the settlement moved the certificate from the seller's wallet`,
      ).toEqual([`${nameOfUser(scope, t.seller_id)} -> ${nameOfUser(scope, t.buyer_id)}`]);
    } else if (t.type === "share_purchase") {
      // The mint's transaction is its chain operation's (`mint:<share purchase>`).
      const mintTx = transactionOf(await p.db.selectFrom("chain_operations").selectAll().where("key", "=", `mint:${t.reference_id}`).executeTakeFirst());
      expect(mintTx, `${t.id}: its mint's operation has the transaction`).toMatch(/^0x[0-9a-f]{64}$/);
      const mint = await p.views.selectFrom("share_mint").select(["token_id", "block_number", "log_index"]).where("tx_hash", "=", mintTx as `0x${string}`).executeTakeFirst();
      expect(mint, `${t.id}: its shares minted on-chain`).toBeDefined();
      const before = await p.views
        .selectFrom("certificate_transfer")
        .select("to")
        .where("token_id", "=", mint!.token_id)
        .where((eb) => eb.or([eb("block_number", "<", mint!.block_number), eb.and([eb("block_number", "=", mint!.block_number), eb("log_index", "<", mint!.log_index)])]))
        .orderBy("block_number", "desc")
        .orderBy("log_index", "desc")
        .executeTakeFirstOrThrow();
      const holder = nameOfWallet(scope, before.to);
      expect({ seller: nameOfUser(scope, t.seller_id), recipient: nameOfUser(scope, t.recipient_id) }, `${t.id}: paid to the certificate's holder at the mint`).toEqual({ seller: holder, recipient: holder });
    }
  }
}

/**
 * 4. A refund returned what was bought: the certificate went back from the buyer's wallet to the
 * seller's, and no share class was created meanwhile; a forced refund leaves the certificate where
 * it is and is in the audit ledger with its note. (A refused refund is checked by the step.)
 */
async function refundsReturnedWhatWasBought(p: Platform, m: OwnershipModel, scope: RunScope, transactions: TransactionRow[]): Promise<void> {
  for (const t of transactions.filter((x) => x.type === "sale" && x.status === "refunded")) {
    const disputes = await p.db.selectFrom("disputes").select(["id", "certificate_return"]).where("transaction_id", "=", t.id).where("resolution", "=", "refund").execute();
    expect(disputes, `${t.id}: refunded through one dispute`).toHaveLength(1);
    const dispute = disputes[0]!;
    const forcedNote = m.sales.find((s) => s.id === t.id)?.forcedNote ?? null;
    if (forcedNote !== null) {
      expect(dispute.certificate_return, `${t.id}: a forced refund leaves the certificate`).not.toBe("returned");
      const entries = await p.db.selectFrom("audit_ledger").select(["kind", "data"]).where("subject_id", "in", [t.id, dispute.id]).where(sql<string>`data::text`, "like", `%${forcedNote}%`).execute();
      const forced = entries.filter((e) => e.kind.includes("refund") || e.data.resolution === "refund" || e.data.forced === true);
      expect(forced.map((e) => e.kind), `${t.id}: the ledger's forced refund with its note`).not.toEqual([]);
      continue;
    }
    expect(dispute.certificate_return, `${t.id}: the certificate returned`).toBe("returned");
    const back = await p.views.selectFrom("sale_settlement").select(["from", "to"]).where("sale_id", "=", `return:${dispute.id}`).executeTakeFirst();
    expect(back && `${nameOfWallet(scope, back.from)} -> ${nameOfWallet(scope, back.to)}`, `${t.id}: returned from the buyer's wallet to the seller's`).toBe(
      `${nameOfUser(scope, t.buyer_id)} -> ${nameOfUser(scope, t.seller_id)}`,
    );
    const classes = await p.db
      .selectFrom("fractional_artworks")
      .select("artwork_id")
      .where("artwork_id", "=", t.artwork_id!)
      .where("status", "!=", "failed")
      .where("created_at", ">", t.completed_at!)
      .where("created_at", "<", t.refunded_at!)
      .execute();
    expect(classes, `${t.id}: no shares issued between the sale and its refund`).toEqual([]);
  }
}
