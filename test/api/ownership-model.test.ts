/**
 * Ownership and money, model-based (docs/ownership-and-money.md): random sequences of what four
 * users (two artists, two collectors, one of them with their own wallet) and an admin do to
 * artworks, on the real stack (Postgres,
 * the Hardhat chain with the contracts, Ponder, the sandbox processor, the API over HTTP). Each
 * step's answer is compared with what the model predicts (who owns what, which moves are refused
 * and why, the money), and after each step the invariants of test/support/ownership-invariants.ts
 * are checked once the run's work has settled.
 *
 * MODEL_RUNS, MODEL_COMMANDS: how many runs of at most how many steps (default 40 of 50, 30 to
 * 60 s; 5 in `npm test`'s fast tier, 200 in CI's full run); MODEL_TIME_LIMIT_MS: no new run (or shrink) after that long (default 90 s); MODEL_SEED
 * (then MODEL_PATH, MODEL_REPLAY_PATH): replay what a failure printed; MODEL_STEPS: only these
 * steps (the keys of `steps` below, comma-separated); MODEL_VERBOSE=1: print every run's trace.
 */
import { randomBytes, randomInt } from "node:crypto";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { publicClient, useArtworkPlatform } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { certificateCallFrom, certifiedArtwork, walletClientOf, walletOf } from "../support/marketplace.ts";
import { checkInvariants, type RunScope, settled } from "../support/ownership-invariants.ts";
import {
  ADMIN,
  type Actor,
  applyRefund,
  applySale,
  expectedPoints,
  applyTransfer,
  type ArtworkState,
  endListing,
  type Expected,
  type OwnershipModel,
  platformFeeCents,
  type UserState,
  predictDispute,
  predictFractionalize,
  predictListing,
  predictOffer,
  predictPatch,
  predictPurchase,
  predictRefund,
  predictRemoval,
  predictSharePurchase,
} from "../support/ownership-model.ts";
import { waitFor } from "../support/wait.ts";
import { adminToken, createUser, expectProblem, type TestResponse, type TestUser } from "../support/api.ts";

type WalletClient = Awaited<ReturnType<typeof walletClientOf>>;

const p = useArtworkPlatform({ MARKETPLACE_SWEEP_INTERVAL_MS: "300", PAYMENT_RETRY_BASE_MS: "5" });

const env = process.env;
const RUNS = Number(env.MODEL_RUNS ?? (env.TEST_TIER === "fast" ? 5 : 40));
const COMMANDS = Number(env.MODEL_COMMANDS ?? 50);
const TIME_LIMIT_MS = Number(env.MODEL_TIME_LIMIT_MS ?? 90_000);
const SEED = env.MODEL_SEED === undefined ? randomInt(2 ** 31) : Number(env.MODEL_SEED);
/** The run's users: two artists, a collector, and a collector who signed in with their own wallet. */
const USERS = [
  { role: "artist", wallet: "custodial" },
  { role: "artist", wallet: "custodial" },
  { role: "collector", wallet: "custodial" },
  { role: "collector", wallet: "external" },
] as const satisfies readonly UserState[];
/** A run holds at most this many artworks (more spread the steps thin). */
const MAX_ARTWORKS = 5;

/** One run's real side: its users, the admin, and a trace of what it did (printed with a failure). */
interface Run {
  users: TestUser[];
  /** Every user's wallet, the test holding its key (the external one's too): what acts on the chain directly. */
  wallets: WalletClient[];
  admin: string;
  scope: RunScope;
  trace: string[];
  rewardId: string;
  /** The kind of step running, for the tally. */
  step: string;
}

let admin: string;
let rewardId: string;

