import type { TicketsService } from "../events/tickets.service.ts";
import { defineModule, migrationsOf } from "../module.ts";
import { EARNING_RULES } from "./rewards.rules.ts";
import { registerRewardRoutes } from "./rewards.routes.ts";
import { RewardsService } from "./rewards.service.ts";

/**
 * Rewards (README, Rewards): points earned from the other modules' events (an outbox handler per
 * event of EARNING_RULES; those modules know nothing of rewards), the catalog, redemptions, and
 * discounts taken off ticket orders awaiting payment. Tables: rewards.tables.ts.
 */
export const rewardsModule = defineModule<{ rewards: RewardsService }, { tickets: TicketsService }>({
  name: "rewards",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, tickets }) => {
    const rewards = new RewardsService({ db });
    rewards.registerDiscountTarget({ prefix: "ord", apply: (trx, userId, orderId, discount) => tickets.applyDiscount(trx, userId, orderId, discount) });
    return { rewards };
  },
  routes: ({ api }, { rewards }) => registerRewardRoutes(api, rewards),
  outboxHandlers: ({ rewards }) => [...new Set(EARNING_RULES.map((r) => r.event))].map((type) => ({ type, handler: rewards.onEvent, batch: rewards.onEvents })),
});
