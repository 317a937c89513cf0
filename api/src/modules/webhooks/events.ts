/**
 * The events a webhook subscription may name (docs/decisions.md#webhook-events). Producers record
 * them with `recordEvent(trx, "<name>", payload, audience)` (jobs/outbox.ts); the fan-out delivers
 * any of them to the active subscriptions that name it or `*` and whose owner is in the audience
 * (or that are an admin's `all_users` subscription). Other outbox event types stay internal.
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
  "ticket.refunded",
  "challenge.joined",
  "reward.points_reversed",
  "asset.withdrawn",
] as const;

export type WebhookEventName = (typeof WEBHOOK_EVENTS)[number];

/**
 * Who receives each event: the users its producer must name as the audience (the table
 * of docs/integrators/webhooks.md#events). Events not produced yet state the intended audience.
 */
export const WEBHOOK_EVENT_AUDIENCE: Record<WebhookEventName, string> = {
  "artwork.certified": "the artwork's artist",
  "artwork.certification_failed": "the artwork's artist",
  "offer.created": "the buyer and the seller",
  "offer.accepted": "the buyer and the seller",
  "offer.rejected": "the buyer and the seller",
  "offer.expired": "the buyer and the seller",
  "payment.completed": "the buyer and the seller",
  "fractional.purchase_confirmed": "the buyer of the shares and the owner who fractionalized the artwork",
  "ticket.purchased": "the buyer of the tickets",
  "ticket.refunded": "the buyer of the tickets (their event was cancelled)",
  "challenge.joined": "the submitter (and admins)",
  "reward.points_reversed": "the user whose points were taken back",
  "asset.withdrawn": "the user who withdrew the asset to their own wallet",
};

/** Subscribes to every event in WEBHOOK_EVENTS. */
export const ALL_EVENTS = "*";

/** Sent by POST /v1/webhooks/:id/test to that one subscription; nobody subscribes to it. */
export const PING_EVENT = "ping";

export function isWebhookEvent(type: string): type is WebhookEventName {
  return (WEBHOOK_EVENTS as readonly string[]).includes(type);
}
