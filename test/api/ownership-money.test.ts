/**
 * Ownership and money between modules (docs/ownership-and-money.md), on real pieces: Postgres, the
 * Hardhat chain with the contracts, Ponder, the sandbox processor and the API over HTTP. One test per
 * way the modules disagreed before: rights that followed `artist_id`, refunds that left what hung
 * off a sale, a relisting during a dispute, self-dealing in shares, seats held without limit, prices
 * nobody could pay, a discount that left an unpayable amount.
 */
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { recordEvent } from "../../api/src/jobs/outbox.ts";
import { useArtworkPlatform } from "../support/artworks.ts";
import { certificateCallFrom, certifiedArtwork, indexedCertificate, ownerOnChain, walletOf } from "../support/marketplace.ts";
import { waitFor } from "../support/wait.ts";
import { adminToken, createUser, expectProblem, type TestResponse, type TestUser } from "../support/api.ts";

const p = useArtworkPlatform({ MARKETPLACE_SWEEP_INTERVAL_MS: "300", PAYMENT_RETRY_BASE_MS: "5" });
const DAY = 86_400_000;

describe("ownership and money between modules", () => {
  let admin: string;
  let x: TestUser; // an artist
  let y: TestUser; // a collector who buys from x
  let z: TestUser;
  let w: TestUser;

  const req = (method: string, path: string, token?: string, body?: unknown, headers: Record<string, string> = {}) => p.api.request(method, path, { token, body, headers });
  const ok = (res: TestResponse, ...statuses: number[]) => {
    expect(statuses.length ? statuses : [200, 201], res.text).toContain(res.status);
    return res.body;
  };
  const list = async (owner: TestUser, artworkId: string, price: number) => ok(await req("POST", "/v1/marketplace/listings", owner.token, { artwork_id: artworkId, price_usd: price, accepts_offers: true }), 201).listing_id as string;
  const transaction = async (user: TestUser, id: string) => (await req("GET", `/v1/marketplace/transactions/${id}`, user.token)).body;
  /** `buyer` buys the listing now and waits for the certificate to be theirs on-chain and in the indexer. */
  const buy = async (buyer: TestUser, listingId: string, artworkId: string) => {
    const res = await req("POST", `/v1/marketplace/listings/${listingId}/purchase`, buyer.token, { payment_method_id: "pm_card_visa" });
    const saleId = ok(res, 201, 202).tx_id as string;
    await waitFor(async () => (await transaction(buyer, saleId)).status === "completed", { timeoutMs: 20_000, what: `completion of ${saleId}` });
    const wallet = await walletOf(p, buyer.id);
    await waitFor(async () => (await indexedCertificate(p, artworkId)).owner === wallet, { what: `the indexer's owner of ${artworkId}` });
    return saleId;
  };
  /** A certified artwork of `x`, sold to `y`: the sale's id. */
  const soldToY = async (price = 100) => {
    const artworkId = await certifiedArtwork(p, x);
    const saleId = await buy(y, await list(x, artworkId, price), artworkId);
    return { artworkId, saleId };
  };
  const openDispute = async (user: TestUser, saleId: string) => ok(await req("POST", `/v1/marketplace/transactions/${saleId}/disputes`, user.token, { reason: "Not as described." }), 201).dispute_id as string;
  const resolve = (disputeId: string, body: Record<string, unknown>) => req("POST", `/v1/admin/disputes/${disputeId}/resolve`, admin, body);
  const dispute = async (id: string) => (await req("GET", `/v1/marketplace/disputes/${id}`, admin)).body;
  const fractionalize = async (owner: TestUser, artworkId: string, shares: number, price: number) => {
    ok(await req("POST", "/v1/fractional/artworks", owner.token, { artwork_id: artworkId, total_shares: shares, price_per_share_usd: price }), 201, 202);
    await waitFor(async () => (await req("GET", `/v1/fractional/artworks/${artworkId}`)).body.status === "active", { timeoutMs: 20_000, what: `the share class of ${artworkId}` });
  };
  const buyShares = (buyer: TestUser, artworkId: string, n: number) => req("POST", `/v1/fractional/${artworkId}/purchase`, buyer.token, { shares_quantity: n, payment_method_id: "pm_card_visa" });
  const expectRefused = (res: TestResponse, reason: string) => {
    expectProblem(res, 409, "invalid_state");
    expect(res.body.reason, res.text).toBe(reason);
  };
  const chargesFor = async (userId: string) =>
    Number((await p.db.selectFrom("transactions").select((eb) => eb.fn.countAll().as("n")).where("buyer_id", "=", userId).executeTakeFirstOrThrow()).n);

  beforeAll(async () => {
    [admin, x, y, z, w] = await Promise.all([
      adminToken(p.api),
      createUser(p.api, { role: "artist", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
    ]);
  }, 60_000);

  it("gives the owner's rights to the certificate's holder: the artist who sold loses them, the buyer has them, an on-chain transfer moves them at once", async () => {
    const { artworkId } = await soldToY();
    // The artist keeps authorship, not rights.
    expectProblem(await req("PATCH", `/v1/artworks/${artworkId}`, x.token, { description: "mine still", price_usd: 1, for_sale: false }), 403, "forbidden");
    expectProblem(await req("DELETE", `/v1/artworks/${artworkId}`, x.token), 403, "forbidden");
    expectProblem(await req("PATCH", `/v1/artworks/${artworkId}`, z.token, { description: "a stranger's" }), 403, "forbidden");
    // The holder edits, lists and may not remove a listed work.
    ok(await req("PATCH", `/v1/artworks/${artworkId}`, y.token, { description: "Bought in 2026", price_usd: 250, for_sale: true }), 200);
    const relisted = await list(y, artworkId, 250);
    expectRefused(await req("DELETE", `/v1/artworks/${artworkId}`, y.token), "listed");
    ok(await req("DELETE", `/v1/marketplace/listings/${relisted}`, y.token), 200);

    // y's wallet hands the certificate to z's directly: rights follow the chain before the indexer does.
    const { tokenId } = await indexedCertificate(p, artworkId);
    await certificateCallFrom(p, y.id, { functionName: "transferFrom", args: [(await walletOf(p, y.id)) as `0x${string}`, (await walletOf(p, z.id)) as `0x${string}`, tokenId] });
    expect(await ownerOnChain(tokenId)).toBe(await walletOf(p, z.id));
    expectProblem(await req("PATCH", `/v1/artworks/${artworkId}`, y.token, { description: "gone" }), 403, "forbidden");
    ok(await req("PATCH", `/v1/artworks/${artworkId}`, z.token, { description: "Received as a gift" }), 200);
    ok(await req("DELETE", `/v1/artworks/${artworkId}`, z.token), 200);
    expectProblem(await req("GET", `/v1/artworks/${artworkId}`), 404, "not_found");
    // Admins keep theirs.
    const another = await certifiedArtwork(p, x);
    ok(await req("PATCH", `/v1/artworks/${another}`, admin, { description: "Edited by an admin" }), 200);
  });

  it("refuses a refund whose buyer fractionalized the artwork, unless forced; a forced refund leaves the certificate and says so", async () => {
    const { artworkId, saleId } = await soldToY(100);
    await fractionalize(y, artworkId, 10, 50);
    ok(await buyShares(w, artworkId, 2), 201, 202);
    const disputeId = await openDispute(y, saleId);
    const refused = await resolve(disputeId, { resolution: "refund", note: "Damaged" });
    expectRefused(refused, "shares_issued");
    expect(refused.body.detail).toMatch(/force/);
    expect(await dispute(disputeId)).toMatchObject({ status: "open", refund_status: null });
    expect((await transaction(y, saleId)).status).toBe("completed");

    // force needs a note, and applies to refunds only.
    expectProblem(await resolve(disputeId, { resolution: "refund", force: true }), 400, "validation_failed");
    expectProblem(await resolve(disputeId, { resolution: "reject", force: true, note: "x" }), 400, "validation_failed");
    ok(await resolve(disputeId, { resolution: "refund", force: true, note: "Shareholders keep their shares; refunded in goodwill" }), 200);
    await waitFor(async () => (await dispute(disputeId)).refund_status === "refunded", { timeoutMs: 20_000, what: "the forced refund" });
    expect(await dispute(disputeId)).toMatchObject({ certificate_return: "waived", refund_forced: true });
    expect((await transaction(y, saleId)).status).toBe("refunded");
    const { tokenId } = await indexedCertificate(p, artworkId);
    expect(await ownerOnChain(tokenId)).toBe(await walletOf(p, y.id));
    const forced = await p.db.selectFrom("audit_ledger").select("data").where("kind", "=", "payment.refunded").where("subject_id", "=", saleId).executeTakeFirstOrThrow();
    expect(forced.data).toMatchObject({ forced: true, note: "Shareholders keep their shares; refunded in goodwill" });
    // y still holds the certificate: later share proceeds are theirs, and nobody else's.
    const later = ok(await buyShares(z, artworkId, 3), 201, 202);
    const purchaseTx = await waitFor(async () => (await p.db.selectFrom("transactions").selectAll().where("id", "=", later.transaction_id).executeTakeFirst()));
    expect(purchaseTx).toMatchObject({ seller_id: y.id, recipient_id: y.id });
  });

  it("locks a disputed sale's artwork against a relisting, and refuses a dispute while it is listed; a resold artwork's refund is refused", async () => {
    const { artworkId, saleId } = await soldToY(100);
    // Listed first: the dispute waits for the listing to go.
    const listingId = await list(y, artworkId, 200);
    expectRefused(await req("POST", `/v1/marketplace/transactions/${saleId}/disputes`, y.token, { reason: "Torn" }), "listed");
    ok(await req("DELETE", `/v1/marketplace/listings/${listingId}`, y.token), 200);
    // Disputed: no listing, no fractionalizing, no removal while it is open.
    const disputeId = await openDispute(y, saleId);
    expectRefused(await req("POST", "/v1/marketplace/listings", y.token, { artwork_id: artworkId, price_usd: 200, accepts_offers: false }), "disputed");
    expectRefused(await req("POST", "/v1/fractional/artworks", y.token, { artwork_id: artworkId, total_shares: 10, price_per_share_usd: 5 }), "disputed");
    expectRefused(await req("DELETE", `/v1/artworks/${artworkId}`, y.token), "disputed");
    // The refund unwinds: money back to y, the certificate back to x on-chain; then x may list again.
    ok(await resolve(disputeId, { resolution: "refund", note: "Torn canvas" }), 200);
    const { tokenId } = await indexedCertificate(p, artworkId);
    await waitFor(async () => (await dispute(disputeId)).certificate_return === "returned", { timeoutMs: 20_000, what: "the certificate's return" });
    expect(await ownerOnChain(tokenId)).toBe(await walletOf(p, x.id));
    await waitFor(async () => (await indexedCertificate(p, artworkId)).owner === (await walletOf(p, x.id)));
    await list(x, artworkId, 120);

    // Resold before the dispute: the refund cannot bring the certificate back.
    const resold = await soldToY(80);
    await buy(z, await list(y, resold.artworkId, 90), resold.artworkId);
    const late = await openDispute(y, resold.saleId);
    expectRefused(await resolve(late, { resolution: "refund" }), "resold");
    expect((await transaction(y, resold.saleId)).status).toBe("completed");
  });

  it("of a listing and a dispute of one artwork at once, exactly one happens", async () => {
    const { artworkId, saleId } = await soldToY(60);
    const [listing, opened] = await Promise.all([
      req("POST", "/v1/marketplace/listings", y.token, { artwork_id: artworkId, price_usd: 70, accepts_offers: false }),
      req("POST", `/v1/marketplace/transactions/${saleId}/disputes`, y.token, { reason: "Race" }),
    ]);
    expect([listing.status, opened.status].sort(), `${listing.text} / ${opened.text}`).toEqual([201, 409]);
    const loser = listing.status === 409 ? listing : opened;
    expectRefused(loser, listing.status === 409 ? "disputed" : "listed");
    const open = await p.db.selectFrom("listings").select("id").where("artwork_id", "=", artworkId).where("status", "=", "active").execute();
    const disputes = await p.db.selectFrom("disputes").select("id").where("transaction_id", "=", saleId).execute();
    expect(open.length + disputes.length).toBe(1);
  });

  it("refuses the holder's purchase of its own shares, and charges nothing", async () => {
    const artworkId = await certifiedArtwork(p, x);
    await fractionalize(x, artworkId, 20, 25);
    const before = await chargesFor(x.id);
    expectRefused(await buyShares(x, artworkId, 4), "own_artwork");
    expect(await chargesFor(x.id)).toBe(before);
    expect((await req("GET", `/v1/fractional/artworks/${artworkId}`)).body).toMatchObject({ shares_available: 20, funded_pct: 0 });
    // A total below the smallest card charge is refused before anything is reserved.
    const cheap = await certifiedArtwork(p, x);
    await fractionalize(x, cheap, 100, 0.1);
    expectProblem(await buyShares(w, cheap, 2), 400, "validation_failed");
    ok(await buyShares(w, cheap, 5), 201, 202);
  });

  it("caps one buyer's unpaid holds at half the seats left, and free tickets per person", async () => {
    const start = Date.now() + 10 * DAY;
    const times = { starts_at: new Date(start).toISOString(), ends_at: new Date(start + 3_600_000).toISOString() };
    const paid = ok(await req("POST", "/v1/events", admin, { title: "Forty seats", type: "talk", format: "in_person", location: "Graz", ...times, tickets: { in_person: { price_usd: 20, capacity: 40 } } }), 201);
    const hold = (user: TestUser, quantity: number) => req("POST", `/v1/events/${paid.event_id}/tickets`, user.token, { kind: "in_person", quantity });
    expect(ok(await hold(y, 20), 201).status).toBe("awaiting_payment");
    expectRefused(await hold(y, 20), "hold_limit");
    expectRefused(await hold(y, 1), "hold_limit");
    // Everyone else still buys, and may hold half of what is left.
    ok(await req("POST", `/v1/events/${paid.event_id}/tickets`, z.token, { kind: "in_person", quantity: 15, payment_method_id: "pm_card_visa" }), 201);
    expectRefused(await hold(w, 3), "hold_limit");
    ok(await hold(w, 2), 201);
    // Racing holds of one buyer: the event's row orders them, the cap holds.
    const racer = await createUser(p.api, { scope: ["write"] });
    const roomy = ok(await req("POST", "/v1/events", admin, { title: "Thirty seats", type: "talk", format: "in_person", location: "Graz", ...times, tickets: { in_person: { price_usd: 20, capacity: 30 } } }), 201);
    const raced = await Promise.all(Array.from({ length: 6 }, () => req("POST", `/v1/events/${roomy.event_id}/tickets`, racer.token, { kind: "in_person", quantity: 5 })));
    const held = raced.filter((r) => r.status === 201).length * 5;
    expect(held).toBeLessThanOrEqual(15);
    expect(held).toBeGreaterThanOrEqual(10);
    for (const r of raced.filter((r) => r.status !== 201)) expectRefused(r, "hold_limit");

    const free = ok(await req("POST", "/v1/events", admin, { title: "Open studio", type: "exhibition", format: "virtual", location: "Online", ...times, tickets: { virtual: { price_usd: 0 } } }), 201);
    const claim = (quantity: number) => req("POST", `/v1/events/${free.event_id}/tickets`, y.token, { kind: "virtual", quantity });
    ok(await claim(6), 201);
    ok(await claim(4), 201);
    expectRefused(await claim(1), "free_ticket_limit");
    ok(await req("POST", `/v1/events/${free.event_id}/tickets`, z.token, { kind: "virtual", quantity: 10 }), 201);
  });

  it("refuses prices the card processor cannot charge, where they are set", async () => {
    const artworkId = await certifiedArtwork(p, x);
    for (const price of [0.01, 0.49, 5_000_000, 1_000_000]) {
      expectProblem(await req("POST", "/v1/marketplace/listings", x.token, { artwork_id: artworkId, price_usd: price, accepts_offers: true }), 400, "validation_failed");
    }
    const listingId = await list(x, artworkId, 999_999.99);
    expectProblem(await req("POST", "/v1/marketplace/offers", y.token, { listing_id: listingId, offer_amount_usd: 0.2, payment_method_id: "pm_card_visa" }), 400, "validation_failed");
    const start = Date.now() + 10 * DAY;
    const event = { title: "Cheap", type: "talk", format: "in_person", location: "Bern", starts_at: new Date(start).toISOString(), ends_at: new Date(start + 3_600_000).toISOString() };
    expectProblem(await req("POST", "/v1/events", admin, { ...event, tickets: { in_person: { price_usd: 0.2, capacity: 5 } } }), 400, "validation_failed");
    const dear = ok(await req("POST", "/v1/events", admin, { ...event, tickets: { in_person: { price_usd: 600_000, capacity: 5 } } }), 201);
    expectProblem(await req("POST", `/v1/events/${dear.event_id}/tickets`, y.token, { kind: "in_person", quantity: 2, payment_method_id: "pm_card_visa" }), 400, "validation_failed");
    expect((await req("GET", `/v1/events/${dear.event_id}`)).body.tickets.in_person.remaining).toBe(5);
  });

  it("refuses a discount that would leave less than the smallest charge, with no point spent; one that covers it all makes the order free", async () => {
    const buyer = await createUser(p.api, { scope: ["write"] });
    await recordEvent(p.db, "payment.completed", { tx_id: `txn_test_${randomBytes(4).toString("hex")}`, buyer_id: buyer.id, amount_usd: 100 }, [buyer.id]);
    const balance = async () => (await req("GET", "/v1/rewards/balance", buyer.token)).body.service_points as number;
    await waitFor(async () => (await balance()) === 100, { timeoutMs: 15_000, what: "the buyer's points" });
    const reward = async (discount_usd: number) => ok(await req("POST", "/v1/admin/rewards", admin, { name: `${discount_usd} off`, points_cost: 10, kind: "discount", discount_usd }), 201).reward_id as string;
    const start = Date.now() + 10 * DAY;
    const event = ok(
      await req("POST", "/v1/events", admin, { title: "Ten dollars", type: "talk", format: "in_person", location: "Turin", starts_at: new Date(start).toISOString(), ends_at: new Date(start + 3_600_000).toISOString(), tickets: { in_person: { price_usd: 10, capacity: 10 } } }),
      201,
    );
    const order = ok(await req("POST", `/v1/events/${event.event_id}/tickets`, buyer.token, { kind: "in_person", quantity: 1 }), 201).order_id as string;
    expectRefused(await req("POST", "/v1/rewards/redeem", buyer.token, { reward_id: await reward(9.8), points_to_spend: 10, order_id: order }), "below_minimum_charge");
    expect(await balance()).toBe(100);
    expect((await req("GET", `/v1/ticket-orders/${order}`, buyer.token)).body).toMatchObject({ discount_usd: 0, amount_due_usd: 10 });
    ok(await req("POST", "/v1/rewards/redeem", buyer.token, { reward_id: await reward(10), points_to_spend: 10, order_id: order }), 201);
    expect(await balance()).toBe(90);
    const paid = ok(await req("POST", `/v1/ticket-orders/${order}/pay`, buyer.token, { payment_method_id: "pm_card_visa" }), 201);
    expect(paid).toMatchObject({ status: "confirmed", amount_due_usd: 0 });
  });
});