const tokenOf = (r: Run, actor: Actor) => (actor === ADMIN ? r.admin : r.users[actor]!.token);
const nameOf = (r: Run, actor: Actor) => (actor === ADMIN ? "admin" : r.scope.labels[actor]!);
const artName = (m: OwnershipModel, art: ArtworkState) => `art#${m.artworks.indexOf(art)} (${art.id})`;
const dollars = (cents: bigint) => `$${(Number(cents) / 100).toFixed(2)}`;
const usd = (cents: bigint) => Number(cents) / 100;
const pick = <T>(items: readonly T[], k: number): T => items[k % items.length]!;
/** The user `offset` places after `user` (0: the user itself): steps name users relative to the owner or the seller. */
const after = (m: Readonly<OwnershipModel>, user: number, offset: number) => (user + offset) % m.users.length;
const offsetName = (offset: number, of: string) => (offset === 0 ? of : `${of}+${offset}`);
/** A user of the run who is none of `not` (the run has four: there is always one). */
const someoneElse = (m: OwnershipModel, ...not: number[]) => m.users.findIndex((_, i) => !not.includes(i));

/** How often each step ran and what it answered, over all runs (printed at the end: what the runs covered). */
const tally = new Map<string, number>();
const count = (key: string) => tally.set(key, (tally.get(key) ?? 0) + 1);

const describeExpected = (e: Expected) => ("ok" in e ? e.ok.join(" or ") : e.refused.map((x) => `${x.status} ${x.code}${x.reason ? `/${x.reason}` : ""}`).join(" or "));

/**
 * Records the step and its answer in the run's trace, and checks the answer is what the model
 * expects; true when it is a success (the model then moves).
 */
function answered(r: Run, step: string, res: TestResponse, expected: Expected): boolean {
  const got = `${res.status}${res.body?.code ? ` ${res.body.code}${res.body.reason ? `/${res.body.reason}` : ""}` : ""}`;
  r.trace.push(`${step}: expected ${describeExpected(expected)}, got ${got}`);
  count(`${r.step} ${got}`);
  if ("ok" in expected) {
    expect(expected.ok, `${step}: ${res.status} ${res.text}`).toContain(res.status);
    return true;
  }
  const match = expected.refused.some((x) => x.status === res.status && x.code === res.body?.code && (x.reason === undefined || x.reason === res.body?.reason));
  expect(match, `${step}: expected ${describeExpected(expected)}, got ${res.status} ${res.text}`).toBe(true);
  expectProblem(res, res.status, res.body.code);
  return false;
}

const request = (r: Run, actor: Actor, method: string, path: string, body?: unknown) => p.api.request(method, path, { token: tokenOf(r, actor), body });

/** Polls what `read` answers until its `status` leaves `pending`; it must become `done`. */
async function settledAs(what: string, read: () => Promise<TestResponse>, done: string): Promise<Record<string, any>> {
  return waitFor(
    async () => {
      const body = (await read()).body;
      if (body.status !== "pending" && body.status !== done) throw new Error(`${what} is ${body.status}: ${body.failure_reason}`);
      return body.status === done && body;
    },
    { timeoutMs: 20_000, what },
  );
}

/** A certified artwork's state in the model: its artist holds it. */
async function certificateState(id: string, artist: number): Promise<ArtworkState> {
  const c = await p.views.selectFrom("certificate").select(["token_id", "royalty_bps"]).where("artwork_id", "=", id).executeTakeFirstOrThrow();
  return { id, tokenId: BigInt(c.token_id), artist, owner: artist, royaltyBps: c.royalty_bps, deleted: false, listing: null, shares: null, sales: [] };
}

/**
 * A fresh run: its own four users and one certified artwork per artist. The external user's wallet
 * approves ArtMarket itself (as docs/wallets.md#approvals says external wallets do), then the
 * platform forgets its key.
 */
