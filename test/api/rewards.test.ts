/**
 * Rewards on real pieces (Postgres, the chain and Ponder for certification, the sandbox processor,
 * the API over HTTP and its worker's outbox): points earned from the other modules' events, each
 * once under replays and storms, tiers at each threshold, redemptions that never overspend or
 * oversell under races, discounts taken off a ticket order awaiting payment, the access matrix and
 * refused inputs that change nothing.
 */
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { type OutboxEvent, recordEvent } from "../../api/src/jobs/outbox.ts";
import { newId } from "../../api/src/lib/ids.ts";
import { useArtworkPlatform } from "../support/artworks.ts";
import { certifiedArtwork } from "../support/marketplace.ts";
import { waitFor } from "../support/wait.ts";
import { adminToken, createUser, expectProblem, type TestUser } from "../support/api.ts";

const p = useArtworkPlatform();
const DAY = 86_400_000;

describe("rewards", () => {
  let admin: string;
  let artist: TestUser;
  let buyer: TestUser;
  let other: TestUser;
  let reader: TestUser;

  const req = (method: string, path: string, token?: string, body?: unknown, headers: Record<string, string> = {}) => p.api.request(method, path, { token, body, headers });
  const balance = async (user: TestUser) => (await req("GET", "/v1/rewards/balance", user.token)).body as { service_points: number; lifetime_earned: number; tier: string; tier_threshold_next: number | null; points_to_next_tier: number | null };
  const waitPoints = (user: TestUser, lifetime: number) =>
    waitFor(async () => (await balance(user)).lifetime_earned === lifetime, { timeoutMs: 15_000, what: `${user.id} at ${lifetime} lifetime points` });
  /** Points for `user` the way the marketplace records a purchase: 1 per USD paid (no seller here). */
  const grant = (user: TestUser, points: number) =>
    recordEvent(p.db, "payment.completed", { tx_id: `txn_test_${randomBytes(4).toString("hex")}`, buyer_id: user.id, amount_usd: points }, [user.id]);
  const newReward = async (body: Record<string, unknown>) => {
    const res = await req("POST", "/v1/admin/rewards", admin, body);
    expect(res.status, res.text).toBe(201);
    return res.body as { reward_id: string; points_cost: number };
  };
  const redeem = (user: TestUser, body: Record<string, unknown>, key?: string) => req("POST", "/v1/rewards/redeem", user.token, body, key ? { "Idempotency-Key": key } : {});
  const sumOfLedger = async (userId: string) =>
    Number((await p.db.selectFrom("reward_ledger").select((eb) => eb.fn.coalesce(eb.fn.sum<string>("points"), eb.val("0")).as("n")).where("user_id", "=", userId).executeTakeFirstOrThrow()).n);
  const earnedOfLedger = async (userId: string) =>
    Number((await p.db.selectFrom("reward_ledger").select((eb) => eb.fn.coalesce(eb.fn.sum<string>("points"), eb.val("0")).as("n")).where("user_id", "=", userId).where("type", "=", "earned").executeTakeFirstOrThrow()).n);

  beforeAll(async () => {
    [admin, artist, buyer, other, reader] = await Promise.all([
      adminToken(p.api),
      createUser(p.api, { role: "artist" }),
      createUser(p.api, { scope: ["write"] }),
      createUser(p.api, { scope: ["write"] }),
      createUser(p.api, { scope: ["users:read"] }),
    ]);
  }, 60_000);

  it("earns by the rules from what users do elsewhere: certification, tickets, posts, challenges, sales, shares, wins", async () => {
    // Real producers: a certified artwork (+50 to its artist), a ticket order of 25 USD (5 + 25), a post (+10), a challenge joined (+25).
    await certifiedArtwork(p, artist);
    await waitPoints(artist, 50);
    const start = Date.now() + 10 * DAY;
    const event = await req("POST", "/v1/events", admin, { title: "Rewards night", type: "talk", format: "in_person", location: "Oslo", starts_at: new Date(start).toISOString(), ends_at: new Date(start + 3_600_000).toISOString(), tickets: { in_person: { price_usd: 25, capacity: 10 } } });
    expect(event.status, event.text).toBe(201);
    const order = await req("POST", `/v1/events/${event.body.event_id}/tickets`, buyer.token, { kind: "in_person", quantity: 1, payment_method_id: "pm_card_visa" });
    expect(order.status, order.text).toBe(201);
    await waitPoints(buyer, 30);
    expect((await req("POST", "/v1/community/posts", buyer.token, { type: "discussion", content: "hello", tags: [] })).status).toBe(201);
    await waitPoints(buyer, 40);
    const challenge = await req("POST", "/v1/community/challenges", admin, { title: "Ink", theme: "ink", prize_pool_usd: 10, starts_at: new Date(Date.now() - 1000).toISOString(), deadline: new Date(Date.now() + DAY).toISOString() });
    expect(challenge.status, challenge.text).toBe(201);
    expect((await req("POST", `/v1/community/challenges/${challenge.body.challenge_id}/submissions`, buyer.token, { content: "mine" })).status).toBe(201);
    await waitPoints(buyer, 65);

    // Recorded as their producers record them: a sale (both parties, 1 per USD), shares, a challenge's winners.
    await recordEvent(p.db, "payment.completed", { tx_id: "txn_test_1", buyer_id: buyer.id, seller_id: artist.id, amount_usd: 120.99 }, [buyer.id, artist.id]);
    await recordEvent(p.db, "fractional.purchase_confirmed", { purchase_id: "frac_test_1", buyer_id: buyer.id, total_paid_usd: 40 }, [buyer.id]);
    await recordEvent(p.db, "challenge.winners_named", { challenge_id: "chl_test", winners: [{ submission_id: "sub_a", user_id: other.id, rank: 1 }, { submission_id: "sub_b", user_id: buyer.id, rank: 2 }] }, [other.id, buyer.id]);
    await waitPoints(buyer, 65 + 120 + 40 + 300);
    await waitPoints(artist, 50 + 120);
    await waitPoints(other, 500);

    const history = await req("GET", "/v1/rewards/history?limit=100", buyer.token);
    expect(history.status).toBe(200);
    const reasons = (history.body.data as { reason: string; points: number; type: string; event_id: string; reference_id: string }[]).map((h) => [h.reason, h.points]);
    expect(reasons).toEqual(
      expect.arrayContaining([
        ["Event tickets purchased", 30],
        ["Community post", 10],
        ["Challenge joined", 25],
        ["Marketplace purchase", 120],
        ["Fractional shares purchased", 40],
        ["Challenge won (place 2)", 300],
      ]),
    );
    expect(history.body.data.every((h: { event_id: string; type: string }) => h.event_id.startsWith("rev_") && h.type === "earned")).toBe(true);
    expect(history.body.data.find((h: { reason: string }) => h.reason === "Event tickets purchased").reference_id).toBe(order.body.order_id);
    // Someone else's history is not visible: each caller reads only their own.
    const theirs = await req("GET", "/v1/rewards/history", other.token);
    expect(theirs.body.data.map((h: { reason: string }) => h.reason)).toEqual(["Challenge won (place 1)"]);
  });

  it("earns once per event, however often it is dispatched, and keeps the users' sums equal to the ledger under a storm", async () => {
    const users = await Promise.all(Array.from({ length: 5 }, () => createUser(p.api, { scope: ["rewards:read"] })));
    const rewards = p.api.server.platform.services.rewards;
    // 100 events (20 per user, 6..25 points each), each recorded once and dispatched up to three times, concurrently.
    const expected = new Map<string, number>();
    const ids = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const user = users[i % 5]!;
        const points = 6 + (i % 20);
        expected.set(user.id, (expected.get(user.id) ?? 0) + points);
        return { user, id: await grant(user, points) };
      }),
    );
    // Besides the dispatcher's hand-out: one more of every event, and a third of every other one.
    const handOut = async (id: string) => {
      const row = await p.db.selectFrom("outbox_events").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
      await rewards.onEvent({ id: row.id, type: row.event_type, payload: row.payload as Record<string, unknown>, audience: row.audience, createdAt: row.created_at });
    };
    await Promise.all(ids.flatMap(({ id }, i) => (i % 2 === 0 ? [handOut(id), handOut(id)] : [handOut(id)])));
    for (const user of users) await waitPoints(user, expected.get(user.id)!);
    // Every hand-out over, then: the sums are the ledger's, one row per event. The direct ones are
    // awaited above; the dispatcher's end as it marks its events dispatched.
    await waitFor(async () => {
      const undispatched = await p.db.selectFrom("outbox_events").select("id").where("id", "in", ids.map((x) => x.id)).where("dispatched_at", "is", null).execute();
      return undispatched.length === 0;
    }, { what: "every dispatch of the events done" });
    for (const user of users) {
      const row = await p.db.selectFrom("reward_balances").select(["service_points", "lifetime_points"]).where("user_id", "=", user.id).executeTakeFirstOrThrow();
      expect(row.lifetime_points).toBe(expected.get(user.id));
      expect(row.service_points).toBe(await sumOfLedger(user.id));
      expect(row.lifetime_points).toBe(await earnedOfLedger(user.id));
      expect(await p.db.selectFrom("reward_ledger").select("id").where("user_id", "=", user.id).execute()).toHaveLength(20);
    }
  });

  it("earns a claim's events handed out together, each once, when claims that share users in other orders race", async () => {
    const users = await Promise.all(Array.from({ length: 4 }, () => createUser(p.api, { role: "artist", scope: ["write", "rewards:read"] })));
    const artworkId = await certifiedArtwork(p, users[0]!);
    await waitPoints(users[0]!, 50);
    const rewards = p.api.server.platform.services.rewards;
    const expected = new Map<string, number>([[users[0]!.id, 50]]);
    const earn = (userId: string, points: number) => expected.set(userId, (expected.get(userId) ?? 0) + points);
    // 6 claims of 25 events: sales between every pair of users, in another order in each claim, and
    // certifications of users[0]'s artwork (its artist is read from the database) delivered again:
    // its source earned its 50 already, so they earn nothing more.
    const claims = Array.from({ length: 6 }, (_, c) =>
      Array.from({ length: 25 }, (_, i): OutboxEvent => {
        const id = newId("webhookEvent");
        if (i % 5 === 4) return { id, type: "artwork.certified", payload: { artwork_id: artworkId }, audience: [], createdAt: new Date() };
        // Never one user on both sides: a sale whose buyer's account is its seller's earns nothing (docs/rewards.md).
        const [buyer, seller] = [users[(c + i) % 4]!, users[(c + i + 1 + (i % 3)) % 4]!];
        earn(buyer.id, 1 + i);
        earn(seller.id, 1 + i);
        return { id, type: "payment.completed", payload: { tx_id: `txn_${id}`, buyer_id: buyer.id, seller_id: seller.id, amount_usd: 1 + i + 0.99 }, audience: [], createdAt: new Date() };
      }),
    );
    // Each claim handed out twice at once, forwards and backwards (a dispatcher presumed dead and the
    // one that took its events over): every write locks several users' rows, in no common order of events.
    const results = await Promise.allSettled([...claims, ...claims.map((claim) => [...claim].reverse())].map((claim) => rewards.onEvents(claim)));
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    for (const user of users) {
      const row = await p.db.selectFrom("reward_balances").select(["service_points", "lifetime_points"]).where("user_id", "=", user.id).executeTakeFirstOrThrow();
      expect(row.lifetime_points).toBe(expected.get(user.id));
      expect(row.service_points).toBe(await sumOfLedger(user.id));
      expect(row.lifetime_points).toBe(await earnedOfLedger(user.id));
    }
    // One ledger row per (event, rule, user): 6 claims x (5 certifications + 20 sales x 2 users).
    // One ledger row per (source, rule, user): 6 claims x 20 sales x 2 users, and the one certification.
    const sales = claims.flat().filter((e) => e.type === "payment.completed").map((e) => e.payload.tx_id as string);
    const written = await p.db.selectFrom("reward_ledger").select("source_key").where("source_id", "in", sales).execute();
    expect(written).toHaveLength(6 * 20 * 2);
    expect(new Set(written.map((r) => r.source_key)).size).toBe(written.length);
    expect(await p.db.selectFrom("reward_ledger").select("id").where("source_type", "=", "certification").where("source_id", "=", artworkId).execute()).toHaveLength(1);
  });

  it("moves the tier at each threshold and says how far the next one is", async () => {
    const user = await createUser(p.api, { scope: ["rewards:read"] });
    expect(await balance(user)).toMatchObject({ service_points: 0, tier: "bronze", tier_threshold_next: 1000, points_to_next_tier: 1000, lifetime_earned: 0 });
    const steps: [number, string, number | null, number | null][] = [
      [999, "bronze", 1000, 1],
      [1000, "silver", 5000, 4000],
      [4999, "silver", 5000, 1],
      [5000, "gold", 15000, 10000],
      [14999, "gold", 15000, 1],
      [15000, "platinum", null, null],
    ];
    let total = 0;
    for (const [lifetime, tier, next, toNext] of steps) {
      await grant(user, lifetime - total);
      total = lifetime;
      await waitPoints(user, lifetime);
      expect(await balance(user)).toMatchObject({ tier, tier_threshold_next: next, points_to_next_tier: toNext, lifetime_earned: lifetime, service_points: lifetime });
    }
  });

  it("never overspends: 20 redemptions at once on a balance that covers 3 make exactly 3", async () => {
    const user = await createUser(p.api, { scope: ["rewards:write", "rewards:read"] });
    await grant(user, 350);
    await waitPoints(user, 350);
    const reward = await newReward({ name: "Print voucher", points_cost: 100, kind: "code" });
    const answers = await Promise.all(Array.from({ length: 20 }, () => redeem(user, { reward_id: reward.reward_id, points_to_spend: 100 })));
    const ok = answers.filter((r) => r.status === 201);
    expect(ok).toHaveLength(3);
    for (const r of answers.filter((x) => x.status !== 201)) expectProblem(r, 409, "insufficient_points");
    const codes = ok.map((r) => r.body.activation_code as string);
    expect(new Set(codes).size).toBe(3);
    for (const code of codes) expect(code).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$/);
    expect(ok.map((r) => r.body.remaining_balance).sort((a, b) => a - b)).toEqual([50, 150, 250]);
    expect(await balance(user)).toMatchObject({ service_points: 50, lifetime_earned: 350 });
    expect(await sumOfLedger(user.id)).toBe(50);
    const spent = (await req("GET", "/v1/rewards/history", user.token)).body.data.filter((h: { type: string }) => h.type === "redeemed");
    expect(spent.map((h: { points: number }) => h.points)).toEqual([-100, -100, -100]);
  });

  it("never oversells: stock 2 and 10 redeemers with enough points make exactly 2", async () => {
    const users = await Promise.all(Array.from({ length: 10 }, () => createUser(p.api, { scope: ["rewards:write", "rewards:read"] })));
    await Promise.all(users.map((u) => grant(u, 60)));
    await Promise.all(users.map((u) => waitPoints(u, 60)));
    const reward = await newReward({ name: "Studio visit", points_cost: 50, kind: "code", stock: 2 });
    const answers = await Promise.all(users.map((u) => redeem(u, { reward_id: reward.reward_id, points_to_spend: 50 })));
    expect(answers.filter((r) => r.status === 201)).toHaveLength(2);
    for (const r of answers.filter((x) => x.status !== 201)) expectProblem(r, 409, "invalid_state");
    const balances = await Promise.all(users.map(balance));
    expect(balances.filter((b) => b.service_points === 10)).toHaveLength(2);
    expect(balances.filter((b) => b.service_points === 60)).toHaveLength(8);
    const catalog = await req("GET", "/v1/admin/rewards?limit=100", admin);
    expect(catalog.body.data.find((r: { reward_id: string }) => r.reward_id === reward.reward_id)).toMatchObject({ stock: 2, remaining: 0 });
    // Its stock cannot go below what was redeemed.
    expectProblem(await req("PATCH", `/v1/admin/rewards/${reward.reward_id}`, admin, { stock: 1 }), 409, "invalid_state");
  });

  it("takes a discount off a ticket order awaiting payment, and refuses it with nothing spent otherwise", async () => {
    const user = await createUser(p.api, { scope: ["write"] });
    await grant(user, 500);
    await waitPoints(user, 500);
    const pct = await newReward({ name: "20 % off tickets", points_cost: 100, kind: "discount", discount_pct: 20 });
    const fixed = await newReward({ name: "5 USD off", points_cost: 100, kind: "discount", discount_usd: 5 });
    const start = Date.now() + 5 * DAY;
    const event = await req("POST", "/v1/events", admin, { title: "Discounted", type: "workshop", format: "in_person", location: "Rome", starts_at: new Date(start).toISOString(), ends_at: new Date(start + 3_600_000).toISOString(), tickets: { in_person: { price_usd: 40, capacity: 10 } } });
    const held = await req("POST", `/v1/events/${event.body.event_id}/tickets`, user.token, { kind: "in_person", quantity: 2 });
    expect(held.status, held.text).toBe(201);
    expect(held.body).toMatchObject({ status: "awaiting_payment", total_usd: 80, amount_due_usd: 80 });
    const orderId = held.body.order_id as string;

    // Refused, nothing spent: no order named, another's order, an unknown one.
    const othersOrder = (await req("POST", `/v1/events/${event.body.event_id}/tickets`, other.token, { kind: "in_person", quantity: 1 })).body.order_id as string;
    expectProblem(await redeem(user, { reward_id: pct.reward_id, points_to_spend: 100 }), 400, "validation_failed");
    expectProblem(await redeem(user, { reward_id: pct.reward_id, points_to_spend: 100, order_id: othersOrder }), 409, "invalid_state");
    expectProblem(await redeem(user, { reward_id: pct.reward_id, points_to_spend: 100, order_id: "ord_01JD3Y5V0Q3G7W7J6T4N4C2X1M" }), 409, "invalid_state");
    expect((await balance(user)).service_points).toBe(500);

    const applied = await redeem(user, { reward_id: pct.reward_id, points_to_spend: 100, order_id: orderId }, `discount-${orderId}`);
    expect(applied.status, applied.text).toBe(201);
    expect(applied.body).toMatchObject({ order_id: orderId, discount_usd: 16, points_spent: 100, remaining_balance: 400, activation_code: null });
    // One discount per order.
    expectProblem(await redeem(user, { reward_id: fixed.reward_id, points_to_spend: 100, order_id: orderId }), 409, "invalid_state");
    expect((await balance(user)).service_points).toBe(400);
    const order = await req("GET", `/v1/ticket-orders/${orderId}`, user.token);
    expect(order.body).toMatchObject({ total_usd: 80, discount_usd: 16, amount_due_usd: 64 });

    const paid = await req("POST", `/v1/ticket-orders/${orderId}/pay`, user.token, { payment_method_id: "pm_card_visa" });
    expect(paid.status, paid.text).toBe(201);
    expect(paid.body.status).toBe("confirmed");
    const charge = await p.db.selectFrom("sandbox_charges").select("amount_cents").where("idempotency_key", "=", `ticket_order:${orderId}`).executeTakeFirstOrThrow();
    expect(Number(charge.amount_cents)).toBe(6400);
    const txn = await p.db.selectFrom("transactions").select(["amount_cents", "status"]).where("reference_id", "=", orderId).executeTakeFirstOrThrow();
    expect({ amount: Number(txn.amount_cents), status: txn.status }).toEqual({ amount: 6400, status: "completed" });
    // A confirmed order takes no discount.
    expectProblem(await redeem(user, { reward_id: fixed.reward_id, points_to_spend: 100, order_id: orderId }), 409, "invalid_state");
    // Points for the order: 5 + 64 USD paid.
    await waitPoints(user, 500 + 69);
  });

  it("manages the catalog (admins), lists the active rewards publicly, and refuses bad inputs and callers with a problem", async () => {
    const user = await createUser(p.api, { scope: ["write"] });
    await grant(user, 100);
    await waitPoints(user, 100);
    const before = Number((await p.db.selectFrom("rewards").select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n);
    for (const bad of [
      {},
      { name: "x", points_cost: 10, kind: "gift" },
      { name: "x", points_cost: -1, kind: "code" },
      { name: "x", points_cost: 0, kind: "code" },
      { name: "x", points_cost: 10, kind: "discount" },
      { name: "x", points_cost: 10, kind: "discount", discount_pct: 10, discount_usd: 5 },
      { name: "x", points_cost: 10, kind: "discount", discount_pct: 101 },
      { name: "x", points_cost: 10, kind: "code", discount_usd: 5 },
      { name: "", points_cost: 10, kind: "code" },
      { name: "x", points_cost: 10, kind: "code", stock: -1 },
      { name: "x", points_cost: 10, kind: "code", extra: true },
    ]) {
      expectProblem(await req("POST", "/v1/admin/rewards", admin, bad), 400, "validation_failed");
    }
    expect(Number((await p.db.selectFrom("rewards").select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n)).toBe(before);
    expectProblem(await req("POST", "/v1/admin/rewards", user.token, { name: "x", points_cost: 10, kind: "code" }), 403, "insufficient_scope");
    expectProblem(await req("GET", "/v1/admin/rewards", user.token), 403, "insufficient_scope");

    const hidden = await newReward({ name: "Retired", points_cost: 10, kind: "code", active: false });
    const shown = await newReward({ name: "Poster", points_cost: 30, kind: "code" });
    const catalog = await req("GET", "/v1/rewards/catalog?limit=100");
    expect(catalog.status).toBe(200);
    const ids = catalog.body.data.map((r: { reward_id: string }) => r.reward_id);
    expect(ids).toContain(shown.reward_id);
    expect(ids).not.toContain(hidden.reward_id);

    // Redemption refusals change nothing.
    expectProblem(await redeem(user, { reward_id: shown.reward_id, points_to_spend: 29 }), 400, "validation_failed");
    expectProblem(await redeem(user, { reward_id: shown.reward_id, points_to_spend: 30, order_id: "ord_01JD3Y5V0Q3G7W7J6T4N4C2X1M" }), 400, "validation_failed");
    expectProblem(await redeem(user, { reward_id: shown.reward_id }), 400, "validation_failed");
    expectProblem(await redeem(user, { reward_id: "rwd_01JD3Y5V0Q3G7W7J6T4N4C2X1M", points_to_spend: 30 }), 404, "not_found");
    expectProblem(await redeem(user, { reward_id: hidden.reward_id, points_to_spend: 10 }), 409, "invalid_state");
    expect((await balance(user)).service_points).toBe(100);
    // An edit: deactivated, it leaves the catalog.
    const off = await req("PATCH", `/v1/admin/rewards/${shown.reward_id}`, admin, { active: false, name: "Poster (gone)" });
    expect(off.status, off.text).toBe(200);
    expect(off.body).toMatchObject({ active: false, name: "Poster (gone)", kind: "code" });
    expectProblem(await req("PATCH", `/v1/admin/rewards/${shown.reward_id}`, admin, { kind: "discount" }), 400, "validation_failed");

    // Access: anonymous, a token without the rewards scopes.
    expectProblem(await req("GET", "/v1/rewards/balance"), 401, "unauthenticated");
    expectProblem(await req("GET", "/v1/rewards/balance", reader.token), 403, "insufficient_scope");
    expectProblem(await req("GET", "/v1/rewards/history", reader.token), 403, "insufficient_scope");
    expectProblem(await redeem(reader, { reward_id: shown.reward_id, points_to_spend: 30 }), 403, "insufficient_scope");
  });
});
