import { defineModule, migrationsOf } from "../module.ts";
import { attemptLeaseMs, WEBHOOK_DELIVER_TASK, WebhookSender } from "./webhooks.delivery.ts";
import { registerWebhooksRoutes } from "./webhooks.routes.ts";
import { WebhooksService } from "./webhooks.service.ts";

/**
 * Webhook subscriptions and deliveries: every committed outbox event fans out to the matching
 * subscriptions; sends run in a runner of their own. Tables: webhooks.tables.ts.
 */
export const webhooksModule = defineModule({
  name: "webhooks",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, config }) => ({
    webhooks: new WebhooksService(db, { policy: { allowPrivate: config.allowPrivateWebhookUrls }, attemptLeaseMs: attemptLeaseMs(config.webhooks.timeoutMs) }),
  }),
  routes: ({ api }, { webhooks }) => registerWebhooksRoutes(api, webhooks),
  outboxHandlers: ({ webhooks }) => [{ type: "*", handler: webhooks.fanOut }],
  worker: (_services, { db, config, logger }) => {
    const sender = new WebhookSender(db, { policy: { allowPrivate: config.allowPrivateWebhookUrls }, ...config.webhooks }, logger.child({ component: "webhooks" }));
    return {
      // Sends wait on other people's servers (up to the timeout each): a runner of their own keeps
      // them from starving the other jobs. Its poll interval bounds how late a scheduled retry starts.
      runners: [{ name: "webhooks", concurrency: config.webhooks.concurrency, pollIntervalMs: 1000, fetchBatch: config.jobs.fetchBatch }],
      tasks: { webhooks: { [WEBHOOK_DELIVER_TASK]: sender.task } },
      start: () => sender.startRecovery(),
      stop: () => sender.stopRecovery(),
    };
  },
});
