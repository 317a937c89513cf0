import type { ApiRouter } from "../../http/route.ts";
import * as s from "./rewards.schemas.ts";
import type { RewardsService } from "./rewards.service.ts";

const tags = ["Rewards"];
const actorOf = (auth: { userId: string; role: "collector" | "artist" | "admin" }) => ({ userId: auth.userId, role: auth.role });

export function registerRewardRoutes(api: ApiRouter, rewards: RewardsService): void {
  api.route({
    method: "get",
    path: "/v1/rewards/balance",
    operationId: "getRewardsBalance",
    summary: "Your points and tier",
    tags,
    auth: { scope: "rewards:read" },
    response: s.balanceSchema,
    handler: ({ auth }) => rewards.balance(auth.userId),
  });

  api.route({
    method: "get",
    path: "/v1/rewards/history",
    operationId: "listRewardsHistory",
    summary: "Your points history",
    description: "Points earned, reversed, redeemed and given back, newest first, each with its source; only your own. A reversal may take the balance below zero (points already spent): redemptions wait until it is back at their cost.",
    tags,
    auth: { scope: "rewards:read" },
    query: s.listQuery,
    response: s.historySchema,
    handler: ({ auth, query }) => rewards.history(auth.userId, query),
  });

  api.route({
    method: "get",
    path: "/v1/rewards/rules",
    operationId: "listRewardRules",
    summary: "How points are earned and taken back",
    description: "The earning rules, from the table the computation uses (docs/rewards.md): each earns once per source and user, and is reversed once when its source stops standing.",
    tags,
    auth: { public: true },
    response: s.rulesSchema,
    handler: async () => rewards.rules(),
  });

  api.route({
    method: "get",
    path: "/v1/rewards/catalog",
    operationId: "listRewardsCatalog",
    summary: "Rewards you can redeem",
    description: "The active rewards, cheapest first.",
    tags,
    auth: { public: true },
    query: s.listQuery,
    response: s.rewardListSchema,
    handler: ({ query }) => rewards.catalog(query),
  });

  api.route({
    method: "post",
    path: "/v1/rewards/redeem",
    operationId: "redeemReward",
    summary: "Redeem a reward",
    description: [
      "`points_to_spend` must equal the reward's `points_cost` (400). Never a negative balance nor more redemptions than stock, whatever the concurrency: 409 `insufficient_points`, 409 `invalid_state` when the reward is out of stock or inactive; nothing is spent then. Send an `Idempotency-Key`.",
      "A `code` reward answers a unique activation code. A `discount` reward is taken off `order_id`, an order of yours awaiting payment (a ticket order made without a payment method, `POST /v1/events/:id/tickets`); without one: 400, an order that cannot take it: 409 `invalid_state`.",
    ].join("\n\n"),
    tags,
    auth: { scope: "rewards:write" },
    body: s.redeemSchema,
    errors: [404, 409],
    status: 201,
    response: s.redemptionSchema,
    handler: ({ auth, body, transaction }) => rewards.redeem(actorOf(auth), body, transaction),
  });

  const admin = { scope: "admin:write", roles: ["admin"] } as const;
  api.route({
    method: "get",
    path: "/v1/admin/rewards",
    operationId: "listRewards",
    summary: "Every reward, active or not (admin)",
    tags,
    auth: { scope: "admin:read", roles: ["admin"] },
    query: s.listQuery,
    response: s.rewardListSchema,
    handler: ({ query }) => rewards.catalog(query, true),
  });

  api.route({
    method: "post",
    path: "/v1/admin/rewards",
    operationId: "createReward",
    summary: "Add a reward to the catalog (admin)",
    description: "`code` rewards have no discount; `discount` rewards exactly one of `discount_pct` (1..100) and `discount_usd`.",
    tags,
    auth: admin,
    body: s.rewardCreateSchema,
    status: 201,
    response: s.rewardSchema,
    handler: ({ auth, body, transaction }) => rewards.create(actorOf(auth), body, transaction),
  });

  api.route({
    method: "patch",
    path: "/v1/admin/rewards/:id",
    operationId: "updateReward",
    summary: "Change a reward (admin)",
    description: "Name, cost, stock (not below what was redeemed: 409 `invalid_state`) and `active`.",
    tags,
    auth: admin,
    params: s.rewardIdParams,
    body: s.rewardPatchSchema,
    errors: [404, 409],
    response: s.rewardSchema,
    handler: ({ params, body }) => rewards.update(params.id, body),
  });
}