async function startRun(): Promise<{ model: OwnershipModel; real: Run }> {
  const users = await Promise.all(USERS.map(({ role }) => createUser(p.api, { role, scope: ["write"] })));
  const wallets = await Promise.all(users.map((u) => walletClientOf(p, u.id)));
  const market = testEnvironment().artMarketAddress;
  for (const [i, { wallet }] of USERS.entries()) {
    if (wallet === "custodial") continue;
    await certificateCallFrom(p, users[i]!.id, { functionName: "setApprovalForAll", args: [market, true] });
    await p.db.updateTable("users").set({ wallet_kind: "siwe", custody_index: null }).where("id", "=", users[i]!.id).execute();
    const address = wallets[i]!.account.address.toLowerCase() as `0x${string}`;
    await waitFor(() => p.views.selectFrom("certificate_approval").select("approved").where("owner", "=", address).where("operator", "=", market.toLowerCase() as `0x${string}`).where("approved", "=", true).executeTakeFirst(), {
      what: `the approval of ${address} indexed`,
    });
  }
  const scope: RunScope = {
    userIds: users.map((u) => u.id),
    wallets: await Promise.all(users.map((u) => walletOf(p, u.id))),
    labels: USERS.map(({ role, wallet }, i) => `u${i} (${role}${wallet === "external" ? ", own wallet" : ""})`),
    startedAt: new Date(),
  };
  const model: OwnershipModel = { users: USERS.map((u) => ({ ...u })), artworks: [], offers: [], sales: [], disputes: [], purchases: [], posts: [], redeemed: USERS.map(() => 0) };
  const real: Run = { users, wallets, admin, scope, trace: [], rewardId, step: "start" };
  // In the artists' order whatever finishes first: a replay must see the same indices.
  const ids = await Promise.all([0, 1].map((artist) => certifiedArtwork(p, users[artist]!)));
  for (const [artist, id] of ids.entries()) model.artworks.push(await certificateState(id, artist));
  real.trace.push(`start: ${model.artworks.map((a) => artName(model, a)).join(", ")} certified for u0, u1`);
  // The certifications' events handed to their handlers (the artists' points) before the first step.
  await settled(p, scope);
  return { model, real };
}

/**
 * A step of a run: `name` is how a counterexample shows it, `when` its precondition on the model,
 * `act` performs it and checks the answer. The invariants are checked after it; a failure carries
 * the run's trace.
 */
class Step implements fc.AsyncCommand<OwnershipModel, Run> {
  constructor(
    private readonly name: string,
    private readonly when: (m: Readonly<OwnershipModel>) => boolean,
    private readonly act: (m: OwnershipModel, r: Run) => Promise<void>,
  ) {}

  check(m: Readonly<OwnershipModel>): boolean {
    const possible = this.when(m);
    if (!possible) count("(skipped: nothing to act on)");
    return possible;
  }

  async run(m: OwnershipModel, r: Run): Promise<void> {
    r.step = this.name.slice(0, this.name.indexOf("("));
    count(r.step);
    try {
      await this.act(m, r);
      await checkInvariants(p, m, r.scope);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(`${message}\n\nThe run so far:\n  ${r.trace.join("\n  ")}`, { cause: error });
    }
  }

  toString(): string {
    return this.name;
  }
}

const hasArtworks = (m: Readonly<OwnershipModel>) => m.artworks.length > 0;
const listed = (m: Readonly<OwnershipModel>) => m.artworks.filter((a) => a.listing);
const pendingOffers = (m: Readonly<OwnershipModel>) => m.offers.filter((o) => o.status === "pending");
const fractionalized = (m: Readonly<OwnershipModel>) => m.artworks.filter((a) => a.shares);
const openDisputes = (m: Readonly<OwnershipModel>) => m.disputes.filter((d) => d.status === "open");

// ---- the steps ----

const certify = (artist: number) =>
  new Step(`certify(u${artist})`, (m) => m.artworks.length < MAX_ARTWORKS, async (m, r) => {
    const art = await certificateState(await certifiedArtwork(p, r.users[artist]!), artist);
    m.artworks.push(art);
    r.trace.push(`${nameOf(r, artist)} certifies ${artName(m, art)}`);
  });

const list = (offset: number, artIndex: number, priceCents: bigint, acceptsOffers: boolean) =>
  new Step(`list(${offsetName(offset, "owner")}, art#${artIndex}, ${dollars(priceCents)}, offers: ${acceptsOffers})`, hasArtworks, async (m, r) => {
    const art = pick(m.artworks, artIndex);
    const actor = after(m, art.owner, offset);
    const res = await request(r, actor, "POST", "/v1/marketplace/listings", { artwork_id: art.id, price_usd: usd(priceCents), accepts_offers: acceptsOffers });
    if (!answered(r, `${nameOf(r, actor)} lists ${artName(m, art)} (held by ${nameOf(r, art.owner)}) at ${dollars(priceCents)}`, res, predictListing(m, actor, art, priceCents))) return;
    expect(res.body).toMatchObject({ artwork_id: art.id, seller_id: r.users[actor]!.id, status: "active", price_usd: usd(priceCents) });
    art.listing = { id: res.body.listing_id, seller: actor, priceCents, acceptsOffers };
  });

