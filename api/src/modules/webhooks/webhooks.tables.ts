import type { Generated, Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";

export type WebhookSubscriptionStatus = "active" | "disabled";
export type WebhookDeliveryStatus = "pending" | "succeeded" | "failed";

export interface WebhookSubscriptionsTable {
  id: string;
  user_id: string;
  url: string;
  events: string[];
  description: string | null;
  status: WebhookSubscriptionStatus;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: NullableTimestamp;
  failing_since: NullableTimestamp;
  /** An admin's subscription to every user's events, not only its owner's. */
  all_users: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookDeliveriesTable {
  id: string;
  subscription_id: string;
  event_id: string;
  status: WebhookDeliveryStatus;
  attempts: Generated<number>;
  in_flight_since: NullableTimestamp;
  next_retry_at: NullableTimestamp;
  last_attempt_at: NullableTimestamp;
  last_response_code: number | null;
  last_response_body: string | null;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhooksTables {
  webhook_subscriptions: WebhookSubscriptionsTable;
  webhook_deliveries: WebhookDeliveriesTable;
}

export type WebhookSubscription = Selectable<WebhookSubscriptionsTable>;
export type WebhookDelivery = Selectable<WebhookDeliveriesTable>;
