/**
 * On-chain purchases on real pieces (Postgres, the Hardhat chain with ArtExchange and the local
 * payment token, Ponder, the API): a wallet with no account buys a listed artwork by sending the
 * steps' transactions, and the fill becomes the same records as a card sale; exactly one sale per
 * listing when wallets race each other or a card buyer.
 */
import { decodeErrorResult, erc20Abi, getAddress, type Hex, parseAbi } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artExchangeAbi } from "../../contracts/abi/ArtExchange.ts";
import { publicClient, useArtworkPlatform } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { certifiedArtwork, indexedCertificate, ownerOnChain, walletOf } from "../support/marketplace.ts";
import { holdCalls } from "../support/hold.ts";
import { signalled, waitFor } from "../support/wait.ts";
import { linkedWallet, sendStep, stablecoinBuyer, tokenBalance } from "../support/wallets.ts";
import { createUser, expectProblem, type TestUser } from "../support/api.ts";

const p = useArtworkPlatform();
const env = () => testEnvironment();

const steps = (listingId: string, buyer: string) => p.api.request("POST", `/v1/marketplace/listings/${listingId}/onchain-purchase`, { body: { buyer } });
const list = async (seller: TestUser, artworkId: string, priceUsd: number) => {
  const res = await p.api.request("POST", "/v1/marketplace/listings", { token: seller.token, body: { artwork_id: artworkId, price_usd: priceUsd, accepts_offers: true } });
  expect(res.status).toBe(201);
  return res.body.listing_id as string;
};
const cardPurchase = (buyer: TestUser, listingId: string) =>
  p.api.request("POST", `/v1/marketplace/listings/${listingId}/purchase`, { token: buyer.token, body: { payment_method_id: "pm_card_visa" } });
const salesOf = (listingId: string) => p.db.selectFrom("sales").selectAll().where("listing_id", "=", listingId).orderBy("created_at").execute();
/** The listing's sales once one completed and none is under way (a card sale that lost may close before the fill that won is recorded). */
const settledSales = (listingId: string) =>
  waitFor(async () => {
    const rows = await salesOf(listingId);
    return rows.some((s) => s.status === "completed") && rows.every((s) => !["pending_payment", "paid"].includes(s.status)) && rows;
  }, { timeoutMs: 30_000, what: `a sale of ${listingId} completed` });
const revertOf = (r: { revert?: Hex }) => decodeErrorResult({ abi: artExchangeAbi, data: r.revert! }).errorName;
const erc20Errors = parseAbi([
  "error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed)",
  "error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed)",
]);
/** What a refused step says: the exchange's, the token's or the certificate's error, by name and arguments. */
const refusal = (r: { revert?: Hex }) => {
  try {
    const { errorName, args } = decodeErrorResult({ abi: [...artExchangeAbi, ...artCertificateAbi, ...erc20Errors], data: r.revert! });
    return `${errorName}(${(args ?? []).join(", ")})`;
  } catch {
    return r.revert ?? "no revert data";
  }
};
/** Sends the steps in turn, each expected to succeed (a refusal is reported by name); their receipts. */
const buy = async (client: Parameters<typeof sendStep>[0], list: { id: string; tx: { to: string; data: string } }[]) => {
  const receipts = [];
  for (const step of list) {
    const receipt = await sendStep(client, step.tx);
    expect(receipt.status, `step ${step.id}: ${refusal(receipt)}`).toBe("success");
    receipts.push(receipt);
  }
  return receipts;
};
const orderStatus = (hash: string) => publicClient().readContract({ address: env().artExchangeAddress, abi: artExchangeAbi, functionName: "orderStatus", args: [hash as `0x${string}`] });