const cancelListing = (listingIndex: number, by: "seller" | "other" | "admin") =>
  new Step(`cancelListing(listed#${listingIndex}, by ${by})`, (m) => listed(m).length > 0, async (m, r) => {
    const art = pick(listed(m), listingIndex);
    const listing = art.listing!;
    const actor: Actor = by === "admin" ? ADMIN : by === "seller" ? listing.seller : someoneElse(m, listing.seller);
    const res = await request(r, actor, "DELETE", `/v1/marketplace/listings/${listing.id}`);
    const expected: Expected = actor === ADMIN || actor === listing.seller ? { ok: [200] } : { refused: [{ status: 403, code: "forbidden" }] };
    if (!answered(r, `${nameOf(r, actor)} cancels the listing of ${artName(m, art)}`, res, expected)) return;
    expect(res.body.status).toBe("cancelled");
    endListing(m, art);
  });

const buy = (offset: number, listingIndex: number) =>
  new Step(`buy(${offsetName(offset, "seller")}, listed#${listingIndex})`, (m) => listed(m).length > 0, async (m, r) => {
    const art = pick(listed(m), listingIndex);
    const listing = art.listing!;
    const buyer = after(m, listing.seller, offset);
    const res = await request(r, buyer, "POST", `/v1/marketplace/listings/${listing.id}/purchase`, { payment_method_id: "pm_card_visa" });
    if (!answered(r, `${nameOf(r, buyer)} buys ${artName(m, art)} from ${nameOf(r, listing.seller)} at ${dollars(listing.priceCents)}`, res, predictPurchase(listing, buyer))) return;
    await settledAs(`sale ${res.body.tx_id}`, () => request(r, buyer, "GET", `/v1/marketplace/transactions/${res.body.tx_id}`), "completed");
    applySale(m, m.artworks.indexOf(art), { id: res.body.tx_id, buyer, priceCents: listing.priceCents });
  });

const offer = (offset: number, listingIndex: number, amountCents: bigint) =>
  new Step(`offer(${offsetName(offset, "seller")}, listed#${listingIndex}, ${dollars(amountCents)})`, (m) => listed(m).length > 0, async (m, r) => {
    const art = pick(listed(m), listingIndex);
    const listing = art.listing!;
    const buyer = after(m, listing.seller, offset);
    const res = await request(r, buyer, "POST", "/v1/marketplace/offers", { listing_id: listing.id, offer_amount_usd: usd(amountCents), payment_method_id: "pm_card_visa" });
    const step = `${nameOf(r, buyer)} offers ${dollars(amountCents)} for ${artName(m, art)} (listed by ${nameOf(r, listing.seller)}${listing.acceptsOffers ? "" : ", no offers"})`;
    if (!answered(r, step, res, predictOffer(m, listing, buyer, amountCents))) return;
    expect(res.body).toMatchObject({ listing_id: listing.id, status: "pending" });
    m.offers.push({ id: res.body.offer_id, art: m.artworks.indexOf(art), listingId: listing.id, buyer, amountCents, status: "pending" });
  });

const acceptOffer = (offerIndex: number, bySeller: boolean) =>
  new Step(`acceptOffer(pending#${offerIndex}, by ${bySeller ? "seller" : "buyer"})`, (m) => pendingOffers(m).length > 0, async (m, r) => {
    const pending = pick(pendingOffers(m), offerIndex);
    const art = m.artworks[pending.art]!;
    const actor = bySeller ? art.listing!.seller : pending.buyer;
    const expected: Expected = bySeller ? { ok: [200] } : { refused: [{ status: 403, code: "forbidden" }] };
    const res = await request(r, actor, "POST", `/v1/marketplace/offers/${pending.id}/accept`);
    if (!answered(r, `${nameOf(r, actor)} accepts ${nameOf(r, pending.buyer)}'s offer of ${dollars(pending.amountCents)} for ${artName(m, art)}`, res, expected)) return;
    expect(res.body.status).toBe("accepted");
    const txId = res.body.transaction_id;
    await settledAs(`sale ${txId}`, () => request(r, pending.buyer, "GET", `/v1/marketplace/transactions/${txId}`), "completed");
    applySale(m, pending.art, { id: txId, buyer: pending.buyer, priceCents: pending.amountCents, offerId: pending.id });
  });

