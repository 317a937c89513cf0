/**
 * Moves on one artwork that meet, through HTTP and the chain (real Postgres, the Hardhat chain with
 * the contracts, Ponder, the API): each a finding of issue 38 that today's table refuses or unwinds
 * (docs/ownership-and-money.md#moves). The platform's chain effects pass a gate the test holds
 * (test/support/chain-gate.ts), and two requests are put in a chosen order at the artwork's row lock
 * by holding that lock from the test, so each interleaving is forced, not hoped for.
 */
import { sql, type Transaction } from "kysely";
import { getAddress, type Hex, toFunctionSelector } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artExchangeAbi } from "../../contracts/abi/ArtExchange.ts";
import type { Database } from "../../api/src/db/database.ts";
import { publicClient } from "../support/artworks.ts";
import { useGatedPlatform } from "../support/chain-gate.ts";
import { testEnvironment } from "../support/environment.ts";
import { certifiedArtwork, indexedCertificate, ownerOnChain, walletOf } from "../support/marketplace.ts";
import { waitFor } from "../support/wait.ts";
import { linkedWallet, sendStep, stablecoinBuyer, tokenBalance } from "../support/wallets.ts";
import { createUser, expectProblem, type TestResponse, type TestUser } from "../support/api.ts";

const gated = useGatedPlatform({ MARKETPLACE_SWEEP_INTERVAL_MS: "300" });
const { platform: p, gate } = gated;

const req = (method: string, path: string, token?: string, body?: unknown) => p.api.request(method, path, { token, body });
const list = async (seller: TestUser, artworkId: string, priceUsd: number) => {
  const res = await req("POST", "/v1/marketplace/listings", seller.token, { artwork_id: artworkId, price_usd: priceUsd, accepts_offers: true });
  expect(res.status, res.text).toBe(201);
  return res.body.listing_id as string;
};
const fractionalize = (owner: TestUser, artworkId: string) => req("POST", "/v1/fractional/artworks", owner.token, { artwork_id: artworkId, total_shares: 10, price_per_share_usd: 5 });
const steps = (listingId: string, buyer: string) => req("POST", `/v1/marketplace/listings/${listingId}/onchain-purchase`, undefined, { buyer });
/** A card sale of the listing to `buyer`, completed (its certificate on the buyer's wallet); its transaction id. */
const boughtByCard = async (buyer: TestUser, listingId: string) => {
  const res = await req("POST", `/v1/marketplace/listings/${listingId}/purchase`, buyer.token, { payment_method_id: "pm_card_visa" });
  expect([201, 202], res.text).toContain(res.status);
  await waitFor(async () => (await req("GET", `/v1/marketplace/transactions/${res.body.tx_id}`, buyer.token)).body.status === "completed", { what: `the sale ${res.body.tx_id} completed` });
  return res.body.tx_id as string;
};
const withdrawalOf = (user: TestUser, id: string) => req("GET", `/v1/withdrawals/${id}`, user.token);
const completedWithdrawal = (user: TestUser, id: string) =>
  waitFor(async () => {
    const w = (await withdrawalOf(user, id)).body;
    if (w.status === "failed") throw new Error(`${id} failed: ${w.failure_reason}`);
    return w.status === "completed" && w;
  }, { what: `the withdrawal ${id} completed` });
