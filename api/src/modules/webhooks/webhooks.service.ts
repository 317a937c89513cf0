import { randomBytes } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import { type Transact, transactOn } from "../../db/transact.ts";
import type { Database } from "../../db/database.ts";
import type { Role } from "../../lib/actor.ts";
import type { WebhookDelivery, WebhookDeliveryStatus, WebhookSubscription, WebhookSubscriptionStatus } from "./webhooks.tables.ts";
import { type OutboxBatchHandler, type OutboxHandler, recordUndispatchedEvent } from "../../jobs/outbox.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { type OutboundPolicy, resolveTarget, UnsafeUrlError } from "../../lib/outbound.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import { scopeSatisfies } from "../../lib/scopes.ts";
import { isWebhookEvent, PING_EVENT } from "./events.ts";
import { WEBHOOK_SECRET_PREFIX } from "./signature.ts";
import { notifyDeliveriesDue } from "./webhooks.delivery.ts";
import * as repo from "./webhooks.repository.ts";

/** A rotated-out secret keeps signing beside the new one this long. */
const ROTATION_OVERLAP_MS = 24 * 3600_000;
/** Each subscription multiplies the fan-out of every event. */
export const MAX_SUBSCRIPTIONS_PER_USER = 20;

export interface WebhooksSettings {
  /** Checked at registration and on URL changes (and again by every delivery). */
  policy: OutboundPolicy;
  /** How long an attempt may be in flight (see attemptLeaseMs). */
  attemptLeaseMs: number;
}

/** Who is asking: the owner of the subscriptions, and what may widen them to every user's events. */
export interface WebhooksActor {
  userId: string;
  role: Role;
  scopes: readonly string[];
}

export class WebhooksService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly settings: WebhooksSettings,
  ) {}

  async create(
    actor: WebhooksActor,
    input: { url: string; events: string[]; description?: string | null; all_users?: boolean },
    transact: Transact = transactOn(this.db),
  ) {
    const { userId } = actor;
    if (input.all_users) checkAllUsersAllowed(actor);
    const url = await this.checkUrl(input.url);
    const secret = newSigningSecret();
    return transact(async (trx) => {
      await repo.lockUserSubscriptions(trx, userId);
      if ((await repo.countSubscriptions(trx, userId)) >= MAX_SUBSCRIPTIONS_PER_USER) {
        throw ApiError.conflict("conflict", `A user may have at most ${MAX_SUBSCRIPTIONS_PER_USER} webhook subscriptions; delete one first`);
      }
      const row = await repo.insertSubscription(trx, {
        id: newId("webhookSubscription"),
        user_id: userId,
        url,
        events: input.events,
        description: input.description ?? null,
        secret,
        all_users: input.all_users ?? false,
      });
      return { ...toSubscriptionView(row), secret, previous_secret_expires_at: null };
    });
  }

  async list(userId: string, page: Page) {
    const { rows, total } = await repo.listSubscriptions(this.db, userId, page);
    return paginated(rows.map(toSubscriptionView), page, total);
  }

  async get(userId: string, id: string) {
    return toSubscriptionView(await this.owned(this.db, userId, id));
  }

  async update(
    actor: WebhooksActor,
    id: string,
    changes: { url?: string; events?: string[]; description?: string | null; status?: WebhookSubscriptionStatus; all_users?: boolean },
  ) {
    const current = await this.owned(this.db, actor.userId, id);
    if (changes.all_users) checkAllUsersAllowed(actor);
    const url = changes.url === undefined ? undefined : await this.checkUrl(changes.url);
    const statusChange =
      changes.status === undefined || changes.status === current.status
        ? {}
        : changes.status === "active"
          ? { status: "active" as const, disabled_reason: null, failing_since: null } // a fresh start
          : { status: "disabled" as const, disabled_reason: "Disabled by the owner" };
    const row = await repo.updateSubscription(this.db, current.id, {
      ...(url !== undefined ? { url } : {}),
      ...(changes.events !== undefined ? { events: changes.events } : {}),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
      ...(changes.all_users !== undefined ? { all_users: changes.all_users } : {}),
      ...statusChange,
    });
    if (!row) throw ApiError.notFound("Webhook subscription");
    return toSubscriptionView(row);
  }

  async remove(userId: string, id: string) {
    if (!isId("webhookSubscription", id) || !(await repo.deleteSubscription(this.db, userId, id))) throw ApiError.notFound("Webhook subscription");
    return { id, deleted: true as const };
  }

  /** A new secret; the old one keeps signing for 24 h (each delivery then carries both signatures). */
  async rotateSecret(userId: string, id: string, transact: Transact = transactOn(this.db)) {
    const secret = newSigningSecret();
    const expiresAt = new Date(Date.now() + ROTATION_OVERLAP_MS);
    return transact(async (trx) => {
      const current = await this.owned(trx, userId, id);
      const row = found(await repo.updateSubscription(trx, current.id, { secret, previous_secret: current.secret, previous_secret_expires_at: expiresAt }), "Webhook subscription");
      return { ...toSubscriptionView(row), secret, previous_secret_expires_at: iso(expiresAt) };
    });
  }

  /** A `ping` event for this subscription only, through the same delivery path as every event. */
  async sendTest(userId: string, id: string, transact: Transact = transactOn(this.db)) {
    return transact(async (trx) => {
      const subscription = await this.owned(trx, userId, id);
      if (subscription.status !== "active") throw ApiError.conflict("invalid_state", "The subscription is disabled; re-enable it first");
      const event = await recordUndispatchedEvent(trx, PING_EVENT, { subscription_id: subscription.id }, [subscription.user_id]);
      const [delivery] = await createDeliveries(trx, [{ eventId: event.id, subscriptionId: subscription.id }]);
      return toDeliveryView({ ...delivery!, event_type: event.type });
    });
  }

  async listDeliveries(userId: string, id: string, status: WebhookDeliveryStatus | undefined, page: Page) {
    const subscription = await this.owned(this.db, userId, id);
    const { rows, total } = await repo.listDeliveries(this.db, subscription.id, status, page);
    return paginated(rows.map(toDeliveryView), page, total);
  }

  async getDelivery(userId: string, id: string, deliveryId: string) {
    const subscription = await this.owned(this.db, userId, id);
    const row = found(isId("webhookDelivery", deliveryId) ? await repo.findDelivery(this.db, subscription.id, deliveryId) : undefined, "Webhook delivery");
    return toDeliveryView(row);
  }

  /**
   * Queues an attempt now, whatever the delivery's status. A failure then follows the retry
   * schedule from the delivery's attempt count (a delivery that used up its retries gets this one).
   */
  async retryDelivery(userId: string, id: string, deliveryId: string, transact: Transact = transactOn(this.db)) {
    // The answer is the delivery as queued: once this commits, the attempt may already be running.
    return transact(async (trx) => {
      const subscription = await this.owned(trx, userId, id);
      const delivery = isId("webhookDelivery", deliveryId)
        ? await repo.lockDeliveryForRetry(trx, subscription.id, deliveryId, this.settings.attemptLeaseMs)
        : undefined;
      if (!delivery) throw ApiError.notFound("Webhook delivery");
      if (subscription.status !== "active") throw ApiError.conflict("invalid_state", "The subscription is disabled; re-enable it first");
      if (delivery.in_flight) throw ApiError.conflict("invalid_state", "An attempt of this delivery is in flight; retry once it has finished");
      await repo.updateDelivery(trx, delivery.id, { status: "pending", next_retry_at: new Date() });
      await notifyDeliveriesDue(trx);
      return toDeliveryView((await repo.findDelivery(trx, subscription.id, delivery.id))!);
    });
  }

  /**
   * Outbox subscriber: a delivery per active subscription to the event whose owner is in the
   * event's audience (or that is an admin's all-users subscription), written with the notification
   * that wakes the senders. Idempotent per event: a retried dispatch finds its deliveries and adds none.
   */
  readonly fanOut: OutboxHandler = async (event, db) => this.fanOutAll([event], db);

  /** fanOut for several events: one statement finds every event's subscriptions, one writes their deliveries. */
  readonly fanOutAll: OutboxBatchHandler = async (events, db = this.db) => {
    const ids = events.filter((event) => isWebhookEvent(event.type)).map((event) => event.id);
    const deliveries = await repo.matchingSubscriptions(db, ids);
    if (deliveries.length === 0) return;
    await db.transaction().execute(async (trx) => {
      await createDeliveries(trx, deliveries);
    });
  };

  private async owned(db: Kysely<Database> | Transaction<Database>, userId: string, id: string): Promise<WebhookSubscription> {
    const row = found(isId("webhookSubscription", id) ? await repo.findSubscription(db, userId, id) : undefined, "Webhook subscription");
    return row;
  }

  /** The URL as it will be called, if the policy allows where it resolves to now. */
  private async checkUrl(url: string): Promise<string> {
    try {
      return (await resolveTarget(url, this.settings.policy)).url.href;
    } catch (err) {
      if (err instanceof UnsafeUrlError) throw ApiError.validation([{ field: "url", code: err.reason, message: err.message }]);
      throw err;
    }
  }
}