const fractionalize = (offset: number | typeof ADMIN, artIndex: number, total: number, priceCents: bigint) =>
  new Step(`fractionalize(${offset === ADMIN ? "admin" : offsetName(offset, "owner")}, art#${artIndex}, ${total} × ${dollars(priceCents)})`, hasArtworks, async (m, r) => {
    const art = pick(m.artworks, artIndex);
    const actor = offset === ADMIN ? ADMIN : after(m, art.owner, offset);
    const res = await request(r, actor, "POST", "/v1/fractional/artworks", { artwork_id: art.id, total_shares: total, price_per_share_usd: usd(priceCents) });
    const step = `${nameOf(r, actor)} fractionalizes ${artName(m, art)} (held by ${nameOf(r, art.owner)}) into ${total} shares at ${dollars(priceCents)}`;
    if (!answered(r, step, res, predictFractionalize(m, actor, art))) return;
    await waitFor(async () => (await p.api.request("GET", `/v1/fractional/artworks/${art.id}`)).body.status === "active", { timeoutMs: 20_000, what: `the share class of ${art.id}` });
    art.shares = { total, priceCents, sold: 0 };
  });

const buyShares = (offset: number, artIndex: number, quantity: number) =>
  new Step(`buyShares(${offsetName(offset, "owner")}, fractionalized#${artIndex}, ${quantity})`, (m) => fractionalized(m).length > 0, async (m, r) => {
    const art = pick(fractionalized(m), artIndex);
    const shares = art.shares!;
    const buyer = after(m, art.owner, offset);
    const res = await request(r, buyer, "POST", `/v1/fractional/${art.id}/purchase`, { shares_quantity: quantity, payment_method_id: "pm_card_visa" });
    const step = `${nameOf(r, buyer)} buys ${quantity} shares of ${artName(m, art)} (held by ${nameOf(r, art.owner)}, ${shares.total - shares.sold} left)`;
    if (!answered(r, step, res, predictSharePurchase(art, shares, buyer, quantity))) return;
    const id = res.body.purchase_id;
    const purchase = await settledAs(`share purchase ${id}`, () => request(r, buyer, "GET", `/v1/fractional/purchases/${id}`), "confirmed");
    const totalCents = shares.priceCents * BigInt(quantity);
    shares.sold += quantity;
    m.purchases.push({ txId: purchase.transaction_id, art: m.artworks.indexOf(art), buyer, payee: art.owner, totalCents, feeCents: platformFeeCents(totalCents) });
  });

/** The holder's wallet sends the certificate to another user's directly on-chain, as an external wallet would. */
const transfer = (artIndex: number, offset: number) =>
  new Step(`transfer(art#${artIndex}, to ${offsetName(offset, "holder")})`, hasArtworks, async (m, r) => {
    const art = pick(m.artworks, artIndex);
    const to = after(m, art.owner, offset);
    const [from, toWallet] = [r.scope.wallets[art.owner], r.scope.wallets[to]] as `0x${string}`[];
    r.trace.push(`${nameOf(r, art.owner)} transfers ${artName(m, art)} to ${nameOf(r, to)} on-chain`);
    const hash = await r.wallets[art.owner]!.writeContract({ chain: null, address: testEnvironment().artCertificateAddress, abi: artCertificateAbi, functionName: "transferFrom", args: [from!, toWallet!, art.tokenId] });
    expect((await publicClient().waitForTransactionReceipt({ hash })).status, "the transfer").toBe("success");
    const listing = art.listing;
    // The marketplace's sweep cancels a listing whose token left the seller's wallet.
    if (listing) await waitFor(async () => (await p.api.request("GET", `/v1/marketplace/listings/${listing.id}`)).body.status === "cancelled", { timeoutMs: 15_000, what: `the sweep to cancel ${listing.id}` });
    applyTransfer(m, art, to);
  });

