/**
 * The ownership races' model (test/api/ownership-races.test.ts): the cast and a race's world, the
 * contenders' shape, the starting states of each setup, the table's oracle for the answers, and the
 * facts checked once a race settled (its effects, owners and money, points).
 */
import { sql } from "kysely";
import { createWalletClient, type Hex, http } from "viem";
import { nonceManager, privateKeyToAccount } from "viem/accounts";
import { expect } from "vitest";
import { artExchangeAbi } from "../../contracts/abi/ArtExchange.ts";
import { readIndexerStatus } from "../../api/src/chain/indexer-views.ts";
import { transactionOf } from "../../api/src/chain/operations.ts";
import { ARTWORK_MOVES, type ArtworkMove, type ArtworkState } from "../../api/src/modules/artworks/artwork-moves.ts";
import type { TestUser } from "./api.ts";
import { type ArtworkPlatform, publicClient } from "./artworks.ts";
import { testEnvironment } from "./environment.ts";
import { indexedCertificate, ownerOnChain } from "./marketplace.ts";
import { waitFor } from "./wait.ts";
import type { stablecoinBuyer } from "./wallets.ts";

export type Setup = "held" | "listed" | "sold" | "disputed" | "fractionalized" | "withdrawn" | "removed";
export type Who = "A" | "B" | "C" | "D" | "admin" | "S" | "WB";

export interface Cast {
  /** The artist (custodial), with a linked wallet `wa`. */
  A: TestUser;
  /** A collector (custodial), with a linked wallet `wb` whose key the test holds (it approved ArtMarket). */
  B: TestUser;
  C: TestUser;
  D: TestUser;
  admin: string;
  wa: `0x${string}`;
  wb: ReturnType<typeof walletOfKey>;
  /** A wallet with no account, with the payment token and the exchange's allowance. */
  s: Awaited<ReturnType<typeof stablecoinBuyer>>;
}

/** One race's artwork and what its setup made. */
export interface World {
  artworkId: string;
  tokenId: bigint;
  listingId?: string;
  offerId?: string;
  /** The fill transaction of the order the setup handed `s`, and the order's hash. */
  fill?: { to: string; data: string };
  orderHash?: `0x${string}`;
  saleId?: string;
  disputeId?: string;
  /** Transfers of the certificate the race's wallets sent themselves. */
  walletTransfers: string[];
}

export const SHARES = 20;

export function walletOfKey(key: Hex) {
  // Two of its transfers may race: nonces in turn.
  const account = privateKeyToAccount(key, { nonceManager });
  return { account, address: account.address.toLowerCase() as `0x${string}`, client: createWalletClient({ account, transport: http(testEnvironment().rpcUrl) }) };
}

/** The states each setup leaves the artwork in (the race's starting states, as the table names them). */
export const STARTS_IN: Record<Setup, ArtworkState[]> = {
  held: [],
  listed: ["listed"],
  sold: [],
  disputed: ["disputed"],
  fractionalized: ["shares_issued"],
  withdrawn: ["external_wallet"],
  removed: ["removed"],
};

/** What a contender answered: success or not, as the API (or the chain, for a wallet's own transaction) said. */
export interface Answer {
  ok: boolean;
  said: string;
  reason?: string;
}

export type WalletMove = "wallet_fill" | "wallet_transfer" | "wallet_deposit";

export interface Contender {
  name: string;
  /** The table's move, or a wallet's own transaction (which nothing refuses but the chain). */
  move: ArtworkMove | WalletMove;
  by: Who;
  setups: Setup[];
  /** The account the certificate leaves when this succeeds (a sale's seller, a refunded buyer, a wallet giving it away). */
  movesFrom?: "A" | "B";
  /** The states this contender's success may end (a listing's sale ends `listed`). */
  ends?: ArtworkState[];
  /** Shares it buys, for the cap. */
  shares?: number;
  run(cast: Cast, w: World): Promise<Answer>;
}

export interface Spec {
  setup: Setup;
  contenders: Contender[];
}
export const specName = (s: Spec) => `${s.setup}:${s.contenders.map((c) => c.name).join("+")}`;

