/**
 * Buy-now, offers, settlement on-chain, transactions and disputes on real pieces: Postgres, the
 * Hardhat chain with ArtCertificate and ArtMarket, Ponder, the sandbox processor and the API over HTTP.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { publicClient, useArtworkPlatform } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { certificateCallFrom, certifiedArtwork, indexedCertificate, ownerOnChain, walletClientOf, walletOf } from "../support/marketplace.ts";
import { waitFor } from "../support/wait.ts";
import { adminToken, createUser, expectProblem, type TestUser } from "../support/api.ts";

const p = useArtworkPlatform({ MARKETPLACE_SWEEP_INTERVAL_MS: "300", MARKETPLACE_CHARGE_ATTEMPTS: "2", PAYMENT_RETRY_BASE_MS: "5" });

type Art = "buy" | "race" | "decline" | "transient" | "offers" | "offerRace" | "cancelRace" | "expire" | "moved" | "dispute" | "external" | "revoked";

describe("marketplace sales", () => {
  let artist: TestUser;
  let collector: TestUser;
  let collector2: TestUser;
  let stranger: TestUser;
  let reader: TestUser;
  let external: TestUser;
  let admin: string;
  const art = {} as Record<Art, string>;

  const list = async (owner: TestUser, artworkId: string, price: number, acceptsOffers = true) => {
    const res = await p.api.request("POST", "/v1/marketplace/listings", { token: owner.token, body: { artwork_id: artworkId, price_usd: price, accepts_offers: acceptsOffers } });
    expect(res.status, res.text).toBe(201);
    return res.body.listing_id as string;
  };
  const purchase = (buyer: TestUser, listingId: string, card = "pm_card_visa", key?: string) =>
    p.api.request("POST", `/v1/marketplace/listings/${listingId}/purchase`, { token: buyer.token, body: { payment_method_id: card }, headers: key ? { "Idempotency-Key": key } : {} });
  const offer = (buyer: TestUser, body: Record<string, unknown>) => p.api.request("POST", "/v1/marketplace/offers", { token: buyer.token, body: { payment_method_id: "pm_card_visa", ...body } });
  const move = (user: TestUser | string, offerId: string, action: "accept" | "reject" | "withdraw") =>
    p.api.request("POST", `/v1/marketplace/offers/${offerId}/${action}`, { token: typeof user === "string" ? user : user.token });
  const transaction = (user: TestUser | string, id: string) => p.api.request("GET", `/v1/marketplace/transactions/${id}`, { token: typeof user === "string" ? user : user.token });
  const completed = (user: TestUser, id: string) =>
    waitFor(
      async () => {
        const t = await transaction(user, id);
        return t.body.status === "completed" && t.body;
      },
      { timeoutMs: 20_000, what: `completion of ${id}` },
    );
  const eventsOf = async (type: string) =>
    (await p.db.selectFrom("outbox_events").select(["event_type", "payload", "audience"]).where("event_type", "=", type).execute()).map((e) => ({
      payload: (typeof e.payload === "string" ? JSON.parse(e.payload) : e.payload) as Record<string, unknown>,
      audience: [...e.audience].sort(),
    }));
  const chargesOf = async (saleId: string) => Number((await p.db.selectFrom("sandbox_charges").select((eb) => eb.fn.countAll().as("n")).where("idempotency_key", "=", `sale:${saleId}`).executeTakeFirstOrThrow()).n);

  beforeAll(async () => {
    [artist, collector, collector2, stranger, reader, external, admin] = await Promise.all([
      createUser(p.api, { role: "artist", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["artworks:read", "users:read"] }),
      createUser(p.api, { role: "artist", scope: ["write"] }),
      adminToken(p.api),
    ]);
    const names: Art[] = ["buy", "race", "decline", "transient", "offers", "offerRace", "cancelRace", "expire", "moved", "dispute", "external", "revoked"];
    const ids = await Promise.all(names.map((name) => certifiedArtwork(p, name === "external" || name === "revoked" ? external : artist)));
    names.forEach((name, i) => (art[name] = ids[i]!));
  }, 120_000);

  it("buy now: one charge, the certificate moves on-chain to the buyer, the sale completes with its records", async () => {
    const listingId = await list(artist, art.buy, 100);
    const key = `buy-${listingId}`;
    const res = await purchase(collector, listingId, "pm_card_visa", key);
    expect([201, 202], res.text).toContain(res.status);
    const saleId = res.body.tx_id as string;
    const sale = await completed(collector, saleId);
    expect(sale).toMatchObject({ type: "sale", amount_usd: 100, currency: "USD", buyer_id: collector.id, seller_id: artist.id, recipient_id: artist.id, platform_fee_usd: 2.5, royalty_usd: 0, payout_usd: 97.5 });
    expect(sale.on_chain_tx).toMatch(/^0x[0-9a-f]{64}$/);

    // The chain says the buyer owns it; the indexer agrees; the listing is sold.
    const { tokenId } = await indexedCertificate(p, art.buy);
    expect(await ownerOnChain(tokenId)).toBe(await walletOf(p, collector.id));
    await waitFor(async () => (await indexedCertificate(p, art.buy)).owner === (await walletOf(p, collector.id)));
    expect((await p.api.request("GET", `/v1/marketplace/listings/${listingId}`)).body.status).toBe("sold");

    // The same key answers the same sale, and the buyer was charged once.
    const replay = await purchase(collector, listingId, "pm_card_visa", key);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body.tx_id).toBe(saleId);
    expect(await chargesOf(saleId)).toBe(1);

    // Both parties list it; others cannot see it.
    for (const [user, role] of [[collector, "buyer"], [artist, "seller"]] as const) {
      const mine = await p.api.request("GET", `/v1/marketplace/transactions?role=${role}`, { token: user.token });
      expect(mine.status).toBe(200);
      expect(mine.body.data.map((t: { tx_id: string }) => t.tx_id)).toContain(saleId);
    }
    expect((await p.api.request("GET", "/v1/marketplace/transactions", { token: stranger.token })).body.data.map((t: { tx_id: string }) => t.tx_id)).not.toContain(saleId);
    expectProblem(await transaction(stranger, saleId), 404, "not_found");
    expect((await transaction(admin, saleId)).status).toBe(200);
    expectProblem(await p.api.request("GET", "/v1/marketplace/transactions"), 401, "unauthenticated");
    expectProblem(await p.api.request("GET", "/v1/marketplace/transactions", { token: reader.token }), 403, "insufficient_scope");

    // payment.completed, to the buyer and the seller only; provenance shows the sale.
    const [event] = (await eventsOf("payment.completed")).filter((e) => e.payload.tx_id === saleId);
    expect(event).toMatchObject({ payload: { tx_id: saleId, artwork_id: art.buy, amount_usd: 100, seller_payout_usd: 97.5 }, audience: [artist.id, collector.id].sort() });
    expect(typeof event!.payload.completed_at).toBe("string");
    const provenance = (await p.api.request("GET", `/v1/artworks/${art.buy}`)).body.provenance;
    expect(provenance).toContainEqual(expect.objectContaining({ event: "sold", price_usd: 100, buyer_id: collector.id, seller_id: artist.id, tx: sale.on_chain_tx, transaction_id: saleId }));
    // and the chain's transfer of the certificate, as the indexer projected it (read in the same statement).
    const transferred = provenance.filter((e: { event: string }) => e.event === "transferred");
    expect(transferred).toEqual([expect.objectContaining({ tx: sale.on_chain_tx, to: (await walletOf(p, collector.id)).toLowerCase() })]);
  });

  it("two buyers at once: exactly one sale, the other is refused with invalid_state", async () => {
    const listingId = await list(artist, art.race, 50);
    const [a, b] = await Promise.all([purchase(collector, listingId), purchase(collector2, listingId)]);
    const statuses = [a.status, b.status].sort();
    expect(statuses[0] === 201 || statuses[0] === 202, `${a.status} ${a.text} / ${b.status} ${b.text}`).toBe(true);
    const loser = [a, b].find((r) => r.status === 409)!;
    expectProblem(loser, 409, "invalid_state");
    const winner = [a, b].find((r) => r.status !== 409)!;
    const buyer = winner === a ? collector : collector2;
    await completed(buyer, winner.body.tx_id);
    const sales = await p.db.selectFrom("sales").select(["id", "status"]).where("listing_id", "=", listingId).execute();
    expect(sales).toEqual([{ id: winner.body.tx_id, status: "completed" }]);
    expect(await ownerOnChain((await indexedCertificate(p, art.race)).tokenId)).toBe(await walletOf(p, buyer.id));
  });

  it("a declined card answers 402 and changes nothing but the failed transaction; a transient failure is retried", async () => {
    const listingId = await list(artist, art.decline, 75);
    const declined = await purchase(collector, listingId, "pm_card_chargeDeclined");
    expectProblem(declined, 402, "payment_declined");
    expect(declined.body.decline_code).toBe("generic_decline");
    expect((await transaction(collector, declined.body.transaction_id)).body).toMatchObject({ status: "failed" });
    expect((await p.api.request("GET", `/v1/marketplace/listings/${listingId}`)).body.status).toBe("active");
    expect(await ownerOnChain((await indexedCertificate(p, art.decline)).tokenId)).toBe(await walletOf(p, artist.id));

    // Another user's saved method is 404, and nothing is reserved.
    const saved = await p.api.request("POST", "/v1/payment-methods", { token: collector2.token, body: { token: "pm_card_visa" } });
    expectProblem(await purchase(collector, listingId, saved.body.id), 404, "not_found");
    expect((await p.api.request("GET", `/v1/marketplace/listings/${listingId}`)).body.status).toBe("active");

    // A processor that keeps failing: the job retries (MARKETPLACE_CHARGE_ATTEMPTS=2), then the sale fails, the listing is active again.
    const failing = await purchase(collector, listingId, "pm_card_processingError");
    const failingId = (failing.body.tx_id ?? failing.body.transaction_id) as string;
    await waitFor(async () => (await transaction(collector, failingId)).body.status === "failed", { timeoutMs: 20_000, what: "the retried charge to fail" });
    expect((await p.api.request("GET", `/v1/marketplace/listings/${listingId}`)).body.status).toBe("active");

    // A card that fails once: retried with the same key, charged once, sold.
    const transientListing = await list(artist, art.transient, 20);
    const ok = await purchase(collector2, transientListing, "pm_card_processingError_once");
    expect([201, 202]).toContain(ok.status);
    await completed(collector2, ok.body.tx_id);
    expect(await chargesOf(ok.body.tx_id)).toBe(1);
  });

  it("a secondary sale pays the artist the certificate's ERC-2981 royalty and the seller the rest", async () => {
    // The collector now holds art.buy (the first test) and resells it.
    const listingId = await list(collector, art.buy, 200);
    const res = await purchase(collector2, listingId);
    const sale = await completed(collector2, res.body.tx_id);
    const { tokenId } = await indexedCertificate(p, art.buy);
    const [, royalty] = await publicClient().readContract({ address: testEnvironment().artCertificateAddress, abi: artCertificateAbi, functionName: "royaltyInfo", args: [tokenId, 20_000n] });
    expect(royalty).toBeGreaterThan(0n);
    expect(Math.round(sale.royalty_usd * 100)).toBe(Number(royalty));
    expect(sale.payout_usd).toBeCloseTo(200 - 5 - Number(royalty) / 100, 2);
    expect(sale.seller_id).toBe(collector.id);
    const payouts = await p.api.request("GET", "/v1/marketplace/transactions?type=royalty_payout&role=recipient", { token: artist.token });
    expect(payouts.body.data).toContainEqual(expect.objectContaining({ type: "royalty_payout", status: "completed", recipient_id: artist.id, related_tx_id: sale.tx_id, amount_usd: Number(royalty) / 100 }));
    expect(await ownerOnChain(tokenId)).toBe(await walletOf(p, collector2.id));
  });

  it("offers: refusals change nothing; create, read by the parties only, reject, withdraw, accept to a completed sale", async () => {
    const listingId = await list(artist, art.offers, 300);
    const noOffers = await list(artist, art.dispute, 30, false);
    const count = async () => Number((await p.db.selectFrom("offers").select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n);
    const before = await count();
    for (const bad of [{ listing_id: listingId, offer_amount_usd: 0 }, { listing_id: listingId, offer_amount_usd: 10, expires_in_hours: 0 }, { listing_id: listingId, offer_amount_usd: 10, expires_in_hours: 721 }, { listing_id: listingId, offer_amount_usd: 1.234 }, { listing_id: listingId, offer_amount_usd: 10, extra: 1 }, { listing_id: "lst_01JD3Y5V0Q3G7W7J6T4N4C2X1M", offer_amount_usd: 10 }]) {
      expectProblem(await offer(collector, bad), 400, "validation_failed");
    }
    expectProblem(await offer(artist, { listing_id: listingId, offer_amount_usd: 10 }), 409, "invalid_state");
    expectProblem(await offer(collector, { listing_id: noOffers, offer_amount_usd: 10 }), 409, "invalid_state");
    expectProblem(await p.api.request("POST", "/v1/marketplace/offers", { body: { listing_id: listingId, offer_amount_usd: 10, payment_method_id: "pm_card_visa" } }), 401, "unauthenticated");
    expectProblem(await offer(reader, { listing_id: listingId, offer_amount_usd: 10 }), 403, "insufficient_scope");
    expect(await count()).toBe(before);

    const made = await offer(collector, { listing_id: listingId, offer_amount_usd: 250, message: "Would you take 250?" });
    expect(made.status, made.text).toBe(201);
    expect(made.body).toMatchObject({ listing_id: listingId, buyer_id: collector.id, seller_id: artist.id, offer_amount_usd: 250, status: "pending", transaction_id: null });
    expect(Math.abs(Date.parse(made.body.expires_at) - Date.now() - 72 * 3_600_000)).toBeLessThan(60_000);
    expectProblem(await offer(collector, { listing_id: listingId, offer_amount_usd: 260 }), 409, "conflict");
    const created = (await eventsOf("offer.created")).find((e) => e.payload.offer_id === made.body.offer_id);
    expect(created?.audience).toEqual([artist.id, collector.id].sort());

    const id = made.body.offer_id as string;
    expect((await p.api.request("GET", `/v1/marketplace/offers/${id}`, { token: artist.token })).body.status).toBe("pending");
    expectProblem(await p.api.request("GET", `/v1/marketplace/offers/${id}`, { token: stranger.token }), 404, "not_found");
    expect((await p.api.request("GET", `/v1/marketplace/offers/${id}`, { token: admin })).status).toBe(200);
    expect((await p.api.request("GET", "/v1/marketplace/offers?role=seller&status=pending", { token: artist.token })).body.data.map((o: { offer_id: string }) => o.offer_id)).toContain(id);
    expect((await p.api.request("GET", "/v1/marketplace/offers", { token: stranger.token })).body.data).toEqual([]);

    // Moves by the wrong party.
    expectProblem(await move(collector, id, "accept"), 403, "forbidden");
    expectProblem(await move(artist, id, "withdraw"), 403, "forbidden");
    expectProblem(await move(stranger, id, "reject"), 404, "not_found");

    // A second buyer's offer is rejected; a third's withdrawn.
    const second = await offer(collector2, { listing_id: listingId, offer_amount_usd: 200 });
    const rejected = await move(artist, second.body.offer_id, "reject");
    expect(rejected.body.status).toBe("rejected");
    expectProblem(await move(artist, second.body.offer_id, "accept"), 409, "invalid_state");
    expect((await eventsOf("offer.rejected")).find((e) => e.payload.offer_id === second.body.offer_id)?.audience).toEqual([artist.id, collector2.id].sort());
    const third = await offer(stranger, { listing_id: listingId, offer_amount_usd: 150 });
    expect((await move(stranger, third.body.offer_id, "withdraw")).body.status).toBe("withdrawn");

    // Accepted: the sale runs at the offer's amount; the offer completes.
    const accepted = await move(artist, id, "accept");
    expect(accepted.status, accepted.text).toBe(200);
    expect(accepted.body).toMatchObject({ status: "accepted", transaction_id: expect.stringMatching(/^txn_/) });
    expect((await eventsOf("offer.accepted")).find((e) => e.payload.offer_id === id)).toMatchObject({ payload: { listing_id: listingId, amount_usd: 250 }, audience: [artist.id, collector.id].sort() });
    const sale = await completed(collector, accepted.body.transaction_id);
    expect(sale).toMatchObject({ amount_usd: 250, buyer_id: collector.id });
    expect((await p.api.request("GET", `/v1/marketplace/offers/${id}`, { token: collector.token })).body.status).toBe("completed");
    expect(await ownerOnChain((await indexedCertificate(p, art.offers)).tokenId)).toBe(await walletOf(p, collector.id));
    expectProblem(await move(artist, id, "accept"), 409, "invalid_state");
  });

  it("races on offers have exactly one winner: accept vs withdraw, two accepts on one listing, accept vs cancel", async () => {
    // Accept vs withdraw of one offer.
    const listingA = await list(artist, art.offerRace, 40);
    const o1 = (await offer(collector, { listing_id: listingA, offer_amount_usd: 35 })).body.offer_id as string;
    const o2 = (await offer(collector2, { listing_id: listingA, offer_amount_usd: 36 })).body.offer_id as string;
    const [accept1, withdraw1] = await Promise.all([move(artist, o1, "accept"), move(collector, o1, "withdraw")]);
    expect([accept1.status, withdraw1.status].sort(), `${accept1.text} ${withdraw1.text}`).toEqual([200, 409]);
    const final1 = (await p.api.request("GET", `/v1/marketplace/offers/${o1}`, { token: collector.token })).body.status;
    expect(accept1.status === 200 ? ["accepted", "completed"] : ["withdrawn"]).toContain(final1);

    if (accept1.status === 200) {
      // Two accepts on one listing: the first offer's sale holds the listing.
      expectProblem(await move(artist, o2, "accept"), 409, "invalid_state");
      await completed(collector, accept1.body.transaction_id);
      // The listing sold: the other pending offer was rejected.
      expect((await p.api.request("GET", `/v1/marketplace/offers/${o2}`, { token: collector2.token })).body.status).toBe("rejected");
    } else {
      const [x, y] = await Promise.all([move(artist, o2, "accept"), move(artist, o2, "accept")]);
      expect([x.status, y.status].sort()).toEqual([200, 409]);
    }
    expect(await p.db.selectFrom("sales").select("id").where("listing_id", "=", listingA).where("status", "in", ["pending_payment", "paid", "completed"]).execute()).toHaveLength(1);

    // Two different offers accepted at once on one listing, and accept vs cancel.
    const listingB = await list(artist, art.cancelRace, 60);
    const b1 = (await offer(collector, { listing_id: listingB, offer_amount_usd: 55 })).body.offer_id as string;
    const b2 = (await offer(collector2, { listing_id: listingB, offer_amount_usd: 56 })).body.offer_id as string;
    const [acc1, acc2, cancel] = await Promise.all([move(artist, b1, "accept"), move(artist, b2, "accept"), p.api.request("DELETE", `/v1/marketplace/listings/${listingB}`, { token: artist.token })]);
    const wins = [acc1, acc2, cancel].filter((r) => r.status === 200);
    expect(wins, [acc1, acc2, cancel].map((r) => `${r.status} ${r.text}`).join("\n")).toHaveLength(1);
    for (const r of [acc1, acc2, cancel].filter((x) => x.status !== 200)) expectProblem(r, 409, "invalid_state");
    const liveSales = await p.db.selectFrom("sales").select("id").where("listing_id", "=", listingB).where("status", "in", ["pending_payment", "paid", "completed"]).execute();
    expect(liveSales).toHaveLength(cancel.status === 200 ? 0 : 1);
    if (cancel.status === 200) {
      // The cancelled listing's offers were rejected.
      for (const o of [b1, b2]) expect((await p.db.selectFrom("offers").select("status").where("id", "=", o).executeTakeFirstOrThrow()).status).toBe("rejected");
    }
  });

  it("an offer expires at its time (offer.expired) and can no longer be accepted", async () => {
    const listingId = await list(artist, art.expire, 90);
    const made = await offer(collector, { listing_id: listingId, offer_amount_usd: 80, expires_in_hours: 1 });
    expect(made.status).toBe(201);
    // An hour is long for a test: its expiry moves into the past, as if the hour went by.
    await p.db.updateTable("offers").set({ expires_at: new Date(Date.now() - 1000) }).where("id", "=", made.body.offer_id).execute();
    expectProblem(await move(artist, made.body.offer_id, "accept"), 409, "invalid_state");
    await waitFor(async () => (await p.api.request("GET", `/v1/marketplace/offers/${made.body.offer_id}`, { token: collector.token })).body.status === "expired", { what: "expiry" });
    expect((await eventsOf("offer.expired")).find((e) => e.payload.offer_id === made.body.offer_id)?.audience).toEqual([artist.id, collector.id].sort());
    expect((await p.api.request("GET", `/v1/marketplace/listings/${listingId}`)).body.status).toBe("active");

    // An accepted offer whose card is declined: payment_failed, and the listing is active again.
    const declined = await offer(collector2, { listing_id: listingId, offer_amount_usd: 85, payment_method_id: "pm_card_insufficientFunds" });
    const accepted = await move(artist, declined.body.offer_id, "accept");
    expect(accepted.body.status).toBe("accepted");
    await waitFor(async () => (await p.api.request("GET", `/v1/marketplace/offers/${declined.body.offer_id}`, { token: collector2.token })).body.status === "payment_failed", { what: "payment_failed" });
    expect((await transaction(collector2, accepted.body.transaction_id)).body).toMatchObject({ status: "failed" });
    expect((await p.api.request("GET", `/v1/marketplace/listings/${listingId}`)).body.status).toBe("active");
  });

  it("a listing whose certificate left the seller's wallet on-chain is cancelled, its offers rejected", async () => {
    const listingId = await list(artist, art.moved, 70);
    const pending = await offer(collector, { listing_id: listingId, offer_amount_usd: 60 });
    const { tokenId } = await indexedCertificate(p, art.moved);
    // The artist's wallet transfers the token directly, outside the platform.
    await certificateCallFrom(p, artist.id, { functionName: "transferFrom", args: [(await walletOf(p, artist.id)) as `0x${string}`, (await walletOf(p, stranger.id)) as `0x${string}`, tokenId] });
    await waitFor(async () => (await p.api.request("GET", `/v1/marketplace/listings/${listingId}`)).body.status === "cancelled", { timeoutMs: 15_000, what: "auto-cancel" });
    expect((await p.api.request("GET", `/v1/marketplace/offers/${pending.body.offer_id}`, { token: collector.token })).body.status).toBe("rejected");
  });

  it("disputes: the buyer opens one within the window; an admin refunds it and the certificate goes back on-chain", async () => {
    // art.dispute was listed (without offers) by the offers test.
    const { id: listingId } = await p.db.selectFrom("listings").select("id").where("artwork_id", "=", art.dispute).where("status", "=", "active").executeTakeFirstOrThrow();
    const bought = await purchase(collector, listingId);
    const saleId = bought.body.tx_id as string;
    await completed(collector, saleId);
    const disputePath = `/v1/marketplace/transactions/${saleId}/disputes`;

    expectProblem(await p.api.request("POST", disputePath, { token: artist.token, body: { reason: "x" } }), 403, "forbidden");
    expectProblem(await p.api.request("POST", disputePath, { token: stranger.token, body: { reason: "x" } }), 404, "not_found");
    expectProblem(await p.api.request("POST", disputePath, { token: collector.token, body: { reason: "" } }), 400, "validation_failed");
    const opened = await p.api.request("POST", disputePath, { token: collector.token, body: { reason: "The canvas arrived torn." } });
    expect(opened.status, opened.text).toBe(201);
    expect(opened.body).toMatchObject({ transaction_id: saleId, buyer_id: collector.id, seller_id: artist.id, status: "open", resolution: null });
    expectProblem(await p.api.request("POST", disputePath, { token: collector.token, body: { reason: "again" } }), 409, "conflict");
    const disputeId = opened.body.dispute_id as string;
    expectProblem(await p.api.request("GET", `/v1/marketplace/disputes/${disputeId}`, { token: stranger.token }), 404, "not_found");
    expect((await p.api.request("GET", `/v1/marketplace/disputes/${disputeId}`, { token: artist.token })).status).toBe(200);
    expect((await p.api.request("GET", `/v1/marketplace/disputes/${disputeId}`, { token: admin })).status).toBe(200);
    expect((await p.api.request("GET", `/v1/marketplace/transactions/${saleId}`, { token: admin })).status).toBe(200);
    expectProblem(await p.api.request("GET", "/v1/admin/disputes", { token: collector.token }), 403, "insufficient_scope");
    expect((await p.api.request("GET", "/v1/admin/disputes?status=open", { token: admin })).body.data.map((d: { dispute_id: string }) => d.dispute_id)).toContain(disputeId);

    const resolved = await p.api.request("POST", `/v1/admin/disputes/${disputeId}/resolve`, { token: admin, body: { resolution: "refund", note: "Damaged in transit" } });
    expect(resolved.status, resolved.text).toBe(200);
    expect(resolved.body).toMatchObject({ status: "resolved", resolution: "refund", refund_status: "pending" });
    expectProblem(await p.api.request("POST", `/v1/admin/disputes/${disputeId}/resolve`, { token: admin, body: { resolution: "reject" } }), 409, "invalid_state");

    const done = await waitFor(
      async () => {
        const d = (await p.api.request("GET", `/v1/marketplace/disputes/${disputeId}`, { token: collector.token })).body;
        return d.refund_status === "refunded" && d.certificate_return === "returned" && d;
      },
      { timeoutMs: 20_000, what: "refund and return" },
    );
    expect(done.resolution).toBe("refund");
    expect((await transaction(collector, saleId)).body.status).toBe("refunded");
    const charge = await p.db.selectFrom("sandbox_charges").select(["amount_cents", "amount_refunded_cents"]).where("idempotency_key", "=", `sale:${saleId}`).executeTakeFirstOrThrow();
    expect(charge.amount_refunded_cents).toBe(charge.amount_cents);
    expect(await ownerOnChain((await indexedCertificate(p, art.dispute)).tokenId)).toBe(await walletOf(p, artist.id));
  });

  it("an external seller's wallet approves ArtMarket itself; a sale whose approval was withdrawn fails and is refunded", async () => {
    // The seller signed in with Ethereum: the platform cannot sign for its wallet (the test holds its key).
    const wallet = await walletClientOf(p, external.id);
    const sellerWallet = await walletOf(p, external.id);
    await p.db.updateTable("users").set({ wallet_kind: "siwe", custody_index: null }).where("id", "=", external.id).execute();
    const approve = async (approved: boolean) => {
      const hash = await wallet.writeContract({ chain: null, address: testEnvironment().artCertificateAddress, abi: artCertificateAbi, functionName: "setApprovalForAll", args: [testEnvironment().artMarketAddress, approved] });
      await publicClient().waitForTransactionReceipt({ hash });
    };
    await approve(true);
    const listingId = await waitFor(async () => {
      const res = await p.api.request("POST", "/v1/marketplace/listings", { token: external.token, body: { artwork_id: art.external, price_usd: 40, accepts_offers: false } });
      return res.status === 201 && (res.body.listing_id as string);
    }, { what: "listing once the approval is indexed" });
    const sold = await purchase(collector, listingId);
    await completed(collector, sold.body.tx_id);
    expect(await ownerOnChain((await indexedCertificate(p, art.external)).tokenId)).toBe(await walletOf(p, collector.id));

    // Listed while approved, then the approval is withdrawn on-chain: the transfer cannot happen.
    const second = await p.api.request("POST", "/v1/marketplace/listings", { token: external.token, body: { artwork_id: art.revoked, price_usd: 45, accepts_offers: false } });
    expect(second.status, second.text).toBe(201);
    await approve(false);
    const attempt = await purchase(collector2, second.body.listing_id);
    const saleId = (attempt.body.tx_id ?? attempt.body.transaction_id) as string;
    const failed = await waitFor(async () => {
      const t = (await transaction(collector2, saleId)).body;
      return t.status === "failed" && t;
    }, { timeoutMs: 30_000, what: "the sale to fail and be refunded" });
    expect(failed.failure_reason).toMatch(/refunded/);
    const charge = await p.db.selectFrom("sandbox_charges").select(["amount_cents", "amount_refunded_cents"]).where("idempotency_key", "=", `sale:${saleId}`).executeTakeFirstOrThrow();
    expect(charge.amount_refunded_cents).toBe(charge.amount_cents);
    expect((await p.api.request("GET", `/v1/marketplace/listings/${second.body.listing_id}`)).body.status).toBe("cancelled");
    expect(await ownerOnChain((await indexedCertificate(p, art.revoked)).tokenId)).toBe(sellerWallet);
  });

  it("a dispute an admin rejects leaves the sale as it was", async () => {
    // collector2 bought art.transient in the decline test.
    const { id: saleId } = await p.db.selectFrom("sales").select("id").where("artwork_id", "=", art.transient).where("status", "=", "completed").executeTakeFirstOrThrow();
    const opened = await p.api.request("POST", `/v1/marketplace/transactions/${saleId}/disputes`, { token: collector2.token, body: { reason: "Not as described." } });
    expect(opened.status, opened.text).toBe(201);
    const rejected = await p.api.request("POST", `/v1/admin/disputes/${opened.body.dispute_id}/resolve`, { token: admin, body: { resolution: "reject" } });
    expect(rejected.body).toMatchObject({ status: "resolved", resolution: "reject", refund_status: null, certificate_return: null });
    expect((await transaction(collector2, saleId)).body.status).toBe("completed");
    // A resolved dispute does not block a new one within the window.
    expect((await p.api.request("POST", `/v1/marketplace/transactions/${saleId}/disputes`, { token: collector2.token, body: { reason: "Still not as described." } })).status).toBe(201);
  });

  it("every sales endpoint refuses an anonymous caller (401) and a token without its scope (403), and bad bodies (400) without storing anything", async () => {
    const fake = { listing: "lst_01JD3Y5V0Q3G7W7J6T4N4C2X1M", offer: "off_01JD3Y5V0Q3G7W7J6T4N4C2X1M", txn: "txn_01JD3Y5V0Q3G7W7J6T4N4C2X1M", dispute: "dsp_01JD3Y5V0Q3G7W7J6T4N4C2X1M" };
    const endpoints: [string, string, unknown][] = [
      ["POST", `/v1/marketplace/listings/${fake.listing}/purchase`, { payment_method_id: "pm_card_visa" }],
      ["POST", "/v1/marketplace/offers", { listing_id: fake.listing, offer_amount_usd: 1, payment_method_id: "pm_card_visa" }],
      ["GET", "/v1/marketplace/offers", undefined],
      ["GET", `/v1/marketplace/offers/${fake.offer}`, undefined],
      ["POST", `/v1/marketplace/offers/${fake.offer}/accept`, undefined],
      ["POST", `/v1/marketplace/offers/${fake.offer}/reject`, undefined],
      ["POST", `/v1/marketplace/offers/${fake.offer}/withdraw`, undefined],
      ["GET", "/v1/marketplace/transactions", undefined],
      ["GET", `/v1/marketplace/transactions/${fake.txn}`, undefined],
      ["POST", `/v1/marketplace/transactions/${fake.txn}/disputes`, { reason: "x" }],
      ["GET", `/v1/marketplace/disputes/${fake.dispute}`, undefined],
      ["GET", "/v1/admin/disputes", undefined],
      ["POST", `/v1/admin/disputes/${fake.dispute}/resolve`, { resolution: "reject" }],
    ];
    for (const [method, path, body] of endpoints) {
      expectProblem(await p.api.request(method, path, { body }), 401, "unauthenticated");
      expectProblem(await p.api.request(method, path, { token: reader.token, body }), 403, "insufficient_scope");
    }
    // Admin endpoints refuse a non-admin whatever its scopes; unknown ids are 404.
    expectProblem(await p.api.request("GET", "/v1/admin/disputes", { token: collector.token }), 403, "insufficient_scope");
    expectProblem(await p.api.request("POST", `/v1/admin/disputes/${fake.dispute}/resolve`, { token: admin, body: { resolution: "reject" } }), 404, "not_found");
    expectProblem(await p.api.request("GET", `/v1/marketplace/offers/${fake.offer}`, { token: admin }), 404, "not_found");

    const sales = async () => Number((await p.db.selectFrom("sales").select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n);
    const before = await sales();
    const { id: listingId } = await p.db.selectFrom("listings").select("id").where("status", "=", "active").executeTakeFirstOrThrow();
    for (const bad of [{}, { payment_method_id: "" }, { payment_method_id: "pm_card_visa", extra: true }, { payment_method_id: 42 }]) {
      expectProblem(await p.api.request("POST", `/v1/marketplace/listings/${listingId}/purchase`, { token: collector2.token, body: bad }), 400, "validation_failed");
    }
    expectProblem(await purchase(collector2, listingId, "pm_card_nonexistent"), 404, "not_found");
    expectProblem(await purchase(collector2, "lst_not-an-id"), 404, "not_found");
    expectProblem(await p.api.request("POST", `/v1/admin/disputes/${fake.dispute}/resolve`, { token: admin, body: { resolution: "maybe" } }), 400, "validation_failed");
    expect(await sales()).toBe(before);
    expect((await p.api.request("GET", `/v1/marketplace/listings/${listingId}`)).body.status).toBe("active");
  });

  it("the audit ledger holds every offer move and payment of these sales", async () => {
    const kinds = (await p.db.selectFrom("audit_ledger").select("kind").distinct().execute()).map((r) => r.kind).sort();
    for (const kind of ["offer.created", "offer.accepted", "offer.rejected", "offer.withdrawn", "offer.expired", "payment.charged", "payment.failed", "payment.refunded", "settlement.failed", "sale.completed", "certificate.returned", "dispute.opened", "dispute.resolved"]) {
      expect(kinds).toContain(kind);
    }
  });
});