const openDispute = (saleIndex: number, by: "buyer" | "seller" | "other") =>
  new Step(`openDispute(sale#${saleIndex}, by ${by})`, (m) => m.sales.length > 0, async (m, r) => {
    const index = saleIndex % m.sales.length;
    const sale = m.sales[index]!;
    const actor = by === "buyer" ? sale.buyer : by === "seller" ? sale.seller : someoneElse(m, sale.buyer, sale.seller);
    const res = await request(r, actor, "POST", `/v1/marketplace/transactions/${sale.id}/disputes`, { reason: "Not as described." });
    const step = `${nameOf(r, actor)} disputes sale#${index} (${sale.id}, ${sale.status}) of ${artName(m, m.artworks[sale.art]!)}`;
    if (!answered(r, step, res, predictDispute(m, index, actor))) return;
    expect(res.body).toMatchObject({ transaction_id: sale.id, status: "open" });
    m.disputes.push({ id: res.body.dispute_id, sale: index, status: "open" });
  });

type Resolution = "reject" | "refund" | "force" | "forceWithoutNote";

const resolveDispute = (disputeIndex: number, how: Resolution) =>
  new Step(`resolveDispute(open#${disputeIndex}, ${how})`, (m) => openDisputes(m).length > 0, async (m, r) => {
    r.step = `resolveDispute/${how}`;
    const dispute = pick(openDisputes(m), disputeIndex);
    const sale = m.sales[dispute.sale]!;
    const art = m.artworks[sale.art]!;
    const note = `Forced ${randomBytes(4).toString("hex")}: the return is impossible`;
    const body = {
      reject: { resolution: "reject" },
      refund: { resolution: "refund", note: "Damaged in transit" },
      force: { resolution: "refund", force: true, note },
      forceWithoutNote: { resolution: "refund", force: true },
    }[how];
    const expected: Expected = how === "refund" ? predictRefund(m, sale) : how === "forceWithoutNote" ? { refused: [{ status: 400, code: "validation_failed" }] } : { ok: [200] };
    const res = await request(r, ADMIN, "POST", `/v1/admin/disputes/${dispute.id}/resolve`, body);
    const step = `admin resolves the dispute of sale#${dispute.sale} (${nameOf(r, sale.seller)} -> ${nameOf(r, sale.buyer)}, ${artName(m, art)} now held by ${nameOf(r, art.owner)}) with ${how}`;
    const disputeNow = async () => (await request(r, ADMIN, "GET", `/v1/marketplace/disputes/${dispute.id}`)).body;
    if (!answered(r, step, res, expected)) {
      // Refused: nothing changed.
      expect(await disputeNow(), `${dispute.id} after a refused resolution`).toMatchObject({ status: "open", resolution: null, refund_status: null });
      return;
    }
    if (how === "reject") {
      expect(res.body).toMatchObject({ status: "resolved", resolution: "reject" });
      dispute.status = "resolved";
      return;
    }
    await waitFor(async () => {
      const d = await disputeNow();
      return d.refund_status === "refunded" && (how === "force" || d.certificate_return === "returned");
    }, { timeoutMs: 20_000, what: `the refund of ${dispute.id}` });
    applyRefund(m, dispute, how === "force" ? note : null);
  });

type ArtworkActor = "owner" | "artist" | "stranger" | "admin";

/** The artwork a PATCH or DELETE names, who sends it, and how the trace says so. */
function artworkMove(m: OwnershipModel, r: Run, artIndex: number, who: ArtworkActor, verb: string) {
  const art = pick(m.artworks, artIndex);
  const actor: Actor = who === "admin" ? ADMIN : who === "owner" ? art.owner : who === "artist" ? art.artist : someoneElse(m, art.owner, art.artist);
  return { art, actor, step: `${nameOf(r, actor)} (${who}) ${verb} ${artName(m, art)} (artist ${nameOf(r, art.artist)}, held by ${nameOf(r, art.owner)})` };
}

const patchArtwork = (artIndex: number, who: ArtworkActor) =>
  new Step(`patchArtwork(art#${artIndex}, by ${who})`, hasArtworks, async (m, r) => {
    const { art, actor, step } = artworkMove(m, r, artIndex, who, "edits");
    const description = `Described by ${nameOf(r, actor)} ${randomBytes(3).toString("hex")}`;
    const res = await request(r, actor, "PATCH", `/v1/artworks/${art.id}`, { description });
    if (!answered(r, step, res, predictPatch(art, actor))) return;
    expect(res.body).toMatchObject({ id: art.id, description });
  });