// ---- the table's oracle ----

/** What a wallet's own transaction leaves the artwork in, as the table names states: a fill sells the listing. */
export const WALLET_LEAVES: Record<WalletMove, ArtworkState[]> = { wallet_fill: ["listing_closed"], wallet_transfer: [], wallet_deposit: [] };
export const leavesOf = (c: Contender): readonly ArtworkState[] => (c.move in ARTWORK_MOVES ? ARTWORK_MOVES[c.move as ArtworkMove].leaves : WALLET_LEAVES[c.move as WalletMove]);
export const holderMove = (c: Contender) => c.move in ARTWORK_MOVES && ["holder", "holder_or_admin"].includes(ARTWORK_MOVES[c.move as ArtworkMove].by) && c.by !== "admin";

/**
 * Whether x's success can make y refused: a state x leaves refuses y, x takes the certificate from
 * y's account, x closes the listing whose order y fills (its orders are cancelled on-chain), or both
 * move the same thing once (one order filled, one certificate given away, shares that do not fit
 * together). `certainly`: refused whenever x came first (what two moves that each refuse the other
 * need, so that both cannot succeed).
 */
export function canRefuse(x: Contender, y: Contender, certainly = false): boolean {
  // A closed listing's orders are cancelled on-chain: a fill mined first still stands, so only another fill of the order certainly refuses one.
  if (y.move === "wallet_fill") return (certainly ? ["wallet_fill"] : ["wallet_fill", "delist", "buy", "accept_offer"]).includes(x.move);
  if (y.move === "wallet_transfer" || y.move === "wallet_deposit") return x.movesFrom === "B" || x.move === "wallet_transfer" || x.move === "wallet_deposit";
  const rule = ARTWORK_MOVES[y.move as ArtworkMove];
  if (leavesOf(x).some((s) => rule.refusedBy[s] !== undefined)) return true;
  if (x.movesFrom !== undefined && x.movesFrom === y.by && holderMove(y)) return true;
  // A share purchase reserves shares: two that do not fit together refuse one another.
  if (x.shares !== undefined && y.shares !== undefined) return x.shares + y.shares > SHARES;
  return false;
}

/** The answers' checks by the table: see the file's comment. */
export function checkAnswers(spec: Spec, answers: Answer[], trace: string): void {
  const { contenders } = spec;
  const initial = STARTS_IN[spec.setup];
  const othersOf = (i: number) => contenders.filter((_, k) => k !== i);
  const refusingNow = (y: Contender) => (y.move in ARTWORK_MOVES ? initial.filter((s) => ARTWORK_MOVES[y.move as ArtworkMove].refusedBy[s] !== undefined) : []);
  // Refused by a state it started in that no other contender can end.
  const certainlyRefused = contenders.map((y, i) => refusingNow(y).some((s) => !othersOf(i).some((x) => x.ends?.includes(s))));
  for (const [i, y] of contenders.entries()) {
    if (certainlyRefused[i]) expect(answers[i]!.ok, `${y.name} is refused by ${refusingNow(y).join(", ")} from the start, which nothing in the race ends; ${trace}`).toBe(false);
    const rivals = contenders.filter((x, k) => k !== i && !certainlyRefused[k]);
    const free = refusingNow(y).length === 0 && !rivals.some((x) => canRefuse(x, y)) && !(y.shares !== undefined && y.shares > SHARES);
    if (free) expect(answers[i]!.ok, `${y.name}: nothing in the race can refuse it; ${trace}`).toBe(true);
    for (const [k, x] of contenders.entries()) {
      if (k <= i) continue;
      if (canRefuse(x, y, true) && canRefuse(y, x, true)) expect(answers[i]!.ok && answers[k]!.ok, `${y.name} and ${x.name} each refuse the other, yet both succeeded; ${trace}`).toBe(false);
    }
  }
}

// ---- the facts ----