/** Every user's events are for admins only, and only with a token that may read admin data. */
function checkAllUsersAllowed(actor: WebhooksActor): void {
  if (actor.role !== "admin") throw ApiError.forbidden("Only admins may subscribe to every user's events (all_users)");
  if (!scopeSatisfies(actor.scopes, "admin:read")) {
    throw new ApiError(403, "insufficient_scope", "all_users requires the admin:read scope", { required_scope: "admin:read" });
  }
}

async function createDeliveries(trx: Transaction<Database>, deliveries: readonly repo.NewDelivery[]): Promise<WebhookDelivery[]> {
  const created = await repo.insertDeliveries(trx, deliveries);
  if (created.length > 0) await notifyDeliveriesDue(trx);
  return created;
}

/** `whsec_` and 32 random bytes in base64, as Standard Webhooks libraries expect. */
function newSigningSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(32).toString("base64")}`;
}

export function toSubscriptionView(s: WebhookSubscription) {
  return {
    id: s.id,
    url: s.url,
    events: s.events,
    description: s.description,
    status: s.status,
    all_users: s.all_users,
    disabled_reason: s.status === "disabled" ? s.disabled_reason : null,
    created_at: iso(s.created_at),
    updated_at: iso(s.updated_at),
  };
}

export function toDeliveryView(d: repo.DeliveryRow) {
  return {
    id: d.id,
    subscription_id: d.subscription_id,
    event_id: d.event_id,
    event: d.event_type,
    status: d.status,
    attempts: d.attempts,
    last_response_code: d.last_response_code,
    last_response_body: d.last_response_body,
    last_error: d.last_error,
    next_retry_at: isoOrNull(d.next_retry_at),
    created_at: iso(d.created_at),
    updated_at: iso(d.updated_at),
  };
}