const expectRefused = (res: TestResponse, reason: string, pending: boolean) => {
  expectProblem(res, 409, "invalid_state");
  expect(res.body.reason, res.text).toBe(reason);
  expect(res.headers.get("retry-after"), `Retry-After of a ${reason} refusal`).toBe(pending ? "5" : null);
};
/** A body naming a removed artwork: out of the catalogue, so no such artwork to list or fractionalize (400, as an unknown id). */
const expectNoSuchArtwork = (res: TestResponse) => {
  expectProblem(res, 400, "validation_failed");
  expect(res.body.errors, res.text).toEqual([{ field: "artwork_id", code: "not_found", message: expect.stringMatching(/^no such artwork \(it was removed/) }]);
};
const pointsOf = async (userId: string) => (await p.db.selectFrom("reward_balances").select("service_points").where("user_id", "=", userId).executeTakeFirst())?.service_points ?? 0;
/** Every outbox event recorded so far handed to its handlers (rewards among them). */
const outboxDrained = () => waitFor(async () => (await p.db.selectFrom("outbox_events").select("id").where("dispatched_at", "is", null).execute()).length === 0, { what: "the outbox drained" });

/**
 * Holds the artwork's row lock from the test while `requests` are sent in turn, each once the one
 * before waits for that lock (so they reach it in that order), then lets them through: their answers.
 */
async function inLockOrder(artworkId: string, requests: (() => Promise<TestResponse>)[]): Promise<TestResponse[]> {
  const waitingOnLocks = async () => {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(p.db);
    return rows[0]!.n;
  };
  let answers: Promise<TestResponse[]> | undefined;
  await p.db.transaction().execute(async (trx: Transaction<Database>) => {
    await trx.selectFrom("artworks").select("id").where("id", "=", artworkId).forUpdate().execute();
    const sent: Promise<TestResponse>[] = [];
    for (const [i, send] of requests.entries()) {
      sent.push(send());
      await waitFor(async () => (await waitingOnLocks()) > i, { what: `request ${i + 1} waiting for the artwork's lock` });
    }
    answers = Promise.all(sent);
  });
  return answers!;
}

describe("moves on an artwork that meet", () => {
  let ada: TestUser;
  let bob: TestUser;
  let admin: string;

  beforeAll(async () => {
    [ada, bob] = await Promise.all([createUser(p.api, { role: "artist", scope: ["write", "rewards:read"] }), createUser(p.api, { scope: ["write", "rewards:read"] })]);
    admin = (await p.api.request("POST", "/v1/auth/token", { body: { api_key: "sk_test_bootstrap_admin_key_0123456789", scope: ["admin"] } })).body.token;
  }, 120_000);

  it("1. a closed listing's on-chain order holds the artwork until its cancellation is mined: the seller cannot fractionalize, remove, relist or withdraw, and a fill before it is the sale", async () => {
    const artworkId = await certifiedArtwork(p, ada);
    const { tokenId } = await indexedCertificate(p, artworkId);
    const listingId = await list(ada, artworkId, 100);
    const wallet = await stablecoinBuyer(150);
    const offer = await steps(listingId, wallet.address);
    expect(offer.status, offer.text).toBe(200);
    const [approve, fill] = offer.body.steps as { id: string; tx: { to: string; data: string } }[];
    expect((await sendStep(wallet.client, approve!.tx)).status).toBe("success");
    const linked = await linkedWallet(p.api, ada.token, privateKeyToAccount(generatePrivateKey()));

    gate.hold();
    expect((await req("DELETE", `/v1/marketplace/listings/${listingId}`, ada.token)).status).toBe(200);
    // The order's cancellation is on its way to the chain, held at the gate: the order can still be filled.
    await gate.waiting(1);
    expectRefused(await fractionalize(ada, artworkId), "order_fillable", true);
    expectRefused(await req("DELETE", `/v1/artworks/${artworkId}`, ada.token), "order_fillable", true);
    expectRefused(await req("POST", "/v1/marketplace/listings", ada.token, { artwork_id: artworkId, price_usd: 120, accepts_offers: false }), "order_fillable", true);
    expectRefused(await req("POST", "/v1/withdrawals", ada.token, { asset: "certificate", artwork_id: artworkId, to: linked }), "order_fillable", true);

    // The wallet's fill lands before the cancellation: the chain made the sale, and the platform records it.
    expect((await sendStep(wallet.client, fill!.tx)).status).toBe("success");
    await gate.release();
    await waitFor(async () => (await req("GET", `/v1/marketplace/listings/${listingId}`)).body.status === "sold", { what: "the fill recorded as the listing's sale" });
    // The chain's answer wins: the cancellation here is undone.
    expect(await p.db.selectFrom("listings").select(["cancelled_at", "cancelled_by"]).where("id", "=", listingId).executeTakeFirstOrThrow()).toEqual({ cancelled_at: null, cancelled_by: null });
    const sale = await p.db.selectFrom("transactions").selectAll().where("type", "=", "sale").where("artwork_id", "=", artworkId).where("status", "=", "completed").executeTakeFirstOrThrow();
    expect(sale).toMatchObject({ payment_method: "onchain", buyer_wallet: wallet.address, seller_id: ada.id, amount_cents: 10_000n });
    expect(await ownerOnChain(tokenId)).toBe(wallet.address);
    await waitFor(async () => (await indexedCertificate(p, artworkId)).owner === wallet.address, { what: "the indexer's owner the wallet" });
    // Nothing of what the seller tried happened: no share class, the artwork in the catalogue, no withdrawal.
    expect((await req("GET", `/v1/fractional/artworks/${artworkId}`)).status).toBe(404);
    expect((await req("GET", `/v1/artworks/${artworkId}`)).status).toBe(200);
    expect(await p.db.selectFrom("withdrawals").select("id").where("artwork_id", "=", artworkId).execute()).toEqual([]);
    // And the seller no longer holds it.
    expectProblem(await fractionalize(ada, artworkId), 403, "forbidden");
  });

  it("1b. once the cancellation is mined, the seller moves on and the old order no longer fills", async () => {
    const artworkId = await certifiedArtwork(p, ada);
    const listingId = await list(ada, artworkId, 90);
    const wallet = await stablecoinBuyer(100);
    const offer = await steps(listingId, wallet.address);
    expect(offer.status, offer.text).toBe(200);
    const [approve, fill] = offer.body.steps as { tx: { to: string; data: string } }[];
    expect((await sendStep(wallet.client, approve!.tx)).status).toBe("success");
    expect((await req("DELETE", `/v1/marketplace/listings/${listingId}`, ada.token)).status).toBe(200);
    await waitFor(async () => (await p.db.selectFrom("chain_operations").select("status").where("key", "=", `order_cancel:${offer.body.order.hash}`).executeTakeFirst())?.status === "confirmed", {
      what: "the order's cancellation confirmed",
    });
    const shares = await fractionalize(ada, artworkId);
    expect([201, 202], shares.text).toContain(shares.status);
    const filled = await sendStep(wallet.client, fill!.tx, 500_000n);
    expect(filled.status).toBe("reverted");
  });

  it("2. removal and listing, removal and fractionalizing: whichever reaches the artwork's lock first, the other is refused", async () => {
    // Removal first: the listing and the share class are refused as `removed`.
    const removedFirst = await certifiedArtwork(p, ada);
    const [removed, listed] = await inLockOrder(removedFirst, [
      () => req("DELETE", `/v1/artworks/${removedFirst}`, ada.token),
      () => req("POST", "/v1/marketplace/listings", ada.token, { artwork_id: removedFirst, price_usd: 100, accepts_offers: false }),
    ]);
    expect(removed!.status, removed!.text).toBe(200);
    expectNoSuchArtwork(listed!);
    expect(await p.db.selectFrom("listings").select("id").where("artwork_id", "=", removedFirst).execute()).toEqual([]);

    const removedBeforeShares = await certifiedArtwork(p, ada);
    const [removedToo, split] = await inLockOrder(removedBeforeShares, [() => req("DELETE", `/v1/artworks/${removedBeforeShares}`, ada.token), () => fractionalize(ada, removedBeforeShares)]);
    expect(removedToo!.status).toBe(200);
    expectNoSuchArtwork(split!);
    expect(await p.db.selectFrom("fractional_artworks").select("artwork_id").where("artwork_id", "=", removedBeforeShares).execute()).toEqual([]);

    // Listing first: the removal is refused as `listed`, and the listing stays on a work that is in the catalogue.
    const listedFirst = await certifiedArtwork(p, ada);
    const [listing, removal] = await inLockOrder(listedFirst, [
      () => req("POST", "/v1/marketplace/listings", ada.token, { artwork_id: listedFirst, price_usd: 100, accepts_offers: false }),
      () => req("DELETE", `/v1/artworks/${listedFirst}`, ada.token),
    ]);
    expect(listing!.status, listing!.text).toBe(201);
    expectRefused(removal!, "listed", false);
    expect((await req("GET", `/v1/artworks/${listedFirst}`)).status).toBe(200);
  });

  it("3. a refund is refused while the buyer's withdrawal is on its way, and once it is mined the certificate is the buyer's own", async () => {
    const artworkId = await certifiedArtwork(p, ada);
    const saleId = await boughtByCard(bob, await list(ada, artworkId, 100));
    const linked = await linkedWallet(p.api, bob.token, privateKeyToAccount(generatePrivateKey()));
    gate.hold();
    const withdrawal = await req("POST", "/v1/withdrawals", bob.token, { asset: "certificate", artwork_id: artworkId, to: linked });
    expect(withdrawal.status, withdrawal.text).toBe(202);
    await gate.waiting(1);
    const dispute = await req("POST", `/v1/marketplace/transactions/${saleId}/disputes`, bob.token, { reason: "Not as described." });
    expect(dispute.status, dispute.text).toBe(201);
    const refund = () => req("POST", `/v1/admin/disputes/${dispute.body.dispute_id}/resolve`, admin, { resolution: "refund", note: "Damaged" });
    expectRefused(await refund(), "withdrawing", true);
    await gate.release();
    await completedWithdrawal(bob, withdrawal.body.id);
    expectRefused(await refund(), "external_wallet", false);
    // Nothing was refunded: the dispute is open, the sale completed, the charge whole.
    expect((await req("GET", `/v1/marketplace/disputes/${dispute.body.dispute_id}`, admin)).body).toMatchObject({ status: "open", refund_status: null });
    expect((await req("GET", `/v1/marketplace/transactions/${saleId}`, bob.token)).body.status).toBe("completed");
    expect(await p.db.selectFrom("sandbox_refunds").select("id").where(sql<string>`charge_id`, "in", p.db.selectFrom("sandbox_charges").select("id").where(sql<string>`metadata->>'transaction_id'`, "=", saleId)).execute()).toEqual([]);
  });

  it("4. no wallet of the seller's account is handed its own listing's order, and a fill by one anyway earns no points", async () => {
    const carol = await createUser(p.api, { role: "artist", scope: ["write"] });
    const artworkId = await certifiedArtwork(p, carol);
    await outboxDrained();
    const certifiedPoints = await pointsOf(carol.id);
    const own = await stablecoinBuyer(200);
    await linkedWallet(p.api, carol.token, own.account);
    const listingId = await list(carol, artworkId, 100);
    expectRefused(await steps(listingId, own.account.address), "own_listing", false);
    expectRefused(await req("POST", `/v1/marketplace/listings/${listingId}/purchase`, carol.token, { payment_method_id: "pm_card_visa" }), "own_listing", false);
    // Orders are for any wallet: the seller's own fills one another wallet was handed.
    const other = await stablecoinBuyer(1);
    const handed = await steps(listingId, other.account.address);
    expect(handed.status, handed.text).toBe(200);
    const fill = handed.body.steps.at(-1) as { tx: { to: string; data: string } };
    expect((await sendStep(own.client, { to: handed.body.order.currency, data: approveData(handed.body.order.exchange, BigInt(handed.body.order.price)) })).status).toBe("success");
    expect((await sendStep(own.client, fill.tx)).status).toBe("success");
    const sale = await waitFor(
      () => p.db.selectFrom("transactions").selectAll().where("type", "=", "sale").where("artwork_id", "=", artworkId).where("status", "=", "completed").executeTakeFirst(),
      { what: "the self-fill recorded" },
    );
    // The chain's sale, recorded as it is: the buyer's account is the seller's.
    expect(sale).toMatchObject({ buyer_id: carol.id, seller_id: carol.id, payment_method: "onchain", buyer_wallet: own.address });
    await outboxDrained();
    expect(await pointsOf(carol.id)).toBe(certifiedPoints);
    expect(await p.db.selectFrom("reward_ledger").select("id").where("source_id", "=", sale.id).execute()).toEqual([]);
  });

  it("5. a removed artwork's certificate stays withdrawable, and its certificate and provenance readable", async () => {
    const artworkId = await certifiedArtwork(p, ada);
    const { tokenId } = await indexedCertificate(p, artworkId);
    await boughtByCard(bob, await list(ada, artworkId, 100));
    expect((await req("DELETE", `/v1/artworks/${artworkId}`, bob.token)).status).toBe(200);
    expect((await req("GET", `/v1/artworks/${artworkId}`)).status).toBe(404);
    const linked = await linkedWallet(p.api, bob.token, privateKeyToAccount(generatePrivateKey()));
    const withdrawal = await req("POST", "/v1/withdrawals", bob.token, { asset: "certificate", artwork_id: artworkId, to: linked });
    expect(withdrawal.status, withdrawal.text).toBe(202);
    await completedWithdrawal(bob, withdrawal.body.id);
    expect(await ownerOnChain(tokenId)).toBe(linked);
    const certificate = await waitFor(async () => {
      const res = await req("GET", `/v1/artworks/${artworkId}/certificate`);
      return res.body.owner?.toLowerCase() === linked && res;
    }, { what: "the certificate's owner the linked wallet" });
    expect(certificate.status).toBe(200);
    expect(certificate.body.removed_at).toEqual(expect.stringMatching(/Z$/));
    expect(certificate.body.provenance.map((e: { event: string }) => e.event)).toEqual(expect.arrayContaining(["created", "certified", "listed", "sold", "deleted", "transferred"]));
    // Still out of the catalogue: it is not listed again.
    expectNoSuchArtwork(await req("POST", "/v1/marketplace/listings", bob.token, { artwork_id: artworkId, price_usd: 100, accepts_offers: false }));
  });

  it("6. a second withdrawal is refused even when the first completes while it reads the certificate's holder", async () => {
    const artworkId = await certifiedArtwork(p, ada);
    const { tokenId } = await indexedCertificate(p, artworkId);
    await boughtByCard(bob, await list(ada, artworkId, 100));
    const linked = await linkedWallet(p.api, bob.token, privateKeyToAccount(generatePrivateKey()));
    const body = { asset: "certificate", artwork_id: artworkId, to: linked };
    // The first withdrawal's transfer waits at the gate; the second request reads the holder from the
    // node before it is mined, and gets that answer only once the first has completed: a stale holder.
    gate.hold();
    const first = await req("POST", "/v1/withdrawals", bob.token, body);
    expect(first.status, first.text).toBe(202);
    await gate.waiting(1);
    let firstDone!: () => void;
    const done = new Promise<void>((resolve) => (firstDone = resolve));
    const ownerOf = toFunctionSelector("ownerOf(uint256)").slice(2);
    const token = tokenId.toString(16).padStart(64, "0");
    const held = gate.holdAnswer((call) => call.method === "eth_call" && JSON.stringify(call.params).includes(ownerOf + token), done);
    const second = req("POST", "/v1/withdrawals", bob.token, body);
    await held;
    await gate.release();
    await completedWithdrawal(bob, first.body.id);
    firstDone();
    expectRefused(await second, "withdrawing", true);
    expect((await p.db.selectFrom("withdrawals").select("id").where("artwork_id", "=", artworkId).execute()).map((w) => w.id)).toEqual([first.body.id]);
    expect(await ownerOnChain(tokenId)).toBe(linked);
  });

  it("7. an on-chain sale pays and records the same whole-cent split as a card sale of the price", async () => {
    const artworkId = await certifiedArtwork(p, ada);
    const { tokenId } = await indexedCertificate(p, artworkId);
    await boughtByCard(bob, await list(ada, artworkId, 10));
    const listingId = await list(bob, artworkId, 0.67);
    const wallet = await stablecoinBuyer(1);
    const offer = await steps(listingId, wallet.address);
    expect(offer.status, offer.text).toBe(200);
    const [seller, artist] = [await walletOf(p, bob.id), await walletOf(p, ada.id)];
    const before = { seller: await tokenBalance(seller), artist: await tokenBalance(artist) };
    for (const step of offer.body.steps) expect((await sendStep(wallet.client, step.tx)).status).toBe("success");
    const [, exactRoyalty] = await publicClient().readContract({ address: testEnvironment().artCertificateAddress, abi: artCertificateAbi, functionName: "royaltyInfo", args: [tokenId, 670_000n] });
    // As a card sale of $0.67 is split: the fee 2.5 % ($0.01675) half up to $0.02, the royalty down to a whole cent.
    const royaltyCents = exactRoyalty / 10_000n;
    const feeCents = 2n;
    expect((await tokenBalance(artist)) - before.artist, "the royalty paid").toBe(royaltyCents * 10_000n);
    expect((await tokenBalance(seller)) - before.seller, "the seller's proceeds").toBe((67n - feeCents - royaltyCents) * 10_000n);
    const sale = await waitFor(
      () => p.db.selectFrom("transactions").selectAll().where("type", "=", "sale").where("artwork_id", "=", artworkId).where("payment_method", "=", "onchain").where("status", "=", "completed").executeTakeFirst(),
      { what: "the on-chain sale recorded" },
    );
    expect({ amount: sale.amount_cents, fee: sale.fee_cents, royalty: sale.royalty_cents, payout: sale.payout_cents }).toEqual({ amount: 67n, fee: feeCents, royalty: royaltyCents, payout: 67n - feeCents - royaltyCents });
    const exchange = testEnvironment().artExchangeAddress;
    expect(await publicClient().readContract({ address: exchange, abi: artExchangeAbi, functionName: "unitsPerCent" })).toBe(10_000n);
  });

  it("8. a discussion earns its author what a post does, and its removal takes it back", async () => {
    const author = await createUser(p.api, { scope: ["write", "rewards:read"] });
    const before = await pointsOf(author.id);
    const created = await req("POST", "/v1/community/discussions", author.token, { title: "Glazes", content: "Which glazes age well?", tags: ["ceramics"] });
    expect(created.status, created.text).toBe(201);
    await waitFor(async () => (await pointsOf(author.id)) === before + 10, { what: "the discussion's 10 points" });
    expect((await req("DELETE", `/v1/community/posts/${created.body.post_id}`, author.token)).status).toBe(200);
    await waitFor(async () => (await pointsOf(author.id)) === before, { what: "the discussion's points taken back" });
  });
});

/** ERC-20 approve(spender, amount)'s calldata. */
function approveData(spender: string, amount: bigint): Hex {
  return `0x095ea7b3${getAddress(spender).slice(2).toLowerCase().padStart(64, "0")}${amount.toString(16).padStart(64, "0")}`;
}