export interface Snapshot {
  listings: string[];
  classes: number;
  withdrawals: number;
  disputes: number;
  deleted: boolean;
  refunded: boolean;
  cardSales: number;
  onchainSales: number;
  sharePurchases: number;
  description: string | null;
}

export async function snapshot(p: ArtworkPlatform, w: World): Promise<Snapshot> {
  const { db } = p;
  const [listings, classes, withdrawals, artwork, sales, purchases] = await Promise.all([
    db.selectFrom("listings").select("id").where("artwork_id", "=", w.artworkId).execute(),
    db.selectFrom("fractional_artworks").select("artwork_id").where("artwork_id", "=", w.artworkId).where("status", "!=", "failed").execute(),
    db.selectFrom("withdrawals").select("id").where("artwork_id", "=", w.artworkId).where("asset", "=", "certificate").execute(),
    db.selectFrom("artworks").select(["deleted_at", "description"]).where("id", "=", w.artworkId).executeTakeFirstOrThrow(),
    db.selectFrom("transactions").select(["id", "payment_method"]).where("artwork_id", "=", w.artworkId).where("type", "=", "sale").execute(),
    db.selectFrom("transactions").select("id").where("artwork_id", "=", w.artworkId).where("type", "=", "share_purchase").execute(),
  ]);
  const disputes = sales.length ? await db.selectFrom("disputes").select(["id", "resolution"]).where("transaction_id", "in", sales.map((s) => s.id)).execute() : [];
  return {
    listings: listings.map((l) => l.id),
    classes: classes.length,
    withdrawals: withdrawals.length,
    disputes: disputes.length,
    deleted: artwork.deleted_at !== null,
    refunded: disputes.some((d) => d.resolution === "refund"),
    cardSales: sales.filter((s) => s.payment_method === "card").length,
    onchainSales: sales.filter((s) => s.payment_method === "onchain").length,
    sharePurchases: purchases.length,
    description: artwork.description,
  };
}

/** 1. What is new since the race started is what its allowed moves made: a refused move changed nothing. */
export function checkEffects(spec: Spec, answers: Answer[], before: Snapshot, after: Snapshot, trace: string): void {
  const okCount = (...moves: Contender["move"][]) => spec.contenders.filter((c, i) => moves.includes(c.move) && answers[i]!.ok).length;
  const got = {
    listings: after.listings.length - before.listings.length,
    classes: after.classes - before.classes,
    withdrawals: after.withdrawals - before.withdrawals,
    disputes: after.disputes - before.disputes,
    removed: after.deleted && !before.deleted,
    refunded: after.refunded && !before.refunded,
    cardSales: after.cardSales - before.cardSales,
    onchainSales: after.onchainSales - before.onchainSales,
    sharePurchases: after.sharePurchases - before.sharePurchases,
    edited: after.description !== before.description,
  };
  expect(got, `what the race made, against what its allowed moves make; ${trace}`).toEqual({
    listings: okCount("list"),
    classes: okCount("fractionalize"),
    withdrawals: okCount("withdraw"),
    disputes: okCount("dispute"),
    removed: okCount("remove") > 0,
    refunded: okCount("refund") > 0,
    cardSales: okCount("buy", "accept_offer"),
    onchainSales: okCount("wallet_fill"),
    sharePurchases: okCount("buy_shares"),
    edited: okCount("edit", "ask") > 0,
  });
}