describe("on-chain purchases", () => {
  let artist: TestUser;
  let collector: TestUser;
  let rival: TestUser;

  beforeAll(async () => {
    [artist, collector, rival] = await Promise.all([createUser(p.api, { role: "artist" }), createUser(p.api), createUser(p.api)]);
  }, 120_000);

  it("a wallet buys a resale through the steps alone: it holds the certificate, the money is split exactly, and the sale is recorded as a card sale is", async () => {
    // The collector bought the artwork by card and lists it again: a secondary sale, with a royalty.
    const artworkId = await certifiedArtwork(p, artist);
    const { tokenId } = await indexedCertificate(p, artworkId);
    const first = await list(artist, artworkId, 80);
    expect([201, 202]).toContain((await cardPurchase(collector, first)).status);
    expect((await settledSales(first)).map((s) => s.status)).toEqual(["completed"]);
    const listingId = await list(collector, artworkId, 125.37);
    const seller = await walletOf(p, collector.id);
    const artistWallet = await walletOf(p, artist.id);

    const buyer = await stablecoinBuyer(200);
    // Anonymous: a wallet needs no account.
    const res = await steps(listingId, buyer.account.address);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ listing_id: listingId, buyer: buyer.account.address, chain_id: 31337, expires_at: expect.stringMatching(/Z$/) });
    const price = 125_370_000n;
    expect(res.body.order).toMatchObject({ exchange: getAddress(env().artExchangeAddress), currency: getAddress(env().paymentTokenAddress), price: price.toString(), price_usd: 125.37, seller: getAddress(seller), token_id: tokenId.toString() });
    expect(res.body.steps.map((s: { id: string }) => s.id)).toEqual(["approve", "fill"]);
    const hashOnChain = await publicClient().readContract({
      address: env().artExchangeAddress,
      abi: artExchangeAbi,
      functionName: "hashOrder",
      args: [{ listingId, seller: getAddress(seller), buyer: "0x0000000000000000000000000000000000000000", tokenId, currency: getAddress(env().paymentTokenAddress), price, feeBps: res.body.order.fee_bps, expiry: BigInt(Date.parse(res.body.expires_at) / 1000) }],
    });
    expect(res.body.order.hash).toBe(hashOnChain);

    const [royaltyReceiver, exactRoyalty] = await publicClient().readContract({ address: env().artCertificateAddress, abi: artCertificateAbi, functionName: "royaltyInfo", args: [tokenId, price] });
    expect(royaltyReceiver.toLowerCase()).toBe(artistWallet);
    expect(exactRoyalty).toBeGreaterThan(0n);
    // In whole cents, as a card sale of $125.37 is split: the royalty rounded down, the fee (2.5 %: $3.13425) half up.
    const royalty = (exactRoyalty / 10_000n) * 10_000n;
    const feeCents = (12_537n * BigInt(res.body.order.fee_bps) + 5_000n) / 10_000n;
    const fee = feeCents * 10_000n;
    const before = { seller: await tokenBalance(seller), artist: await tokenBalance(artistWallet), buyer: await tokenBalance(buyer.address) };
    const receipts = await buy(buyer.client, res.body.steps);
    const fillTx = receipts[1]!.transactionHash;

    expect(await ownerOnChain(tokenId)).toBe(buyer.address);
    expect((await tokenBalance(seller)) - before.seller).toBe(price - fee - royalty);
    expect((await tokenBalance(artistWallet)) - before.artist).toBe(royalty);
    expect(before.buyer - (await tokenBalance(buyer.address))).toBe(price);

    // The indexer's fill becomes the sale: for the seller, paid on-chain, with its royalty payout.
    const sale = await waitFor(async () => {
      const got = await p.api.request("GET", "/v1/marketplace/transactions?role=seller", { token: collector.token });
      return got.body.data.find((t: { type: string; status: string; payment_method: string }) => t.type === "sale" && t.payment_method === "onchain" && t.status === "completed");
    }, { timeoutMs: 30_000, what: "the on-chain sale recorded" });
    expect(sale).toMatchObject({
      artwork_id: artworkId,
      amount_usd: 125.37,
      buyer_id: null,
      buyer_wallet: buyer.address,
      seller_id: collector.id,
      recipient_id: collector.id,
      on_chain_tx: fillTx,
      platform_fee_usd: Number(fee / 10_000n) / 100,
      royalty_usd: Number(royalty / 10_000n) / 100,
    });
    // What the chain paid the seller, to the cent.
    expect(Math.round(sale.payout_usd * 100)).toBe(Number((price - fee - royalty) / 10_000n));
    const payout = await p.db.selectFrom("transactions").selectAll().where("parent_id", "=", sale.tx_id).executeTakeFirstOrThrow();
    expect(payout).toMatchObject({ type: "royalty_payout", status: "completed", recipient_id: artist.id, payment_method: "onchain", amount_cents: royalty / 10_000n });
    expect((await p.api.request("GET", `/v1/marketplace/listings/${listingId}`)).body.status).toBe("sold");
    const { provenance } = (await p.api.request("GET", `/v1/artworks/${artworkId}`)).body;
    expect(provenance.filter((e: { tx?: string }) => e.tx === fillTx).map((e: { event: string }) => e.event)).toEqual(["sold", "transferred"]);
    expect(provenance.find((e: { event: string; tx?: string }) => e.event === "sold" && e.tx === fillTx)).toMatchObject({ event: "sold", tx: fillTx, listing_id: listingId, transaction_id: sale.tx_id, price_usd: 125.37, to: buyer.address, seller_id: collector.id });
    // payment.completed concerns the seller only (the wallet is nobody's account).
    const events = await p.db.selectFrom("outbox_events").select(["audience", "payload"]).where("event_type", "=", "payment.completed").execute();
    const mine = events.filter((e) => (e.payload as { tx_id: string }).tx_id === sale.tx_id);
    expect(mine).toEqual([{ audience: [collector.id], payload: expect.objectContaining({ payment_method: "onchain", buyer_wallet: buyer.address, on_chain_tx: fillTx }) }]);
    const ledger = await p.db.selectFrom("audit_ledger").select(["kind"]).where("subject_id", "=", sale.tx_id).execute();
    expect(ledger.map((e) => e.kind).sort()).toEqual(["payment.received_onchain", "sale.completed"]);
    // The order is filled on-chain and here; asking again is refused (the listing is sold).
    expect(await orderStatus(res.body.order.hash)).toBe(1);
    expectProblem(await steps(listingId, buyer.account.address), 409, "invalid_state");
  }, 120_000);

  it("two wallets racing one order: one fill succeeds on-chain, one sale", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const { tokenId } = await indexedCertificate(p, artworkId);
    const listingId = await list(artist, artworkId, 40);
    const [a, b] = await Promise.all([stablecoinBuyer(50), stablecoinBuyer(50)]);
    const [stepsA, stepsB] = await Promise.all([steps(listingId, a.account.address), steps(listingId, b.account.address)]);
    // Both are handed the same order.
    expect(stepsA.body.order.hash).toBe(stepsB.body.order.hash);
    await Promise.all([sendStep(a.client, stepsA.body.steps[0].tx), sendStep(b.client, stepsB.body.steps[0].tx)]);
    const fills = await Promise.all([sendStep(a.client, stepsA.body.steps[1].tx, 400_000n), sendStep(b.client, stepsB.body.steps[1].tx, 400_000n)]);
    expect(fills.map((r) => r.status).sort()).toEqual(["reverted", "success"]);
    expect(revertOf(fills.find((r) => r.status === "reverted")!)).toMatch(/^ArtExchange(OrderFilled|SellerNotOwner)$/);
    const winner = fills[0]!.status === "success" ? a : b;
    expect(await ownerOnChain(tokenId)).toBe(winner.address);
    const sales = await waitFor(async () => {
      const rows = await salesOf(listingId);
      return rows.length > 0 && rows;
    }, { what: "the fill recorded" });
    expect(sales.map((s) => ({ status: s.status, buyer_wallet: s.buyer_wallet }))).toEqual([{ status: "completed", buyer_wallet: winner.address }]);
    // The loser paid nothing.
    const loser = winner === a ? b : a;
    expect(await tokenBalance(loser.address)).toBe(50_000_000n);
  }, 120_000);

  it("a fill mined first makes a card purchase refused; a card sale first cancels the order, and the later fill reverts: one sale each time", async () => {
    // The wallet first: the card buyer is refused (the certificate left the seller's wallet), one on-chain sale.
    const fillFirst = await certifiedArtwork(p, artist);
    const fillListing = await list(artist, fillFirst, 30);
    const wallet = await stablecoinBuyer(100);
    const walletSteps = await steps(fillListing, wallet.account.address);
    await buy(wallet.client, walletSteps.body.steps);
    const refused = await cardPurchase(rival, fillListing);
    expect(refused.status).toBe(409);
    expect((await settledSales(fillListing)).map((s) => [s.payment_method, s.status])).toEqual([["onchain", "completed"]]);

    // The card first: the order is cancelled on-chain when the card sale starts, and a wallet's fill later reverts.
    const cardFirst = await certifiedArtwork(p, artist);
    const cardListing = await list(artist, cardFirst, 30);
    const late = await steps(cardListing, wallet.account.address);
    expect(late.status).toBe(200);
    expect([201, 202]).toContain((await cardPurchase(rival, cardListing)).status);
    expect((await settledSales(cardListing)).map((s) => [s.payment_method, s.status])).toEqual([["card", "completed"]]);
    await waitFor(async () => (await orderStatus(late.body.order.hash)) === 2, { timeoutMs: 30_000, what: "the order cancelled on-chain" });
    const balance = await tokenBalance(wallet.address);
    const approve = late.body.steps.find((s: { id: string }) => s.id === "approve");
    if (approve) await sendStep(wallet.client, approve.tx);
    const fill = late.body.steps.find((s: { id: string }) => s.id === "fill");
    const lateFill = await sendStep(wallet.client, fill.tx, 400_000n);
    expect(lateFill.status).toBe("reverted");
    expect(revertOf(lateFill)).toBe("ArtExchangeOrderCancelled");
    expect(await tokenBalance(wallet.address)).toBe(balance);
    expect((await p.db.selectFrom("exchange_orders").select("status").where("order_hash", "=", late.body.order.hash).executeTakeFirstOrThrow()).status).toBe("cancelled");
  }, 120_000);

  it("a card purchase and a fill racing end with exactly one sale; a card sale that lost is refunded", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const { tokenId } = await indexedCertificate(p, artworkId);
    const listingId = await list(artist, artworkId, 60);
    const wallet = await stablecoinBuyer(100);
    const got = await steps(listingId, wallet.account.address);
    await sendStep(wallet.client, got.body.steps[0].tx);
    const [card, fill] = await Promise.all([cardPurchase(rival, listingId), sendStep(wallet.client, got.body.steps[1].tx, 400_000n)]);
    expect([201, 202, 409]).toContain(card.status);
    const sales = await settledSales(listingId);
    const completed = sales.filter((s) => s.status === "completed");
    expect(completed).toHaveLength(1);
    const owner = await ownerOnChain(tokenId);
    if (completed[0]!.payment_method === "onchain") {
      expect(fill.status).toBe("success");
      expect(owner).toBe(wallet.address);
      // A card sale that had started lost: closed by the fill's record (lost_to_fill) or by its own
      // transfer's refusal on-chain (settlement_failed), and a charge it made goes back.
      for (const lost of sales.filter((s) => s.payment_method === "card")) {
        expect(lost.status).toMatch(/^(lost_to_fill|settlement_failed)$/);
        const t = await waitFor(async () => {
          const row = await p.db.selectFrom("transactions").selectAll().where("id", "=", lost.id).executeTakeFirstOrThrow();
          return row.status !== "pending" && row;
        }, { timeoutMs: 30_000, what: "the lost card sale's purchase settled" });
        expect(t.status).toBe("failed");
        expect(t.failure_code).toMatch(/^(sold_onchain|settlement_failed)$/);
        if (t.charge_id) expect(t.refund_id).not.toBeNull();
      }
    } else {
      expect(fill.status).toBe("reverted");
      expect(owner).toBe(await walletOf(p, rival.id));
      expect(await tokenBalance(wallet.address)).toBe(100_000_000n);
    }
  }, 120_000);

  it("cancelling a listing cancels its order on-chain: the fill reverts", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const listingId = await list(artist, artworkId, 25);
    const wallet = await stablecoinBuyer(30);
    const got = await steps(listingId, wallet.account.address);
    expect((await p.api.request("DELETE", `/v1/marketplace/listings/${listingId}`, { token: artist.token })).status).toBe(200);
    await waitFor(async () => (await orderStatus(got.body.order.hash)) === 2, { timeoutMs: 30_000, what: "the order cancelled on-chain" });
    await sendStep(wallet.client, got.body.steps[0].tx);
    const fill = await sendStep(wallet.client, got.body.steps[1].tx, 400_000n);
    expect(fill.status).toBe("reverted");
    expect(revertOf(fill)).toBe("ArtExchangeOrderCancelled");
    expect(await salesOf(listingId)).toEqual([]);
  }, 120_000);

  it("a fill mined before its listing is cancelled here is the listing's sale: the cancellation is refused (the chain sold it), and later fills are still recorded", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const listingId = await list(artist, artworkId, 45);
    const wallet = await stablecoinBuyer(50);
    const got = await steps(listingId, wallet.account.address);
    // The fill's projection is held until the seller has tried to cancel the listing here: the chain
    // already moved the certificate to the wallet, so the cancellation is refused.
    const projection = holdCalls(p.api.server.platform.services.sales.onchainFills, "apply");
    try {
      await buy(wallet.client, got.body.steps);
      await signalled(projection.reached(1), "the fill's projection held");
      const cancelled = await p.api.request("DELETE", `/v1/marketplace/listings/${listingId}`, { token: artist.token });
      expectProblem(cancelled, 409, "invalid_state");
      expect(cancelled.body.reason).toBe("token_moved");
    } finally {
      projection.restore();
    }
    expect((await settledSales(listingId)).map((s) => [s.payment_method, s.status, s.buyer_wallet])).toEqual([["onchain", "completed", wallet.address]]);
    const listing = (await p.api.request("GET", `/v1/marketplace/listings/${listingId}`)).body;
    expect(listing).toMatchObject({ status: "sold" });
    expect(await p.db.selectFrom("listings").select(["cancelled_at", "cancelled_by"]).where("id", "=", listingId).executeTakeFirstOrThrow()).toEqual({ cancelled_at: null, cancelled_by: null });
    // The projection did not stop at it: the next listing's fill is recorded too.
    const next = await list(artist, await certifiedArtwork(p, artist), 15);
    const buyer = await stablecoinBuyer(20);
    await buy(buyer.client, (await steps(next, buyer.account.address)).body.steps);
    expect((await settledSales(next)).map((s) => [s.payment_method, s.status])).toEqual([["onchain", "completed"]]);
  }, 120_000);

  it("a fill its projection cannot record makes /readyz degraded, naming the projection, its block and why, until the fill is recorded", async () => {
    const listingId = await list(artist, await certifiedArtwork(p, artist), 30);
    const wallet = await stablecoinBuyer(35);
    const got = await steps(listingId, wallet.account.address);
    const fills = p.api.server.platform.services.sales.onchainFills;
    const apply = Object.getOwnPropertyDescriptor(fills, "apply")!;
    Object.defineProperty(fills, "apply", { configurable: true, writable: true, value: async () => Promise.reject(new Error("the test refuses to record fills")) });
    const readyz = () => p.api.request("GET", "/readyz");
    try {
      const receipts = await buy(wallet.client, got.body.steps);
      const fillBlock = (await publicClient().getTransactionReceipt({ hash: receipts[1]!.transactionHash! })).blockNumber;
      const degraded = await waitFor(async () => {
        const res = await readyz();
        return res.body?.checks?.projections?.failing?.length > 0 && res;
      }, { timeoutMs: 30_000, what: "the failing projection on /readyz" });
      expect(degraded.status).toBe(200);
      expect(degraded.body.status).toBe("degraded");
      expect(degraded.body.checks.projections).toMatchObject({
        status: "degraded",
        failing: [{ consumer: fills.consumer, failing_since: expect.any(String), error: "the test refuses to record fills" }],
      });
      expect(degraded.body.checks.projections.failing[0].block).toBeLessThan(Number(fillBlock));
      expect(await salesOf(listingId)).toEqual([]);
    } finally {
      Object.defineProperty(fills, "apply", apply);
    }
    expect((await settledSales(listingId)).map((s) => [s.payment_method, s.status])).toEqual([["onchain", "completed"]]);
    const recovered = await waitFor(async () => {
      const res = await readyz();
      return res.body?.checks?.projections?.status === "ok" && res;
    }, { timeoutMs: 30_000, what: "/readyz without the failing projection" });
    expect(recovered.body.checks.projections.failing).toBeUndefined();
  }, 120_000);

  it("a declined card purchase leaves the listing active with a new order: the one it cancelled is never handed out again", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const listingId = await list(artist, artworkId, 35);
    const wallet = await stablecoinBuyer(40);
    const before = await steps(listingId, wallet.account.address);
    const declined = await p.api.request("POST", `/v1/marketplace/listings/${listingId}/purchase`, { token: rival.token, body: { payment_method_id: "pm_card_chargeDeclined" } });
    expect(declined.status).toBe(402);
    const after = await steps(listingId, wallet.account.address);
    expect(after.status).toBe(200);
    expect(after.body.order.hash).not.toBe(before.body.order.hash);
    await waitFor(async () => (await orderStatus(before.body.order.hash)) === 2, { timeoutMs: 30_000, what: "the first order cancelled on-chain" });
    await buy(wallet.client, after.body.steps);
    expect((await settledSales(listingId)).map((s) => [s.payment_method, s.status])).toEqual([["card", "payment_failed"], ["onchain", "completed"]]);
  }, 120_000);

  it("an order expires by the chain's clock: with the chain a quarter of an hour ahead of ours, its steps still fill", async () => {
    const listingId = await list(artist, await certifiedArtwork(p, artist), 20);
    const wallet = await stablecoinBuyer(25);
    // A local node that mines more than a block a second runs ahead of the wall clock; here at once,
    // by more than an order's ten minutes (this file is the chain's only filler of orders).
    await publicClient().request({ method: "evm_increaseTime", params: [900] } as never);
    await publicClient().request({ method: "evm_mine", params: [] } as never);
    const head = await publicClient().getBlock({ blockTag: "latest" });
    expect(Number(head.timestamp)).toBeGreaterThan(Date.now() / 1000 + 600);
    const got = await steps(listingId, wallet.account.address);
    expect(got.status).toBe(200);
    const expiry = Date.parse(got.body.expires_at) / 1000;
    expect(expiry).toBeGreaterThanOrEqual(Number(head.timestamp) + 600);
    await buy(wallet.client, got.body.steps);
    expect((await settledSales(listingId)).map((s) => [s.payment_method, s.status])).toEqual([["onchain", "completed"]]);
  }, 120_000);

  it("a custodial seller withdraws the proceeds of its on-chain sales to a linked wallet: once per withdrawal, never more than it holds", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const listingId = await list(artist, artworkId, 50);
    const buyer = await stablecoinBuyer(60);
    await buy(buyer.client, (await steps(listingId, buyer.account.address)).body.steps);
    const custodial = await walletOf(p, artist.id);
    const to = await linkedWallet(p.api, artist.token, privateKeyToAccount(generatePrivateKey()));
    const withdraw = (amount: number, token = artist.token) => p.api.request("POST", "/v1/withdrawals", { token, body: { asset: "payment_token", amount, to } });
    const balance = await tokenBalance(custodial);
    const balanceUsd = Number(balance / 10_000n) / 100;
    expect(balanceUsd).toBeGreaterThanOrEqual(48.75); // this sale's proceeds at least (less the 2.5 % fee)

    const tooMuch = await withdraw(balanceUsd + 0.01);
    expectProblem(tooMuch, 409, "invalid_state");
    expect(tooMuch.body.reason).toBe("insufficient_balance");
    expectProblem(await p.api.request("POST", "/v1/withdrawals", { token: artist.token, body: { asset: "payment_token", amount: 1, artwork_id: artworkId, to } }), 400, "validation_failed");
    // Two withdrawals of most of it at once: one fits.
    const most = Math.floor(balanceUsd * 60) / 100;
    const racing = await Promise.all([withdraw(most), withdraw(most)]);
    expect(racing.map((r) => r.status).sort()).toEqual([202, 409]);
    const created = racing.find((r) => r.status === 202)!.body;
    expect(created).toMatchObject({ asset: "payment_token", artwork_id: null, quantity: 0, amount: most, to: getAddress(to), status: "pending" });
    const done = await waitFor(async () => {
      const got = await p.api.request("GET", `/v1/withdrawals/${created.id}`, { token: artist.token });
      return got.body.status !== "pending" && got.body;
    }, { timeoutMs: 30_000, what: "the payment token withdrawn" });
    const units = BigInt(Math.round(most * 100)) * 10_000n;
    expect(done).toMatchObject({ status: "completed", tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await tokenBalance(to)).toBe(units);
    expect(await tokenBalance(custodial)).toBe(balance - units);
    const events = await p.db.selectFrom("outbox_events").select(["audience", "payload"]).where("event_type", "=", "asset.withdrawn").execute();
    expect(events.filter((e) => (e.payload as { withdrawal_id: string }).withdrawal_id === created.id)).toEqual([{ audience: [artist.id], payload: expect.objectContaining({ asset: "payment_token", amount: most, tx_hash: done.tx_hash }) }]);
    // Another user does not see it; anonymous callers are refused.
    expectProblem(await p.api.request("GET", `/v1/withdrawals/${created.id}`, { token: rival.token }), 404, "not_found");
    expectProblem(await p.api.request("POST", "/v1/withdrawals", { body: { asset: "payment_token", amount: 1, to } }), 401, "unauthenticated");
  }, 120_000);

  it("refuses what cannot be bought, with problems, and signs nothing", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const listingId = await list(artist, artworkId, 20);
    expectProblem(await steps("lst_00000000000000000000000000", "0x8ba1f109551bD432803012645Ac136ddd64DBA72"), 404, "not_found");
    expectProblem(await p.api.request("POST", `/v1/marketplace/listings/${listingId}/onchain-purchase`, { body: { buyer: "0x123" } }), 400, "validation_failed");
    expectProblem(await p.api.request("POST", `/v1/marketplace/listings/${listingId}/onchain-purchase`, { body: {} }), 400, "validation_failed");
    // The seller's own wallet.
    expectProblem(await steps(listingId, await walletOf(p, artist.id)), 409, "invalid_state");
    expect(await p.db.selectFrom("exchange_orders").select("order_hash").where("listing_id", "=", listingId).execute()).toEqual([]);
    // A token holding no allowance gets both steps; one that approved enough gets the fill alone.
    const wallet = await stablecoinBuyer(20);
    const first = await steps(listingId, wallet.account.address);
    await sendStep(wallet.client, first.body.steps[0].tx);
    const allowance = await publicClient().readContract({ address: env().paymentTokenAddress, abi: erc20Abi, functionName: "allowance", args: [wallet.account.address, env().artExchangeAddress] });
    expect(allowance).toBe(20_000_000n);
    const again = await steps(listingId, wallet.account.address);
    expect(again.body.steps.map((s: { id: string }) => s.id)).toEqual(["fill"]);
    expect(again.body.order.hash).toBe(first.body.order.hash);
  }, 120_000);
});
