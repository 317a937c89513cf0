import type { ApiRouter } from "../../http/route.ts";
import { WEBHOOK_EVENT_AUDIENCE, WEBHOOK_EVENTS } from "./events.ts";
import * as s from "./webhooks.schemas.ts";
import type { WebhooksService } from "./webhooks.service.ts";

const tags = ["Webhooks"];

export function registerWebhooksRoutes(api: ApiRouter, webhooks: WebhooksService): void {
  api.route({
    method: "post",
    path: "/v1/webhooks",
    operationId: "createWebhook",
    summary: "Subscribe a URL to events",
    description: [
      `Events: ${WEBHOOK_EVENTS.join(", ")}; \`*\` subscribes to all. The URL must be https and resolve only to public addresses (checked now and before every delivery).`,
      `A subscription receives only the events that concern its owner: ${WEBHOOK_EVENTS.map((e) => `\`${e}\` (${WEBHOOK_EVENT_AUDIENCE[e]})`).join(", ")}. An admin may set \`all_users: true\` to receive every user's events; anyone else gets 403 \`forbidden\`.`,
      "The answer carries the signing secret (`whsec_…`), shown only here and on rotation. Deliveries are signed with `X-Service-Signature` and the Standard Webhooks headers; see docs/integrators/webhooks.md.",
    ].join("\n\n"),
    tags,
    auth: { scope: "webhooks:write" },
    body: s.subscriptionCreateSchema,
    status: 201,
    response: s.subscriptionWithSecretSchema,
    handler: ({ auth, body, transaction }) => webhooks.create(auth, body, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/webhooks",
    operationId: "listWebhooks",
    summary: "List your webhook subscriptions",
    tags,
    auth: { scope: "webhooks:read" },
    query: s.subscriptionListQuery,
    response: s.subscriptionListSchema,
    handler: ({ auth, query }) => webhooks.list(auth.userId, query),
  });

  api.route({
    method: "get",
    path: "/v1/webhooks/:id",
    operationId: "getWebhook",
    summary: "A webhook subscription",
    tags,
    auth: { scope: "webhooks:read" },
    params: s.subscriptionIdParams,
    errors: [404],
    response: s.subscriptionSchema,
    handler: ({ auth, params }) => webhooks.get(auth.userId, params.id),
  });

  api.route({
    method: "patch",
    path: "/v1/webhooks/:id",
    operationId: "updateWebhook",
    summary: "Change a webhook subscription",
    description:
      "A new URL is checked like on creation. `status: active` re-enables a disabled subscription; events that happened while it was disabled are not sent. `all_users: true` is for admins only (403 `forbidden` otherwise).",
    tags,
    auth: { scope: "webhooks:write" },
    params: s.subscriptionIdParams,
    body: s.subscriptionPatchSchema,
    errors: [404],
    response: s.subscriptionSchema,
    handler: ({ auth, params, body }) => webhooks.update(auth, params.id, body),
  });

  api.route({
    method: "delete",
    path: "/v1/webhooks/:id",
    operationId: "deleteWebhook",
    summary: "Delete a webhook subscription and its delivery log",
    tags,
    auth: { scope: "webhooks:write" },
    params: s.subscriptionIdParams,
    errors: [404],
    response: s.subscriptionDeletedSchema,
    handler: ({ auth, params }) => webhooks.remove(auth.userId, params.id),
  });

  api.route({
    method: "post",
    path: "/v1/webhooks/:id/rotate-secret",
    operationId: "rotateWebhookSecret",
    summary: "Rotate the signing secret",
    description: "Answers the new secret (shown only now). For 24 hours the old secret also signs every delivery, so receivers can switch without losing events.",
    tags,
    auth: { scope: "webhooks:write" },
    params: s.subscriptionIdParams,
    errors: [404],
    response: s.subscriptionWithSecretSchema,
    handler: ({ auth, params, transaction }) => webhooks.rotateSecret(auth.userId, params.id, transaction),
  });

  api.route({
    method: "post",
    path: "/v1/webhooks/:id/test",
    operationId: "testWebhook",
    summary: "Send a ping event to this subscription",
    description:
      "Creates a `ping` event (`{id, event: \"ping\", created_at, subscription_id}`) delivered to this subscription only, signed, logged and retried like any other event. Answers the queued delivery.",
    tags,
    auth: { scope: "webhooks:write" },
    params: s.subscriptionIdParams,
    errors: [404],
    status: 202,
    response: s.deliverySchema,
    handler: ({ auth, params, transaction }) => webhooks.sendTest(auth.userId, params.id, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/webhooks/:id/deliveries",
    operationId: "listWebhookDeliveries",
    summary: "The delivery log of a subscription",
    description: "Newest first; filter with `status`.",
    tags,
    auth: { scope: "webhooks:read" },
    params: s.subscriptionIdParams,
    query: s.deliveryListQuery,
    errors: [404],
    response: s.deliveryListSchema,
    handler: ({ auth, params, query }) => {
      const { status, page, limit } = query;
      return webhooks.listDeliveries(auth.userId, params.id, status, { page, limit });
    },
  });

  api.route({
    method: "get",
    path: "/v1/webhooks/:id/deliveries/:delivery_id",
    operationId: "getWebhookDelivery",
    summary: "A delivery",
    tags,
    auth: { scope: "webhooks:read" },
    params: s.deliveryIdParams,
    errors: [404],
    response: s.deliverySchema,
    handler: ({ auth, params }) => webhooks.getDelivery(auth.userId, params.id, params.delivery_id),
  });

  api.route({
    method: "post",
    path: "/v1/webhooks/:id/deliveries/:delivery_id/retry",
    operationId: "retryWebhookDelivery",
    summary: "Retry a delivery now",
    description:
      "Queues an attempt at once, whatever the delivery's status (same delivery id, so receivers can dedupe). 409 `invalid_state` while an attempt is in flight or the subscription is disabled.",
    tags,
    auth: { scope: "webhooks:write" },
    params: s.deliveryIdParams,
    errors: [404],
    status: 202,
    response: s.deliverySchema,
    handler: ({ auth, params, transaction }) => webhooks.retryDelivery(auth.userId, params.id, params.delivery_id, transaction),
  });
}