/** 2. The facts of the artwork once everything settled: owners, money, how the holder got it, what a removal or shares forbid. */
export async function checkFacts(p: ArtworkPlatform, w: World, trace: string): Promise<void> {
  const { db, views } = p;
  const holder = await ownerOnChain(w.tokenId);
  expect((await indexedCertificate(p, w.artworkId)).owner, `the indexer's owner is ownerOf; ${trace}`).toBe(holder);
  const account = await db.selectFrom("user_wallet_directory").select("user_id").where("wallet", "=", holder).executeTakeFirst();
  const open = await db.selectFrom("listings").select(["id", "seller_id", "seller_wallet", "status"]).where("artwork_id", "=", w.artworkId).where("status", "in", ["active", "pending_payment"]).execute();
  for (const l of open) expect({ wallet: l.seller_wallet, seller: l.seller_id }, `the open listing ${l.id} is sold by the holder; ${trace}`).toEqual({ wallet: holder, seller: account?.user_id });

  const txs = await db.selectFrom("transactions").selectAll().where("artwork_id", "=", w.artworkId).where("type", "in", ["sale", "share_purchase"]).execute();
  // Money: each kept purchase split to the cent; what the processor kept is what card purchases kept.
  for (const t of txs.filter((x) => x.status === "completed")) expect(t.fee_cents + t.royalty_cents + (t.payout_cents ?? 0n), `${t.id}: fee + royalty + payout is its amount; ${trace}`).toBe(t.amount_cents);
  const card = txs.filter((t) => t.payment_method === "card");
  if (card.length > 0) {
    const charges = await db.selectFrom("sandbox_charges").select(["id", "amount_cents"]).where(sql<string>`metadata->>'transaction_id'`, "in", card.map((t) => t.id)).where("status", "=", "succeeded").execute();
    const refunds = charges.length ? await db.selectFrom("sandbox_refunds").select("amount_cents").where("charge_id", "in", charges.map((c) => c.id)).execute() : [];
    const net = charges.reduce((n, c) => n + c.amount_cents, 0n) - refunds.reduce((n, r) => n + r.amount_cents, 0n);
    expect(net, `charged - refunded = what the card purchases of the artwork kept; ${trace}`).toBe(card.filter((t) => t.status === "completed").reduce((n, t) => n + t.amount_cents, 0n));
  }
  // Every sale that completed moved the certificate from its seller's wallet to its buyer's.
  const transfers = await views.selectFrom("certificate_transfer").selectAll().where("token_id", "=", w.tokenId).orderBy("block_number").orderBy("log_index").execute();
  const sales = await db.selectFrom("sales").selectAll().where("artwork_id", "=", w.artworkId).execute();
  const settlementTx = async (s: (typeof sales)[number]) =>
    s.payment_method === "onchain" ? (txs.find((t) => t.id === s.id)?.chain_tx ?? null) : ((await views.selectFrom("sale_settlement").select("tx_hash").where("sale_id", "=", s.id).executeTakeFirst())?.tx_hash ?? null);
  for (const s of sales.filter((x) => x.status === "completed" || x.status === "refunded")) {
    const tx = await settlementTx(s);
    expect(transfers.filter((t) => t.tx_hash === tx).map((t) => `${t.from}->${t.to}`), `${s.id}: its certificate moved from the seller to the buyer; ${trace}`).toEqual([`${s.seller_wallet}->${s.buyer_wallet}`]);
  }
  expect(new Set(sales.filter((s) => s.status === "completed" || s.status === "refunded").map((s) => s.listing_id)).size, `one sale per listing; ${trace}`).toBe(
    sales.filter((s) => s.status === "completed" || s.status === "refunded").length,
  );
  // Whoever holds the certificate got it by a move that explains it.
  const last = transfers.at(-1)!;
  expect(last.to, `the last transfer is to the holder; ${trace}`).toBe(holder);
  const standingSale = await (async () => {
    for (const s of sales) if ((await settlementTx(s)) === last.tx_hash) return s;
    return undefined;
  })();
  // A withdrawal's transaction is its chain operation's (`withdraw:<id>`).
  const withdrawn = await db.selectFrom("withdrawals").select("id").where("artwork_id", "=", w.artworkId).where("asset", "=", "certificate").where("status", "=", "completed").execute();
  const withdrawalOps = withdrawn.length ? await db.selectFrom("chain_operations").selectAll().where("key", "in", withdrawn.map((x) => `withdraw:${x.id}`)).execute() : [];
  const withdrawal = withdrawalOps.find((op) => transactionOf(op) === last.tx_hash);
  // A return's is its chain operation's (`settle:return:<dispute>`).
  const disputed = sales.length ? await db.selectFrom("disputes").select("id").where("transaction_id", "in", sales.map((s) => s.id)).where("certificate_return", "=", "returned").execute() : [];
  const returnOps = disputed.length ? await db.selectFrom("chain_operations").selectAll().where("key", "in", disputed.map((d) => `settle:return:${d.id}`)).execute() : [];
  const returned = returnOps.find((op) => transactionOf(op) === last.tx_hash);
  const minted = /^0x0{40}$/.test(last.from);
  const explained = minted || (standingSale?.status === "completed") || withdrawal !== undefined || returned !== undefined || w.walletTransfers.includes(last.tx_hash);
  expect(explained, `the holder ${holder} got the certificate by ${last.tx_hash}, which no mint, standing sale, withdrawal, return or wallet transfer explains (a sale: ${standingSale?.id} ${standingSale?.status}); ${trace}`).toBe(true);
  const artwork = await db.selectFrom("artworks").select(["deleted_at", "for_sale", "price_cents", "for_sale_wallet"]).where("id", "=", w.artworkId).executeTakeFirstOrThrow();
  // A removed artwork: nothing listed, sold or bought into since; a fractionalized one: not sold whole since.
  if (artwork.deleted_at) {
    expect(open, `a removed artwork has no open listing; ${trace}`).toEqual([]);
    expect(txs.filter((t) => t.created_at > artwork.deleted_at!).map((t) => t.id), `nothing bought since the removal; ${trace}`).toEqual([]);
  }
  const shareClass = await db.selectFrom("fractional_artworks").select(["created_at", "owner_id", "status"]).where("artwork_id", "=", w.artworkId).where("status", "!=", "failed").executeTakeFirst();
  if (shareClass) {
    expect(sales.filter((s) => { const completedAt = txs.find((t) => t.id === s.id)?.completed_at ?? null; return completedAt !== null && completedAt > shareClass.created_at && s.status === "completed"; }).map((s) => s.id), `not sold whole once fractionalized; ${trace}`).toEqual([]);
    expect(account?.user_id, `a fractionalized artwork's certificate is held by the class's owner; ${trace}`).toBe(shareClass.owner_id);
  }
  // The ask (docs/decisions.md#for-sale) is the holder's: a wallet the certificate left has none; an open listing is the ask.
  if (artwork.for_sale) expect(artwork.for_sale_wallet ?? transfers[0]!.to, `the artwork is for sale by the wallet that holds it; ${trace}`).toBe(holder);
  const active = await db.selectFrom("listings").select(["id", "price_cents"]).where("artwork_id", "=", w.artworkId).where("status", "=", "active").executeTakeFirst();
  if (active) expect({ for_sale: artwork.for_sale, price: artwork.price_cents }, `the active listing ${active.id} is the ask; ${trace}`).toEqual({ for_sale: true, price: active.price_cents });
  if (artwork.deleted_at || shareClass) expect(artwork.for_sale, `a removed or fractionalized artwork is not for sale; ${trace}`).toBe(false);
}

