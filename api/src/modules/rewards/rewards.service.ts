import type { Kysely, Transaction } from "kysely";
import type { Database } from "../../db/database.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import { type OutboxEvent, recordEvent } from "../../jobs/outbox.ts";
import { randomCode } from "../../lib/codes.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { centsToUsd, usdToCents } from "../../lib/money.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { Actor } from "../../lib/actor.ts";
import * as repo from "./rewards.repository.ts";
import { contextNeeds, describedRules, type EarningContext, earningsOf, nextThreshold, reversalsOf, type SourceRef } from "./rewards.rules.ts";
import type { RewardCreate, RewardPatch } from "./rewards.schemas.ts";
import type { Reward } from "./rewards.tables.ts";

/**
 * Where a discount reward goes: an order of the user awaiting payment (ticket orders, `ord_…`).
 * `apply` runs in the redemption's transaction; null refuses (not the user's, not awaiting payment,
 * discounted already).
 */
export interface DiscountTarget {
  prefix: string;
  apply(trx: Transaction<Database>, userId: string, orderId: string, discount: { pct?: number; usdCents?: bigint }): Promise<{ applied_cents: bigint; description: string } | null>;
}

/** What the rewards module asks the events module: which events feature which artists (their tickets earn them nothing). */
export type FeaturedArtists = (eventIds: string[]) => Promise<Map<string, Set<string>>>;

/**
 * Rewards (docs/rewards.md): points that follow what stands. The outbox handler turns what other
 * modules publish (those modules know nothing of rewards) into earnings and reversals, once per
 * source, rule and user, in the module's own ledger and balances; a catalog admins manage;
 * redemptions that never overspend (one conditional UPDATE of the balance) nor oversell (one of the
 * stock), given back when their order does not go through.
 */
export class RewardsService {
  private readonly targets: DiscountTarget[] = [];

  constructor(private readonly deps: { db: Kysely<Database>; featuredArtists: FeaturedArtists }) {}

  registerDiscountTarget(target: DiscountTarget): void {
    this.targets.push(target);
  }

  // ---- earning and reversing ----

  /** The outbox handler: one event's earnings, reversals and redemptions given back. */
  readonly onEvent = (event: OutboxEvent): Promise<void> => this.onEvents([event]);

  /**
   * The outbox's handler for a claim's events together: the artists they need in two reads (of the
   * artworks' and the events'), then every change in one transaction: the earnings in one statement
   * (a burst of certifications costs no more than one each), reversals and redemptions given back.
   */
  readonly onEvents = async (events: OutboxEvent[]): Promise<void> => {
    const needs = events.map(contextNeeds);
    const artworkIds = [...new Set(needs.flatMap((n) => n.artworks))];
    const eventIds = [...new Set(needs.flatMap((n) => n.events))];
    const [artists, featured] = await Promise.all([
      artworkIds.length === 0 ? new Map<string, string>() : repo.artistsOf(this.deps.db, artworkIds).then((rows) => new Map(rows.map((a) => [a.id, a.artist_id]))),
      eventIds.length === 0 ? new Map<string, Set<string>>() : this.deps.featuredArtists(eventIds),
    ]);
    const ctx: EarningContext = { artistOf: (id) => artists.get(id) ?? null, features: (eventId, userId) => featured.get(eventId)?.has(userId) ?? false };
    const earnings = events.flatMap((event) => earningsOf(event, ctx));
    const reversals = events.flatMap(reversalsOf);
    const closedOrders = events.filter((e) => e.type === ORDER_CLOSED_EVENT && typeof e.payload.order_id === "string").map((e) => e.payload.order_id as string);
    if (earnings.length + reversals.length + closedOrders.length === 0) return;
    const users = [...new Set([...earnings, ...reversals].map((e) => e.userId).concat(closedOrders.length ? await this.redeemersOf(closedOrders) : []))];
    await this.deps.db.transaction().execute(async (trx) => {
      await repo.lockBalances(trx, users);
      if (earnings.length > 0) await repo.applyEarnings(trx, earnings.map(ledgerInput));
      if (reversals.length > 0) {
        for (const r of await repo.applyReversals(trx, reversals.map((r) => ledgerInput({ ...r, points: 0 })))) {
          await recordEvent(
            trx,
            "reward.points_reversed",
            { user_id: r.user_id, points: -r.points, source_type: r.source_type, source_id: r.source_id, rule: r.rule, reason: r.reason, balance: r.service_points, reversed_at: iso(r.created_at) },
            [r.user_id],
          );
        }
      }
      if (closedOrders.length > 0) await repo.reverseRedemptionsOf(trx, closedOrders, () => newId("rewardEvent"));
    });
  };

