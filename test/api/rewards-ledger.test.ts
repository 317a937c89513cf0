/**
 * Points that follow what stands (docs/rewards.md), on real pieces: Postgres, the chain and Ponder
 * for certification and sales, the sandbox processor, the API over HTTP and its worker's outbox.
 * One regression test per way points could be farmed while they were only ever added (a post
 * created and deleted, a submission withdrawn and made again, free tickets, a refunded sale, a
 * cancelled event, tickets to one's own event, a discount on an order that expired, points spent
 * before a reversal), and the rules as listed. The property test of concurrent earnings,
 * reversals and redemptions: rewards-property.test.ts.
 */
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { useArtworkPlatform } from "../support/artworks.ts";
import { certifiedArtwork } from "../support/marketplace.ts";
import { databaseNow, type HistoryRow, outboxDrained, rewardsBalance, rewardsHistory, rowsOfSource } from "../support/rewards.ts";
import { waitFor } from "../support/wait.ts";
import { adminToken, createUser, expectProblem, type TestResponse, type TestUser } from "../support/api.ts";

// A short hold: an order awaiting payment expires within the test.
const p = useArtworkPlatform({ TICKET_HOLD_SECONDS: "2" });
const DAY = 86_400_000;

describe("rewards: points that follow what stands", () => {
  let admin: string;
  /** When the test started: the outbox events it waits for are those recorded since. */
  let since: Date;

  const req = (method: string, path: string, token?: string, body?: unknown) => p.api.request(method, path, { token, body });
  const ok = (res: TestResponse, status: number) => {
    expect(res.status, res.text).toBe(status);
    return res.body;
  };
  const balance = (user: TestUser) => rewardsBalance(p.api, user);
  const history = (user: TestUser) => rewardsHistory(p.api, user);
  /** Waits until `user`'s balance is `points` to spend and `lifetime` earned, then until nothing else is under way, and checks it again. */
  const expectBalance = async (user: TestUser, points: number, lifetime = points) => {
    await waitFor(async () => {
      expect(await balance(user), `the balance of ${user.id}`).toMatchObject({ service_points: points, lifetime_earned: lifetime });
      return true;
    }, { timeoutMs: 15_000, what: `${user.id} at ${points} points` });
    await outboxDrained(p.db, since);
    expect(await balance(user)).toMatchObject({ service_points: points, lifetime_earned: lifetime });
  };
  const post = async (user: TestUser, content = "a thought") => ok(await req("POST", "/v1/community/posts", user.token, { type: "discussion", content, tags: [] }), 201).post_id as string;
  const newReward = async (body: Record<string, unknown>) => ok(await req("POST", "/v1/admin/rewards", admin, body), 201).reward_id as string;
  const redeem = (user: TestUser, rewardId: string, points: number, orderId?: string) =>
    req("POST", "/v1/rewards/redeem", user.token, { reward_id: rewardId, points_to_spend: points, ...(orderId ? { order_id: orderId } : {}) });
  const newEvent = async (body: Record<string, unknown>) => {
    const start = Date.now() + 10 * DAY;
    const created = { title: "Opening", type: "exhibition", format: "in_person", location: "Lyon", starts_at: new Date(start).toISOString(), ends_at: new Date(start + 3_600_000).toISOString(), ...body };
    return ok(await req("POST", "/v1/events", admin, created), 201).event_id as string;
  };
  const order = async (user: TestUser, eventId: string, body: Record<string, unknown>) => ok(await req("POST", `/v1/events/${eventId}/tickets`, user.token, body), 201);
  const orderStatus = async (user: TestUser, orderId: string) => ok(await req("GET", `/v1/ticket-orders/${orderId}`, user.token), 200).status as string;
  /** The `reward.points_reversed` webhook events recorded for `userId`. */
  const reversalEventsOf = async (userId: string) =>
    (await p.db.selectFrom("outbox_events").select(["payload", "audience"]).where("event_type", "=", "reward.points_reversed").orderBy("created_at").orderBy("id").execute())
      .map((e) => ({ payload: payloadOf(e), audience: e.audience }))
      .filter((e) => e.payload.user_id === userId);
  const payloadOf = (e: { payload: unknown }) => (typeof e.payload === "string" ? JSON.parse(e.payload) : e.payload) as Record<string, unknown>;
  const ofType = (rows: HistoryRow[], type: HistoryRow["type"]) => rows.filter((h) => h.type === type);
  const sourcesOf = (rows: HistoryRow[]) => rows.map((h) => h.source?.id).sort();

  beforeAll(async () => {
    admin = await adminToken(p.api);
  }, 60_000);
  beforeEach(async () => {
    since = await databaseNow(p.db);
  });

  it("takes a deleted post's points back: five posts created and deleted leave no points, no posts, and 5 earned and 5 reversal rows naming them", async () => {
    const user = await createUser(p.api, { scope: ["write"] });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const id = await post(user, `farming ${i}`);
      ids.push(id);
      // The farmer sees the points land, then deletes.
      await waitFor(async () => (await balance(user)).lifetime_earned === 10, { what: `the points of ${id}` });
      ok(await req("DELETE", `/v1/community/posts/${id}`, user.token), 200);
      await expectBalance(user, 0);
    }
    expect(ok(await req("GET", `/v1/community/posts?author_id=${user.id}`), 200)).toMatchObject({ data: [], pagination: { total: 0 } });
    const rows = await history(user);
    expect(rows).toHaveLength(10);
    const earned = ofType(rows, "earned");
    const reversed = ofType(rows, "reversal");
    expect(earned.map((h) => [h.points, h.rule, h.source?.type])).toEqual(Array(5).fill([10, "post", "post"]));
    expect(reversed.map((h) => [h.points, h.source?.type])).toEqual(Array(5).fill([-10, "post"]));
    expect(sourcesOf(earned)).toEqual([...ids].sort());
    expect(sourcesOf(reversed)).toEqual([...ids].sort());
    for (const h of rows) expect(h.reason, JSON.stringify(h)).toMatch(/\S/);
  });

  it("counts one standing challenge submission once: submitted, withdrawn and submitted again four times is 25 points", async () => {
    const user = await createUser(p.api, { scope: ["write"] });
    const challenge = ok(
      await req("POST", "/v1/community/challenges", admin, { title: "Tides", theme: "tides", prize_pool_usd: 100, starts_at: new Date(Date.now() - 1000).toISOString(), deadline: new Date(Date.now() + DAY).toISOString() }),
      201,
    ).challenge_id as string;
    const path = `/v1/community/challenges/${challenge}/submissions`;
    const submit = async () => {
      const id = ok(await req("POST", path, user.token, { content: "mine" }), 201).submission_id as string;
      await waitFor(async () => (await balance(user)).lifetime_earned === 25, { what: `the points of ${id}` });
      return id;
    };
    const withdrawn: string[] = [];
    for (let i = 0; i < 4; i++) {
      const id = await submit();
      ok(await req("DELETE", `${path}/${id}`, user.token), 204);
      withdrawn.push(id);
      await expectBalance(user, 0);
    }
    const standing = await submit();
    await expectBalance(user, 25);
    const theirs = ok(await req("GET", `${path}?limit=100`), 200).data.filter((s: { user_id: string }) => s.user_id === user.id);
    expect(theirs.map((s: { submission_id: string }) => s.submission_id)).toEqual([standing]);
    const rows = await history(user);
    const earned = ofType(rows, "earned");
    expect(earned.map((h) => [h.points, h.rule, h.source?.type])).toEqual(Array(5).fill([25, "joined", "challenge_submission"]));
    expect(sourcesOf(earned)).toEqual([...withdrawn, standing].sort());
    const reversed = ofType(rows, "reversal");
    expect(reversed.map((h) => [h.points, h.source?.type])).toEqual(Array(4).fill([-25, "challenge_submission"]));
    expect(sourcesOf(reversed)).toEqual([...withdrawn].sort());
  });

  it("earns nothing for free tickets: 10 orders of free virtual tickets are 0 points", async () => {
    const user = await createUser(p.api, { scope: ["write"] });
    const eventId = await newEvent({ format: "virtual", location: "Online", tickets: { virtual: { price_usd: 0 } } });
    const orders: string[] = [];
    for (let i = 0; i < 10; i++) {
      const placed = await order(user, eventId, { kind: "virtual", quantity: 1 });
      expect(placed.status).toBe("confirmed");
      orders.push(placed.order_id);
    }
    // Every order was published and handed to rewards.
    const published = await p.db.selectFrom("outbox_events").select("payload").where("event_type", "=", "ticket.purchased").execute();
    expect(published.map((e) => payloadOf(e).order_id)).toEqual(expect.arrayContaining(orders));
    await outboxDrained(p.db, since);
    expect(await balance(user)).toMatchObject({ service_points: 0, lifetime_earned: 0 });
    expect(await history(user)).toEqual([]);
  });

  it("reverses both parties' points of a sale refunded through a dispute", async () => {
    const [artist, collector] = await Promise.all([createUser(p.api, { role: "artist", scope: ["write"] }), createUser(p.api, { scope: ["write"] })]);
    const artworkId = await certifiedArtwork(p, artist);
    await expectBalance(artist, 50);
    const listingId = ok(await req("POST", "/v1/marketplace/listings", artist.token, { artwork_id: artworkId, price_usd: 1030, accepts_offers: false }), 201).listing_id as string;
    const purchase = await req("POST", `/v1/marketplace/listings/${listingId}/purchase`, collector.token, { payment_method_id: "pm_card_visa" });
    expect([201, 202], purchase.text).toContain(purchase.status);
    const saleId = purchase.body.tx_id as string;
    await waitFor(async () => (await req("GET", `/v1/marketplace/transactions/${saleId}`, collector.token)).body.status === "completed", { timeoutMs: 20_000, what: `completion of ${saleId}` });
    await expectBalance(collector, 1030);
    await expectBalance(artist, 50 + 1030);

    const disputeId = ok(await req("POST", `/v1/marketplace/transactions/${saleId}/disputes`, collector.token, { reason: "Not as described." }), 201).dispute_id as string;
    ok(await req("POST", `/v1/admin/disputes/${disputeId}/resolve`, admin, { resolution: "refund", note: "Damaged" }), 200);
    await waitFor(async () => (await req("GET", `/v1/marketplace/disputes/${disputeId}`, admin)).body.refund_status === "refunded", { timeoutMs: 20_000, what: "the refund" });
    await expectBalance(collector, 0);
    await expectBalance(artist, 50);
    for (const [user, rule] of [[collector, "bought"], [artist, "sold"]] as const) {
      const rows = rowsOfSource(await history(user), "sale", saleId);
      expect(rows.map((h) => [h.type, h.points]).sort()).toEqual([["earned", 1030], ["reversal", -1030]]);
      expect(rows.find((h) => h.type === "earned")!.rule).toBe(rule);
      // Told to that user alone.
      const told = await reversalEventsOf(user.id);
      expect(told).toHaveLength(1);
      expect(told[0]!.audience).toEqual([user.id]);
      expect(told[0]!.payload).toMatchObject({ user_id: user.id, source_type: "sale", source_id: saleId, rule, points: -1030, balance: user === artist ? 50 : 0 });
    }
  }, 90_000);

  it("reverses the ticket points of an event cancelled after paid tickets were bought", async () => {
    const buyer = await createUser(p.api, { scope: ["write"] });
    const eventId = await newEvent({ tickets: { in_person: { price_usd: 25, capacity: 10 } } });
    const placed = await order(buyer, eventId, { kind: "in_person", quantity: 2, payment_method_id: "pm_card_visa" });
    expect(placed.status).toBe("confirmed");
    await expectBalance(buyer, 5 + 50);
    ok(await req("DELETE", `/v1/events/${eventId}`, admin), 200);
    await waitFor(async () => (await orderStatus(buyer, placed.order_id)) === "refunded", { timeoutMs: 20_000, what: "the order's refund" });
    await expectBalance(buyer, 0);
    const rows = rowsOfSource(await history(buyer), "ticket_order", placed.order_id);
    expect(rows.map((h) => [h.type, h.points]).sort()).toEqual([["earned", 55], ["reversal", -55]]);
    expect(rows.find((h) => h.type === "earned")!.rule).toBe("tickets");
  });

  it("earns nothing for tickets to an event that features the buyer as an artist (another buyer earns)", async () => {
    const [artist, guest] = await Promise.all([createUser(p.api, { role: "artist", scope: ["write"] }), createUser(p.api, { scope: ["write"] })]);
    const eventId = await newEvent({ artist_ids: [artist.id], tickets: { in_person: { price_usd: 25, capacity: 10 } } });
    expect((await order(artist, eventId, { kind: "in_person", quantity: 2, payment_method_id: "pm_card_visa" })).status).toBe("confirmed");
    expect((await order(guest, eventId, { kind: "in_person", quantity: 1, payment_method_id: "pm_card_visa" })).status).toBe("confirmed");
    await expectBalance(guest, 5 + 25);
    expect(await balance(artist)).toMatchObject({ service_points: 0, lifetime_earned: 0 });
    expect(await history(artist)).toEqual([]);
  });

  it("gives back the points of a discount redeemed on a ticket order whose hold expired unpaid", async () => {
    const user = await createUser(p.api, { scope: ["write"] });
    await post(user);
    await post(user);
    await expectBalance(user, 20);
    const rewardId = await newReward({ name: "5 USD off tickets", points_cost: 20, kind: "discount", discount_usd: 5 });
    const eventId = await newEvent({ tickets: { in_person: { price_usd: 40, capacity: 10 } } });
    const held = await order(user, eventId, { kind: "in_person", quantity: 1 });
    expect(held.status).toBe("awaiting_payment");
    const redemption = ok(await redeem(user, rewardId, 20, held.order_id), 201);
    expect(redemption).toMatchObject({ order_id: held.order_id, discount_usd: 5, remaining_balance: 0 });
    await waitFor(async () => (await orderStatus(user, held.order_id)) === "expired", { timeoutMs: 15_000, what: `expiry of ${held.order_id}` });
    await expectBalance(user, 20);
    const rows = await history(user);
    expect(ofType(rows, "redeemed").map((h) => [h.points, h.reference_id])).toEqual([[-20, redemption.redemption_id]]);
    expect(ofType(rows, "redemption_reversed").map((h) => [h.points, h.reference_id])).toEqual([[20, redemption.redemption_id]]);
    const stored = await p.db.selectFrom("reward_redemptions").select("reversed_at").where("id", "=", redemption.redemption_id).executeTakeFirstOrThrow();
    expect(stored.reversed_at).toBeInstanceOf(Date);
  });

  it("takes back points already spent: the balance goes below zero, redemptions are refused until earnings bring it back, and the user is told", async () => {
    const user = await createUser(p.api, { scope: ["write"] });
    const posts = [await post(user), await post(user), await post(user)];
    await expectBalance(user, 30);
    const [big, small] = [await newReward({ name: "Poster", points_cost: 30, kind: "code" }), await newReward({ name: "Sticker", points_cost: 10, kind: "code" })];
    expect(ok(await redeem(user, big, 30), 201).remaining_balance).toBe(0);
    ok(await req("DELETE", `/v1/community/posts/${posts[0]}`, user.token), 200);
    await expectBalance(user, -10, 20);
    const reversal = rowsOfSource(await history(user), "post", posts[0]!).filter((h) => h.type === "reversal");
    expect(reversal.map((h) => h.points)).toEqual([-10]);
    expectProblem(await redeem(user, small, 10), 409, "insufficient_points");
    expect(await balance(user)).toMatchObject({ service_points: -10 });

    const told = await reversalEventsOf(user.id);
    expect(told).toHaveLength(1);
    expect(told[0]!.audience).toEqual([user.id]);
    expect(told[0]!.payload).toMatchObject({ user_id: user.id, source_type: "post", source_id: posts[0], rule: "post", balance: -10 });
    expect(told[0]!.payload.points).toBe(-10);
    expect(told[0]!.payload.reason).toMatch(/\S/);
    expect(Date.parse(told[0]!.payload.reversed_at as string)).not.toBeNaN();

    // Back to 0: still refused; back to the cost: redeemed.
    await post(user);
    await expectBalance(user, 0, 30);
    expectProblem(await redeem(user, small, 10), 409, "insufficient_points");
    await post(user);
    await expectBalance(user, 10, 40);
    expect(ok(await redeem(user, small, 10), 201).remaining_balance).toBe(0);
  });

  it("lists the rules publicly, with their points and what reverses them", async () => {
    const res = await req("GET", "/v1/rewards/rules");
    expect(res.status, res.text).toBe(200);
    const rules = res.body.data as { rule: string; source_type: string; event: string; who: string; points: string; reversed_when: string }[];
    const byRule = new Map(rules.map((r) => [r.rule, r]));
    // rule: source, the event that makes it stand, points, when it stops standing.
    const expected: Record<string, [string, string, RegExp, RegExp]> = {
      certified: ["certification", "artwork.certified", /^50$/, /^never$/],
      bought: ["sale", "payment.completed", /^1 per USD/, /refunded/],
      sold: ["sale", "payment.completed", /^1 per USD/, /refunded/],
      shares: ["share_purchase", "fractional.purchase_confirmed", /^1 per USD/, /refunded/],
      tickets: ["ticket_order", "ticket.purchased", /^5 \+ 1 per USD/, /refunded/],
      post: ["post", "post.created", /^10$/, /deleted/],
      joined: ["challenge_submission", "challenge.joined", /^25$/, /withdrawn/],
      won: ["challenge_win", "challenge.winners_named", /^500\D+300\D+150\D/, /^never$/],
    };
    expect([...byRule.keys()].sort()).toEqual(Object.keys(expected).sort());
    for (const [rule, [source, event, points, reversedWhen]] of Object.entries(expected)) {
      const r = byRule.get(rule)!;
      expect({ rule, source_type: r.source_type, event: r.event }).toEqual({ rule, source_type: source, event });
      expect(r.points, rule).toMatch(points);
      expect(r.reversed_when, rule).toMatch(reversedWhen);
      expect(r.who, rule).toMatch(/\S/);
    }
  });
});
