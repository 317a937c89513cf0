import type { EventsService } from "../events/events.service.ts";
import type { TicketsService } from "../events/tickets.service.ts";
import { defineModule, migrationsOf } from "../module.ts";
import { RULE_EVENTS } from "./rewards.rules.ts";
import { registerRewardRoutes } from "./rewards.routes.ts";
import { ORDER_CLOSED_EVENT, RewardsService } from "./rewards.service.ts";

/**
 * Rewards (docs/rewards.md): points that follow what stands, earned and reversed from the other
 * modules' events (an outbox handler per event of EARNING_RULES, and a ticket order closed with a
 * discount; those modules know nothing of rewards), the catalog, redemptions, and discounts taken
 * off ticket orders awaiting payment. Tables: rewards.tables.ts (a user's points are the module's
 * own: `reward_balances`; users read them through the `reward_standings` view).
 */
export const rewardsModule = defineModule<{ rewards: RewardsService }, { events: EventsService; tickets: TicketsService }>({
  name: "rewards",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, events, tickets }) => {
    const rewards = new RewardsService({ db, featuredArtists: (ids) => events.featuredArtists(ids) });
    rewards.registerDiscountTarget({ prefix: "ord", apply: (trx, userId, orderId, discount) => tickets.applyDiscount(trx, userId, orderId, discount) });
    return { rewards };
  },
  routes: ({ api }, { rewards }) => registerRewardRoutes(api, rewards),
  outboxHandlers: ({ rewards }) => [...RULE_EVENTS, ORDER_CLOSED_EVENT].map((type) => ({ type, handler: rewards.onEvent, batch: rewards.onEvents })),
});