  /** Who redeemed a discount on these orders (their balances are locked with the others'). */
  private redeemersOf(orderIds: string[]): Promise<string[]> {
    return repo.redeemersOf(this.deps.db, orderIds);
  }

  // ---- reads ----

  async balance(userId: string) {
    const u = await repo.pointsOf(this.deps.db, userId);
    const next = nextThreshold(u.lifetime_points);
    return {
      user_id: userId,
      service_points: u.service_points,
      tier: u.tier,
      tier_threshold_next: next,
      points_to_next_tier: next === null ? null : next - u.lifetime_points,
      lifetime_earned: u.lifetime_points,
    };
  }

  /** The caller's own ledger, newest first: earnings, reversals, redemptions and what came back, each with its source. */
  async history(userId: string, page: Page) {
    const { rows, total } = await repo.ledgerOf(this.deps.db, userId, page);
    return paginated(
      rows.map((r) => ({
        event_id: r.id,
        type: r.type,
        points: r.points,
        reason: r.reason,
        reference_id: r.reference_id,
        source: r.source_type && r.source_id ? { type: r.source_type, id: r.source_id } : null,
        rule: r.rule,
        created_at: iso(r.created_at),
      })),
      page,
      total,
    );
  }

  /** The earning rules, as the computation uses them. */
  rules() {
    return { data: describedRules() };
  }

  async catalog(page: Page, all = false) {
    const { rows, total } = await repo.listRewards(this.deps.db, page, all);
    return paginated(rows.map(toReward), page, total);
  }

  // ---- catalog (admins) ----

  create(actor: Actor, input: RewardCreate, transact: Transact = transactOn(this.deps.db)) {
    return transact(async (trx) => {
      const row = await repo.insertReward(trx, {
        id: newId("reward"),
        name: input.name,
        points_cost: input.points_cost,
        kind: input.kind,
        discount_pct: input.discount_pct ?? null,
        discount_cents: input.discount_usd !== undefined ? usdToCents(input.discount_usd) : null,
        stock: input.stock ?? null,
        active: input.active,
        created_by: actor.userId,
      });
      return toReward(row);
    });
  }