const removeArtwork = (artIndex: number, who: ArtworkActor) =>
  new Step(`removeArtwork(art#${artIndex}, by ${who})`, hasArtworks, async (m, r) => {
    const { art, actor, step } = artworkMove(m, r, artIndex, who, "removes");
    const res = await request(r, actor, "DELETE", `/v1/artworks/${art.id}`);
    if (!answered(r, step, res, predictRemoval(m, art, actor))) return;
    expect(res.body).toMatchObject({ id: art.id, deleted: true });
    expect((await p.api.request("GET", `/v1/artworks/${art.id}`)).status).toBe(404);
    art.deleted = true;
  });

const post = (author: number, artIndex: number) =>
  new Step(`post(u${author}, art#${artIndex})`, hasArtworks, async (m, r) => {
    const art = pick(m.artworks, artIndex);
    const res = await request(r, author, "POST", "/v1/community/posts", { type: "artwork_share", content: "Look at this one", tags: [], artwork_id: art.id });
    const expected: Expected = art.deleted ? { refused: [{ status: 400, code: "validation_failed" }] } : { ok: [201] };
    if (!answered(r, `${nameOf(r, author)} shares ${artName(m, art)} in a post`, res, expected)) return;
    m.posts.push({ id: res.body.post_id, author });
  });

const removePost = (postIndex: number) =>
  new Step(`removePost(post#${postIndex})`, (m) => m.posts.length > 0, async (m, r) => {
    const [gone] = m.posts.splice(postIndex % m.posts.length, 1);
    const res = await request(r, gone!.author, "DELETE", `/v1/community/posts/${gone!.id}`);
    answered(r, `${nameOf(r, gone!.author)} removes their post ${gone!.id}`, res, { ok: [200] });
  });

const redeem = (user: number) =>
  new Step(`redeem(u${user})`, () => true, async (m, r) => {
    const res = await request(r, user, "POST", "/v1/rewards/redeem", { reward_id: r.rewardId, points_to_spend: 1 });
    const expected: Expected = expectedPoints(m, user) >= 1 ? { ok: [201] } : { refused: [{ status: 409, code: "insufficient_points" }] };
    if (answered(r, `${nameOf(r, user)} redeems a 1-point reward (the model's balance: ${expectedPoints(m, user)})`, res, expected) && res.status === 201) m.redeemed[user]! += 1;
  });

// ---- what a run is made of ----

const user = fc.nat({ max: USERS.length - 1 });
/** Another user than the owner (or seller) mostly, the owner now and then. */
const otherMostly = fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 3, arbitrary: fc.integer({ min: 1, max: USERS.length - 1 }) });
/** The owner mostly, someone else now and then. */
const ownerMostly = fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: USERS.length - 1 }) });
const index = fc.nat({ max: 7 });
/** Within the processor's limits, and just outside them. */
const priceCents = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(50n, 2_000n, 7_525n, 120_000n) }, { weight: 1, arbitrary: fc.constantFrom(49n, 100_000_000n) });
const artworkActor = fc.constantFrom<ArtworkActor>("owner", "artist", "stranger", "admin");

