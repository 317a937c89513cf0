/**
 * Points that follow what stands (docs/rewards.md), as a property: random steps of earnings,
 * reversals (twice, or before their earning) and redemptions by four users, each step's actions at
 * once, after which every balance is what stands less what was spent. The events are recorded as
 * their producers record them, on an API and a worker with a database of their own (the outbox
 * drained is that database's). The regression tests, one per way points could be farmed:
 * rewards-ledger.test.ts.
 *
 * REWARDS_RUNS, REWARDS_STEPS: how many runs of at most how many steps (default 40 of 8, about 10 s;
 * 200 runs take about 45 s); REWARDS_TIME_LIMIT_MS: no new run (or shrink) after that long (default
 * 120 s); REWARDS_SEED (then REWARDS_PATH): replay what a failure printed.
 */
import { randomInt } from "node:crypto";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { type NewEvent, recordEvents } from "../../api/src/jobs/outbox.ts";
import { newId } from "../../api/src/lib/ids.ts";
import { adminToken, createUser, expectProblem, type TestResponse, type TestUser, useIsolatedTestApi } from "../support/api.ts";
import { databaseNow, outboxDrained, rewardsBalance, rewardsHistory, rowsOfSource } from "../support/rewards.ts";

const api = useIsolatedTestApi();
const p = {
  api,
  get db() {
    return api.db;
  },
};

const env = process.env;
// 5 runs in `npm test`'s fast tier, 40 in `npm run test:full`.
const RUNS = Number(env.REWARDS_RUNS ?? (env.TEST_TIER === "fast" ? 5 : 40));
const STEPS = Number(env.REWARDS_STEPS ?? 8);
const TIME_LIMIT_MS = Number(env.REWARDS_TIME_LIMIT_MS ?? 120_000);
const SEED = env.REWARDS_SEED === undefined ? randomInt(2 ** 31) : Number(env.REWARDS_SEED);
/** What the property test's code reward costs. */
const COST = 15;

describe("rewards: points that follow what stands, under any interleaving", () => {
  let admin: string;
  const newReward = async (body: Record<string, unknown>) => {
    const res = await p.api.request("POST", "/v1/admin/rewards", { token: admin, body });
    expect(res.status, res.text).toBe(201);
    return res.body.reward_id as string;
  };

  beforeAll(async () => {
    admin = await adminToken(p.api);
  }, 60_000);

  it(
    "property: under random earnings, reversals (twice, or before their earning) and redemptions at once, every balance is what stands less what was spent",
    async () => {
      const rewardId = await newReward({ name: "Model sticker", points_cost: COST, kind: "code" });
      console.log(`rewards ledger property: seed ${SEED}, ${RUNS} runs of at most ${STEPS} steps (REWARDS_SEED=${SEED} replays them)`);
      const details = await fc.check(
        fc.asyncProperty(plan, async (steps) => {
          const run = await startRun(rewardId);
          try {
            for (const step of steps) await runStep(run, step);
          } catch (error) {
            throw new Error(`${(error as Error).message}\nrun:\n  ${run.trace.join("\n  ")}`, { cause: error });
          }
        }),
        { numRuns: RUNS, seed: SEED, path: env.REWARDS_PATH, interruptAfterTimeLimit: TIME_LIMIT_MS, includeErrorInReport: true },
      );
      console.log(`rewards ledger property: ${details.numRuns} runs${details.interrupted ? " (stopped at REWARDS_TIME_LIMIT_MS)" : ""}, ${details.numShrinks} shrinks; actions and outcomes: ${[...tally].map(([k, n]) => `${k} ${n}`).join(", ")}`);
      if (details.failed) throw new Error(fc.defaultReportMessage(details));
    },
    // A run in flight when the time limit passes ends before fast-check stops: room for it.
    TIME_LIMIT_MS + 120_000,
  );
});

// ---- the property test's model ----

const USERS = 4;
type Kind = "post" | "sale";
type Action =
  | { do: "earn"; kind: Kind; users: [number, number]; cents: number; twice: boolean }
  | { do: "reverse"; pick: number; twice: boolean }
  | { do: "reverseFirst"; kind: Kind; users: [number, number]; cents: number }
  | { do: "redeliver"; pick: number }
  | { do: "redeem"; user: number; times: number };

const userIndex = fc.integer({ min: 0, max: USERS - 1 });
const twoUsers = fc.tuple(userIndex, fc.integer({ min: 1, max: USERS - 1 })).map(([a, d]): [number, number] => [a, (a + d) % USERS]);
const kind = fc.constantFrom<Kind>("post", "sale");
// 1.00..40.99 USD: whole points, rounded down.
const cents = fc.integer({ min: 100, max: 4099 });
const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ do: fc.constant("earn" as const), kind, users: twoUsers, cents, twice: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ do: fc.constant("reverse" as const), pick: fc.nat(), twice: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant("reverseFirst" as const), kind, users: twoUsers, cents }) },
  { weight: 1, arbitrary: fc.record({ do: fc.constant("redeliver" as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ do: fc.constant("redeem" as const), user: userIndex, times: fc.integer({ min: 1, max: 4 }) }) },
);
/** Steps of actions run at once. */
const plan = fc.array(fc.array(action, { minLength: 1, maxLength: 6, size: "max" }), { minLength: 1, maxLength: STEPS, size: "max" });
const tally = new Map<string, number>();
const count = (key: string, n = 1) => tally.set(key, (tally.get(key) ?? 0) + n);