/** 3. Each user's points are what the rules give for what stands now (docs/rewards.md), over everything they did. */
export async function checkPoints(p: ArtworkPlatform, cast: Cast, trace: string): Promise<void> {
  const { db } = p;
  for (const user of [cast.A, cast.B, cast.C, cast.D]) {
    const certified = await db.selectFrom("artworks").select(sql<number>`count(*)::int`.as("n")).where("artist_id", "=", user.id).where("status", "=", "certified").executeTakeFirstOrThrow();
    const bought = await db.selectFrom("transactions").select(["amount_cents", "buyer_id", "seller_id", "type"]).where("status", "=", "completed").where("type", "in", ["sale", "share_purchase"]).where((eb) => eb.or([eb("buyer_id", "=", user.id), eb("seller_id", "=", user.id)])).execute();
    let expected = certified.n * 50;
    for (const t of bought) {
      const usd = Number(t.amount_cents / 100n);
      if (t.type === "share_purchase") expected += t.buyer_id === user.id ? usd : 0;
      else if (t.buyer_id !== t.seller_id) expected += (t.buyer_id === user.id ? usd : 0) + (t.seller_id === user.id ? usd : 0);
    }
    const balance = await db.selectFrom("reward_balances").select("service_points").where("user_id", "=", user.id).executeTakeFirst();
    expect(balance?.service_points ?? 0, `${user.username}'s points are what stands; ${trace}`).toBe(expected);
  }
}

