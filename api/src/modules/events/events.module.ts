import type { LedgerService } from "../ledger/ledger.service.ts";
import { defineModule, migrationsOf } from "../module.ts";
import type { PaymentsService } from "../payments/payments.service.ts";
import type { Purchases } from "../payments/purchases.service.ts";
import type { UsersService } from "../users/users.service.ts";
import { registerEventRoutes } from "./events.routes.ts";
import { EventsService } from "./events.service.ts";
import { TICKET_HOLD_EXPIRY_TASK, TicketsService } from "./tickets.service.ts";

/**
 * Platform events and their tickets (docs/integrators/events.md): admins create, edit and cancel
 * events; tickets are reserved atomically, charged through `payments`, refunded when the event is
 * cancelled, checked in once. Tables: events.tables.ts.
 */
export const eventsModule = defineModule<{ events: EventsService; tickets: TicketsService }, { users: UsersService; payments: PaymentsService; purchases: Purchases; ledger: LedgerService }>({
  name: "events",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, logger, config, users, payments, purchases, ledger }) => {
    const tickets = new TicketsService({ db, logger, users, payments, purchases, ledger, holdMs: config.events.ticketHoldMs, holdMaxShare: config.events.holdMaxShare, freeTicketsPerUser: config.events.freeTicketsPerUser });
    purchases.register(tickets.purchaseKind);
    return { events: new EventsService({ db, users }), tickets };
  },
  routes: ({ api, deps }, services) => registerEventRoutes(api, services, deps.config.publicBaseUrl),
  worker: ({ tickets }) => ({
    tasks: { general: { [TICKET_HOLD_EXPIRY_TASK]: tickets.holdExpiryTask } },
  }),
});