/** A source of the run: a post (its author earns 10) or a sale (its buyer and its seller earn 1 per USD). */
interface Source {
  kind: Kind;
  id: string;
  /** [author] or [buyer, seller]. */
  users: number[];
  usd: number;
  artworkId: string;
  earnRecorded: boolean;
  reversalRecorded: boolean;
}

interface Run {
  users: TestUser[];
  rewardId: string;
  startedAt: Date;
  sources: Source[];
  /** The outbox events the run recorded (a redelivery picks one). */
  events: string[];
  /** Points each user spent on redemptions that succeeded. */
  spent: number[];
  redemptions: number[];
  trace: string[];
}

const pointsOf = (s: Source, user: number) => (s.users.includes(user) ? (s.kind === "post" ? 10 : Math.floor(s.usd)) : 0);
const standing = (s: Source) => s.earnRecorded && !s.reversalRecorded;

function eventsOf(run: Run, s: Source, what: "earn" | "reverse"): NewEvent {
  const [a, b] = s.users.map((i) => run.users[i]!.id);
  if (s.kind === "post") {
    // As the community module publishes them.
    const payload = { post_id: s.id, author_id: a, type: "discussion" };
    return what === "earn"
      ? { type: "post.created", payload: { ...payload, created_at: new Date().toISOString() }, audience: [a!] }
      : { type: "post.deleted", payload: { ...payload, removed_by: a, reason: "The post was deleted", deleted_at: new Date().toISOString() }, audience: [a!] };
  }
  // As the marketplace publishes them.
  const payload = { tx_id: s.id, artwork_id: s.artworkId, buyer_id: a, seller_id: b };
  return what === "earn"
    ? { type: "payment.completed", payload: { ...payload, amount_usd: s.usd, completed_at: new Date().toISOString() }, audience: [a!, b!] }
    : { type: "sale.refunded", payload: { ...payload, refunded_usd: s.usd, reason: "The sale was refunded (a dispute)", refunded_at: new Date().toISOString() }, audience: [a!, b!] };
}

async function startRun(rewardId: string): Promise<Run> {
  const users = await Promise.all(Array.from({ length: USERS }, () => createUser(p.api, { scope: ["write"] })));
  return { users, rewardId, startedAt: await databaseNow(p.db), sources: [], events: [], spent: Array(USERS).fill(0), redemptions: Array(USERS).fill(0), trace: [] };
}

async function record(run: Run, events: NewEvent[]): Promise<void> {
  // One transaction each: a producer that published the same fact twice, or the events of one source in that order.
  for (const e of events) run.events.push(...(await recordEvents(p.db, [e])));
}