/** Waits for what the race left under way: payments, refunds, chain operations, share classes, withdrawals, events, the indexer at the head, a moved listing's cancellation. */
export async function settled(p: ArtworkPlatform, w: World, since: Date): Promise<void> {
  const { db } = p;
  await waitFor(
    async () => {
      const [txs, ops, classes, withdrawals, events, disputes] = await Promise.all([
        db.selectFrom("transactions").select("id").where("artwork_id", "=", w.artworkId).where("status", "=", "pending").execute(),
        db.selectFrom("chain_operations").select("key").where("status", "in", ["pending", "sent"]).where("updated_at", ">=", since).execute(),
        db.selectFrom("fractional_artworks").select("artwork_id").where("artwork_id", "=", w.artworkId).where("status", "=", "pending").execute(),
        db.selectFrom("withdrawals").select("id").where("artwork_id", "=", w.artworkId).where("status", "=", "pending").execute(),
        db.selectFrom("outbox_events").select("id").where("dispatched_at", "is", null).execute(),
        db
          .selectFrom("disputes")
          .innerJoin("sales", "sales.id", "disputes.transaction_id")
          .select("disputes.id")
          .where("sales.artwork_id", "=", w.artworkId)
          .where((eb) => eb.or([eb("disputes.refund_status", "=", "pending"), eb("disputes.certificate_return", "=", "pending")]))
          .execute(),
      ]);
      return txs.length + ops.length + classes.length + withdrawals.length + events.length + disputes.length === 0;
    },
    { timeoutMs: 30_000, what: `the race on ${w.artworkId} settled` },
  );
  const head = await publicClient().getBlockNumber({ cacheTime: 0 });
  await waitFor(async () => ((await readIndexerStatus({ db, viewsSchema: p.indexer.viewsSchema })).indexedBlock ?? -1n) >= head, { what: `the indexer at block ${head}` });
  // The asks' projection past the certificate's last move (a transfer ends an ask): a projection's
  // cursor row moves only past blocks that held its facts (every move but the mint), so that move's block is the mark.
  const lastMove = await p.views.selectFrom("certificate_transfer").select("block_number").where("token_id", "=", w.tokenId).where("from", "!=", "0x0000000000000000000000000000000000000000").orderBy("block_number", "desc").limit(1).executeTakeFirst();
  if (lastMove) {
    await waitFor(() => db.selectFrom("chain_cursors").select("consumer").where("consumer", "=", "artworks_asks").where("block_number", ">=", BigInt(lastMove.block_number)).executeTakeFirst(), {
      what: `the asks' projection past block ${lastMove.block_number}`,
    });
  }
  // A fill of the order the setup handed out, mined: recorded as the listing's sale (the projection follows the indexer).
  if (w.orderHash && (await publicClient().readContract({ address: testEnvironment().artExchangeAddress, abi: artExchangeAbi, functionName: "orderStatus", args: [w.orderHash] })) === 1) {
    await waitFor(() => db.selectFrom("sales").select("id").where("order_hash", "=", w.orderHash!).executeTakeFirst(), { what: `the fill of ${w.orderHash} recorded` });
  }
  // A listing whose certificate left its seller's wallet is cancelled by the sweep.
  const holder = await ownerOnChain(w.tokenId);
  await waitFor(
    async () => (await db.selectFrom("listings").select("id").where("artwork_id", "=", w.artworkId).where("status", "=", "active").where("seller_wallet", "!=", holder).execute()).length === 0,
    { what: "a moved listing cancelled" },
  );
  // Those cancellations' own events, handed out too.
  await waitFor(async () => (await db.selectFrom("outbox_events").select("id").where("dispatched_at", "is", null).execute()).length === 0, { what: "the outbox drained" });
}