const steps = {
  certify: { weight: 1, arbitrary: fc.nat({ max: 1 }).map(certify) },
  list: { weight: 5, arbitrary: fc.tuple(ownerMostly, index, priceCents, fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, fc.constant(false))).map((a) => list(...a)) },
  cancelListing: { weight: 1, arbitrary: fc.tuple(index, fc.constantFrom<"seller" | "other" | "admin">("seller", "other", "admin")).map((a) => cancelListing(...a)) },
  buy: { weight: 6, arbitrary: fc.tuple(otherMostly, index).map((a) => buy(...a)) },
  offer: { weight: 3, arbitrary: fc.tuple(otherMostly, index, priceCents).map((a) => offer(...a)) },
  acceptOffer: { weight: 3, arbitrary: fc.tuple(index, fc.boolean()).map((a) => acceptOffer(...a)) },
  fractionalize: {
    weight: 2,
    arbitrary: fc
      .tuple(fc.oneof({ weight: 3, arbitrary: ownerMostly }, { weight: 1, arbitrary: fc.constant(ADMIN) }), index, fc.constantFrom(10, 40), fc.constantFrom(1n, 250n, 4_000n))
      .map((a) => fractionalize(...a)),
  },
  buyShares: { weight: 3, arbitrary: fc.tuple(otherMostly, index, fc.integer({ min: 1, max: 12 })).map((a) => buyShares(...a)) },
  transfer: { weight: 2, arbitrary: fc.tuple(index, fc.integer({ min: 1, max: USERS.length - 1 })).map((a) => transfer(...a)) },
  openDispute: { weight: 5, arbitrary: fc.tuple(index, fc.constantFrom<"buyer" | "seller" | "other">("buyer", "buyer", "buyer", "buyer", "seller", "other")).map((a) => openDispute(...a)) },
  resolveDispute: { weight: 5, arbitrary: fc.tuple(index, fc.constantFrom<Resolution>("reject", "refund", "refund", "force", "forceWithoutNote")).map((a) => resolveDispute(...a)) },
  patchArtwork: { weight: 2, arbitrary: fc.tuple(index, artworkActor).map((a) => patchArtwork(...a)) },
  removeArtwork: { weight: 1, arbitrary: fc.tuple(index, artworkActor).map((a) => removeArtwork(...a)) },
  post: { weight: 1, arbitrary: fc.tuple(user, index).map((a) => post(...a)) },
  removePost: { weight: 1, arbitrary: index.map(removePost) },
  redeem: { weight: 1, arbitrary: user.map(redeem) },
} satisfies Record<string, fc.WeightedArbitrary<Step>>;

const chosen = env.MODEL_STEPS ? env.MODEL_STEPS.split(",").map((s) => s.trim()) : Object.keys(steps);
for (const name of chosen) if (!(name in steps)) throw new Error(`MODEL_STEPS: no step ${name} (steps: ${Object.keys(steps).join(", ")})`);

describe("ownership and money, model-based", () => {
  beforeAll(async () => {
    admin = await adminToken(p.api);
    const reward = await p.api.request("POST", "/v1/admin/rewards", { token: admin, body: { name: "Model sticker", points_cost: 1, kind: "code", active: true } });
    expect(reward.status, reward.text).toBe(201);
    rewardId = reward.body.reward_id;
  });

  it(
    "every step answers as the model predicts; owners, money, payees and refunds stay consistent",
    async () => {
      const commands = fc.commands([fc.oneof(...chosen.map((name) => steps[name as keyof typeof steps]))], { maxCommands: COMMANDS, size: "max", replayPath: env.MODEL_REPLAY_PATH });
      console.log(`ownership model: seed ${SEED}, ${RUNS} runs of at most ${COMMANDS} steps (MODEL_SEED=${SEED} replays them)`);
      const details = await fc.check(
        fc.asyncProperty(commands, async (cmds) => {
          let run: Run | undefined;
          await fc.asyncModelRun(async () => {
            const started = await startRun();
            run = started.real;
            return started;
          }, cmds);
          if (env.MODEL_VERBOSE) console.log(`run:\n  ${run!.trace.join("\n  ")}`);
        }),
        { numRuns: RUNS, seed: SEED, path: env.MODEL_PATH, interruptAfterTimeLimit: TIME_LIMIT_MS, includeErrorInReport: true },
      );
      const covered = [...tally].sort(([a], [b]) => a.localeCompare(b)).map(([key, n]) => `${key}: ${n}`);
      console.log(`ownership model: ${details.numRuns} runs${details.interrupted ? " (stopped at MODEL_TIME_LIMIT_MS)" : ""}, ${details.numShrinks} shrinks; steps and answers:\n  ${covered.join("\n  ")}`);
      // The report carries the failing step's error (includeErrorInReport) with the run's trace.
      if (details.failed) throw new Error(fc.defaultReportMessage(details));
    },
    // A run in flight when the time limit passes ends before fast-check stops: room for it.
    TIME_LIMIT_MS + 120_000,
  );
});
