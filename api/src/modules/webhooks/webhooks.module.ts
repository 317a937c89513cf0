import { defineModule, migrationsOf } from "../module.ts";
import { attemptLeaseMs, WebhookSender } from "./webhooks.delivery.ts";
import { registerWebhooksRoutes } from "./webhooks.routes.ts";
import { WebhooksService } from "./webhooks.service.ts";

/**
 * Webhook subscriptions and deliveries: every committed outbox event fans out to the matching
 * subscriptions; senders claim the due deliveries from their table. Tables: webhooks.tables.ts.
 */
export const webhooksModule = defineModule({
  name: "webhooks",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, config }) => ({
    webhooks: new WebhooksService(db, { policy: config.outboundPolicy, attemptLeaseMs: attemptLeaseMs(config.webhooks.timeoutMs) }),
  }),
  routes: ({ api }, { webhooks }) => registerWebhooksRoutes(api, webhooks),
  outboxHandlers: ({ webhooks }) => [{ type: "*", handler: webhooks.fanOut, batch: webhooks.fanOutAll }],
  worker: (_services, { db, config, logger }) => {
    const sender = new WebhookSender(db, { policy: config.outboundPolicy, ...config.webhooks }, logger.child({ component: "webhooks" }));
    return {
      start: () => sender.start(config.database.url),
      stop: () => sender.stop(),
    };
  },
});