async function runStep(run: Run, step: Action[]): Promise<void> {
  const before = [...run.sources];
  const eventsBefore = [...run.events];
  const balanceBefore = run.users.map((_, u) => expectedBalance(run, u));
  // What may land during the step, per user: earnings (up), reversals (down).
  const up = Array(USERS).fill(0);
  const down = Array(USERS).fill(0);
  const work: Promise<unknown>[] = [];
  const redeems: { user: number; answers: Promise<TestResponse[]> }[] = [];
  const newSource = (k: Kind, users: [number, number], c: number): Source => {
    const s: Source = { kind: k, id: k === "post" ? newId("post") : newId("transaction"), users: k === "post" ? [users[0]] : users, usd: c / 100, artworkId: newId("artwork"), earnRecorded: false, reversalRecorded: false };
    run.sources.push(s);
    return s;
  };
  const lines: string[] = [];
  for (const a of step) {
    count(a.do);
    switch (a.do) {
      case "earn": {
        const s = newSource(a.kind, a.users, a.cents);
        s.earnRecorded = true;
        for (let u = 0; u < USERS; u++) up[u] += pointsOf(s, u);
        lines.push(`earn ${s.kind} ${s.id} u${s.users.join("/u")} ${s.usd}${a.twice ? " twice" : ""}`);
        const e = eventsOf(run, s, "earn");
        work.push(...(a.twice ? [record(run, [e]), record(run, [e])] : [record(run, [e])]));
        break;
      }
      case "reverse": {
        if (before.length === 0) break;
        const s = before[a.pick % before.length]!;
        if (s.earnRecorded && !s.reversalRecorded) for (let u = 0; u < USERS; u++) down[u] += pointsOf(s, u);
        s.reversalRecorded = true;
        lines.push(`reverse ${s.kind} ${s.id}${a.twice ? " twice" : ""}`);
        const e = eventsOf(run, s, "reverse");
        work.push(...(a.twice ? [record(run, [e]), record(run, [e])] : [record(run, [e])]));
        break;
      }
      case "reverseFirst": {
        const s = newSource(a.kind, a.users, a.cents);
        s.earnRecorded = s.reversalRecorded = true;
        // Dispatchers may still hand the earning out first: it may land for a moment.
        for (let u = 0; u < USERS; u++) up[u] += pointsOf(s, u);
        lines.push(`reverse then earn ${s.kind} ${s.id} u${s.users.join("/u")} ${s.usd}`);
        work.push(record(run, [eventsOf(run, s, "reverse"), eventsOf(run, s, "earn")]));
        break;
      }
      case "redeliver": {
        if (eventsBefore.length === 0) break;
        const id = eventsBefore[a.pick % eventsBefore.length]!;
        lines.push(`redeliver ${id}`);
        // As a dispatcher presumed dead leaves it: handed out again.
        work.push(p.db.updateTable("outbox_events").set({ dispatched_at: null }).where("id", "=", id).execute());
        break;
      }
      case "redeem": {
        lines.push(`redeem u${a.user} x${a.times}`);
        const user = run.users[a.user]!;
        redeems.push({ user: a.user, answers: Promise.all(Array.from({ length: a.times }, () => p.api.request("POST", "/v1/rewards/redeem", { token: user.token, body: { reward_id: run.rewardId, points_to_spend: COST } }))) });
        break;
      }
    }
  }
  run.trace.push(`step ${run.trace.length + 1}: ${lines.join("; ")} (balances before: ${balanceBefore.join(", ")})`);
  await Promise.all([...work, ...redeems.map((r) => r.answers)]);

  // Redemptions at once never spend beyond the balance, and are refused only when it fell short.
  for (let u = 0; u < USERS; u++) {
    const answers = (await Promise.all(redeems.filter((r) => r.user === u).map((r) => r.answers))).flat();
    if (answers.length === 0) continue;
    const made = answers.filter((r) => r.status === 201);
    for (const r of answers.filter((x) => x.status !== 201)) expectProblem(r, 409, "insufficient_points");
    for (const r of made) {
      expect(r.body.points_spent).toBe(COST);
      expect(r.body.remaining_balance, `u${u}: a redemption left ${r.body.remaining_balance}`).toBeGreaterThanOrEqual(0);
    }
    const k = made.length;
    count(`redemptions made`, k);
    count(`redemptions refused`, answers.length - k);
    expect(k * COST, `u${u}: ${k} redemptions of ${COST} on ${balanceBefore[u]} (+${up[u]} landing)`).toBeLessThanOrEqual(Math.max(0, balanceBefore[u]! + up[u]));
    if (k < answers.length) expect((k + 1) * COST, `u${u}: refused with ${balanceBefore[u]} (-${down[u]} reversed) after ${k}`).toBeGreaterThan(balanceBefore[u]! - down[u]);
    run.spent[u] = run.spent[u]! + k * COST;
    run.redemptions[u] = run.redemptions[u]! + k;
  }

  await outboxDrained(p.db, run.startedAt);
  await checkLedger(run);
}

function expectedBalance(run: Run, u: number): number {
  return run.sources.filter(standing).reduce((sum, s) => sum + pointsOf(s, u), 0) - run.spent[u]!;
}

/** Every user's balance, lifetime and history against the model. */
async function checkLedger(run: Run): Promise<void> {
  for (let u = 0; u < USERS; u++) {
    const user = run.users[u]!;
    const [balance, rows] = await Promise.all([rewardsBalance(p.api, user), rewardsHistory(p.api, user)]);
    const lifetime = run.sources.filter(standing).reduce((sum, s) => sum + pointsOf(s, u), 0);
    const got = { service_points: balance.service_points, lifetime_earned: balance.lifetime_earned };
    const expected = { service_points: lifetime - run.spent[u]!, lifetime_earned: lifetime };
    if (got.service_points < 0) count("balances below zero");
    expect(got, `u${u}: ${JSON.stringify(got)}, the model says ${JSON.stringify(expected)}; history: ${rows.map((h) => `${h.type} ${h.points} ${h.source?.id ?? h.reference_id}`).join(", ")}`).toEqual(expected);
    expect(rows.reduce((sum, h) => sum + h.points, 0), `u${u}: the history sums to the balance`).toBe(balance.service_points);
    expect(rows.filter((h) => h.type === "redeemed").map((h) => h.points)).toEqual(Array(run.redemptions[u]).fill(-COST));
    expect(rows.filter((h) => h.type === "redemption_reversed" || h.type === "adjustment")).toEqual([]);
    for (const s of run.sources.filter((x) => x.users.includes(u))) {
      const theirs = rowsOfSource(rows, s.kind, s.id);
      const label = `u${u}, ${s.kind} ${s.id} (${s.reversalRecorded ? "reversed" : "standing"})`;
      expect(theirs.filter((h) => h.type === "earned").length, label).toBeLessThanOrEqual(1);
      expect(theirs.filter((h) => h.type === "reversal").length, label).toBeLessThanOrEqual(1);
      expect(theirs.reduce((sum, h) => sum + h.points, 0), label).toBe(standing(s) ? pointsOf(s, u) : 0);
    }
  }
}
