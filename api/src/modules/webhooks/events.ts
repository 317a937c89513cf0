/**
 * The events a webhook subscription may name (CONTRACT §7). Producers record them with
 * `recordEvent(trx, "<name>", payload)` (jobs/outbox.ts); the fan-out delivers any of them to the
 * active subscriptions that name it or `*`. Other outbox event types stay internal.
 */
export const WEBHOOK_EVENTS = [
  "artwork.certified",
  "artwork.certification_failed",
  "offer.created",
  "offer.accepted",
  "offer.rejected",
  "offer.expired",
  "payment.completed",
  "fractional.purchase_confirmed",
  "ticket.purchased",
  "challenge.joined",
] as const;

export type WebhookEventName = (typeof WEBHOOK_EVENTS)[number];

/** Subscribes to every event in WEBHOOK_EVENTS. */
export const ALL_EVENTS = "*";

/** Sent by POST /v1/webhooks/:id/test to that one subscription; nobody subscribes to it. */
export const PING_EVENT = "ping";

export function isWebhookEvent(type: string): type is WebhookEventName {
  return (WEBHOOK_EVENTS as readonly string[]).includes(type);
}
