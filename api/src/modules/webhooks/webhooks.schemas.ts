import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { idOf, idParam, plainString, text, timestamp } from "../../lib/schema.ts";
import { z } from "../../openapi/zod.ts";
import { ALL_EVENTS, WEBHOOK_EVENTS } from "./events.ts";

export const SUBSCRIPTION_STATUSES = ["active", "disabled"] as const;
export const DELIVERY_STATUSES = ["pending", "succeeded", "failed"] as const;

const subscriptionId = idOf("webhookSubscription");
const deliveryId = idOf("webhookDelivery");
export const subscriptionIdParams = z.object({ id: idParam("webhookSubscription") });
export const deliveryIdParams = z.object({
  id: idParam("webhookSubscription"),
  delivery_id: idParam("webhookDelivery", "delivery_id"),
});

// Kept as given (no NFC): the service parses it and stores the normalized href.
const url = plainString({ min: 1, max: 2048 })
  .openapi({
    format: "uri",
    example: "https://example.com/hooks/art",
    description: "https, resolving only to public addresses (checked now and before every delivery)",
  });

const events = z
  .array(z.enum([...WEBHOOK_EVENTS, ALL_EVENTS]))
  .min(1)
  .max(WEBHOOK_EVENTS.length)
  .superRefine((names, ctx) => {
    const seen = new Set<string>();
    names.forEach((name, i) => {
      if (seen.has(name)) ctx.addIssue({ code: "custom", path: [i], message: `${name} is listed twice` });
      seen.add(name);
    });
    if (names.includes(ALL_EVENTS) && names.length > 1) {
      ctx.addIssue({ code: "custom", message: '"*" already subscribes to every event: send it alone' });
    }
  })
  .openapi({ example: ["artwork.certified", "offer.accepted"], description: `Event names, or ["*"] for all: ${WEBHOOK_EVENTS.join(", ")}` });

const description = text({ min: 0, max: 500, multiline: true }).nullable().optional();

const allUsers = z.boolean().optional().openapi({
  example: false,
  description:
    "true: every user's events, not only the events that concern you (admins only, with the admin:read scope; 403 otherwise). " +
    "false (default): only your own events (your artworks, offers, payments...).",
});

export const subscriptionCreateSchema = z.strictObject({ url, events, description, all_users: allUsers }).openapi("WebhookSubscriptionCreate", {
  example: { url: "https://example.com/hooks/art", events: ["artwork.certified", "offer.accepted"], description: "Gallery inventory sync" },
});

export const subscriptionPatchSchema = z
  .strictObject({
    url: url.optional(),
    events: events.optional(),
    description,
    status: z.enum(SUBSCRIPTION_STATUSES).optional().openapi({ description: "disabled stops deliveries; active re-enables" }),
    all_users: allUsers,
  })
  .refine((v) => Object.keys(v).length > 0, { message: "send at least one of url, events, description, status, all_users" })
  .openapi("WebhookSubscriptionUpdate", { minProperties: 1, example: { events: ["*"], status: "active" } });

export const subscriptionSchema = z
  .object({
    id: subscriptionId,
    url: z.string(),
    events: z.array(z.string()),
    description: z.string().nullable(),
    status: z.enum(SUBSCRIPTION_STATUSES),
    all_users: z.boolean().openapi({ description: "Receives every user's events (an admin's subscription); otherwise only the owner's" }),
    disabled_reason: z.string().nullable().openapi({ description: "Why the subscription is disabled (null while active)" }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi("WebhookSubscription");

export const subscriptionWithSecretSchema = subscriptionSchema
  .extend({
    secret: z.string().openapi({ example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", description: "The signing secret: shown only now; store it." }),
    previous_secret_expires_at: timestamp
      .nullable()
      .openapi({ description: "Until then the replaced secret also signs every delivery (rotation only)" }),
  })
  .openapi("WebhookSubscriptionWithSecret");

export const subscriptionListQuery = z.object({ ...paginationQuery() });
export const subscriptionListSchema = z.object({ data: z.array(subscriptionSchema), pagination: paginationSchema }).openapi("WebhookSubscriptionList");

export const subscriptionDeletedSchema = z.object({ id: subscriptionId, deleted: z.literal(true) }).openapi("WebhookSubscriptionDeleted");

export const deliverySchema = z
  .object({
    id: deliveryId,
    subscription_id: subscriptionId,
    event_id: idOf("webhookEvent"),
    event: z.string().openapi({ example: "artwork.certified" }),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    last_response_code: z.number().int().nullable(),
    last_response_body: z.string().nullable().openapi({ description: "The first 4 KiB of the last response body" }),
    last_error: z.string().nullable(),
    next_retry_at: timestamp.nullable().openapi({ description: "When the next attempt is due (pending deliveries)" }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi("WebhookDelivery");

export const deliveryListQuery = z.object({
  status: z.enum(DELIVERY_STATUSES).optional(),
  ...paginationQuery(),
});
export const deliveryListSchema = z.object({ data: z.array(deliverySchema), pagination: paginationSchema }).openapi("WebhookDeliveryList");