  /** Name, cost, stock (not below what was redeemed: 409) and `active`; the kind and discount stay. */
  async update(id: string, patch: RewardPatch) {
    return this.deps.db.transaction().execute(async (trx) => {
      const reward = found(isId("reward", id) ? await repo.lockReward(trx, id) : undefined, "Reward");
      if (patch.stock !== undefined && patch.stock !== null && patch.stock < reward.redeemed_count) {
        throw ApiError.conflict("invalid_state", `${reward.redeemed_count} were redeemed already: the stock cannot go below that`);
      }
      const row = await repo.updateReward(trx, reward.id, {
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.points_cost !== undefined ? { points_cost: patch.points_cost } : {}),
        ...(patch.stock !== undefined ? { stock: patch.stock } : {}),
        ...(patch.active !== undefined ? { active: patch.active } : {}),
      });
      return toReward(row);
    });
  }

  // ---- redemption ----

  /**
   * Spends `points_to_spend` (exactly the reward's cost, else 400) on a reward: the stock and the
   * balance move by conditional UPDATEs in the request's transaction (409 invalid_state when out of
   * stock or inactive, 409 insufficient_points), with the ledger row, the redemption and its
   * answer. A code reward answers a new activation code; a discount reward goes to `order_id`, an
   * order of the caller awaiting payment (refused with nothing spent otherwise).
   */
  async redeem(actor: Actor, input: { reward_id: string; points_to_spend: number; order_id?: string | undefined }, transact: Transact) {
    const reward = found(isId("reward", input.reward_id) ? await repo.findReward(this.deps.db, input.reward_id) : undefined, "Reward");
    if (input.points_to_spend !== reward.points_cost) {
      throw ApiError.validation([{ field: "points_to_spend", code: "invalid_value", message: `must equal the reward's cost, ${reward.points_cost} points` }]);
    }
    if (reward.kind === "discount" && input.order_id === undefined) {
      throw ApiError.validation([{ field: "order_id", code: "required", message: "a discount reward applies to an order of yours awaiting payment: name it" }]);
    }
    if (reward.kind === "code" && input.order_id !== undefined) {
      throw ApiError.validation([{ field: "order_id", code: "invalid_value", message: "a code reward applies to no order" }]);
    }
    return transact(async (trx) => {
      const taken = await repo.takeFromStock(trx, reward.id);
      if (!taken) {
        const now = await repo.stockOf(trx, reward.id);
        throw ApiError.conflict("invalid_state", now.active ? `The reward is out of stock (${now.stock} redeemed)` : "The reward is not active");
      }
      if (taken.points_cost !== input.points_to_spend) {
        throw ApiError.validation([{ field: "points_to_spend", code: "invalid_value", message: `must equal the reward's cost, ${taken.points_cost} points` }]);
      }
      const remaining = await repo.spendPoints(trx, actor.userId, taken.points_cost);
      if (remaining === undefined) {
        const service_points = await repo.servicePointsOf(trx, actor.userId);
        throw new ApiError(409, "insufficient_points", `The reward costs ${taken.points_cost} points; your balance is ${service_points}`, { balance: service_points });
      }
      const id = newId("redemption");
      let discountCents: bigint | null = null;
      let description = taken.name;
      if (taken.kind === "discount") {
        const target = this.targets.find((t) => input.order_id!.startsWith(`${t.prefix}_`));
        const applied = target
          ? await target.apply(trx, actor.userId, input.order_id!, taken.discount_pct !== null ? { pct: taken.discount_pct } : { usdCents: taken.discount_cents! })
          : null;
        if (!applied) {
          throw ApiError.conflict("invalid_state", `${input.order_id} is not an order of yours awaiting payment (or it has a discount already): nothing was spent`);
        }
        discountCents = applied.applied_cents;
        description = `${taken.name}: ${applied.description}`;
      }
      await repo.insertLedgerRow(trx, {
        id: newId("rewardEvent"),
        user_id: actor.userId,
        type: "redeemed",
        points: -taken.points_cost,
        reason: `Redeemed: ${taken.name}`,
        reference_id: id,
        source_key: `redemption:${id}`,
        source_type: "redemption",
        source_id: id,
        rule: null,
      });
      const row = await repo.insertRedemption(trx, {
        id,
        user_id: actor.userId,
        reward_id: taken.id,
        reward_name: description,
        points_spent: taken.points_cost,
        activation_code: taken.kind === "code" ? activationCode() : null,
        order_id: input.order_id ?? null,
        discount_cents: discountCents,
        remaining_balance: remaining,
      });
      return {
        redemption_id: row.id,
        reward_id: row.reward_id,
        reward: row.reward_name,
        points_spent: row.points_spent,
        remaining_balance: row.remaining_balance,
        activation_code: row.activation_code,
        order_id: row.order_id,
        discount_usd: row.discount_cents === null ? null : centsToUsd(row.discount_cents),
        redeemed_at: iso(row.created_at),
      };
    });
  }
}

/** XXXX-XXXX-XXXX-XXXX: 80 random bits in Crockford base 32, unguessable and easy to type. */
function activationCode(): string {
  return randomCode(16).match(/.{4}/g)!.join("-");
}

function toReward(r: Reward) {
  return {
    reward_id: r.id,
    name: r.name,
    points_cost: r.points_cost,
    kind: r.kind,
    discount_pct: r.discount_pct,
    discount_usd: r.discount_cents === null ? null : centsToUsd(r.discount_cents),
    stock: r.stock,
    remaining: r.stock === null ? null : r.stock - r.redeemed_count,
    active: r.active,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

/** The internal event a ticket order with a redeemed discount publishes when it fails, expires or is refunded. */
export const ORDER_CLOSED_EVENT = "ticket_order.closed";

/** An earning or reversal as the ledger statements take it. */
function ledgerInput(e: { userId: string; source: SourceRef; rule: string; points: number; reason: string }): repo.LedgerInput {
  return { id: newId("rewardEvent"), user_id: e.userId, source_type: e.source.type, source_id: e.source.id, rule: e.rule, points: e.points, reason: e.reason };
}
