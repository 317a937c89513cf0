import type { IncomingHttpHeaders } from "node:http";
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Database, Db } from "../../db/database.ts";
import { enqueue, type Task } from "../../jobs/queue.ts";
import { OutboundError, type OutboundPolicy, outboundRequest, UnsafeUrlError } from "../../lib/outbound.ts";
import { iso } from "../../lib/time.ts";
import { signWebhook } from "./signature.ts";
import * as repo from "./webhooks.repository.ts";

export const WEBHOOK_DELIVER_TASK = "webhook_deliver";
export const WEBHOOK_USER_AGENT = "ArtPlatform-Webhooks/1.0";

/** Bytes of a receiver's response body kept in the delivery log. */
const RESPONSE_BODY_LIMIT = 4096;
/** A scheduled retry comes this fraction of its delay early or late, at random: spreads retry storms. */
export const RETRY_JITTER = 0.1;
/** A receiver's Retry-After is honoured up to this. */
const RETRY_AFTER_CAP_MS = 24 * 3600_000;
/** A subscription with no success since its first failure this long ago is disabled. */
export const FAILING_DISABLE_AFTER_MS = 3 * 24 * 3600_000;
/** A pending delivery this far past its due time has lost its job: the sweep queues it again. */
const OVERDUE_MS = 5 * 60_000;
/** Attempts one job sends, passing its owner's slot on, before it hands the slot to the queue (a bounded job). */
const SENDS_PER_JOB = 20;

/**
 * How long an attempt may stay in flight before it counts as abandoned by a dead process: past the
 * request's own deadline with a wide margin, so a live attempt is never sent twice at once.
 */
export function attemptLeaseMs(timeoutMs: number): number {
  return 2 * timeoutMs + 5_000;
}

/**
 * Queues the next attempt of a delivery in the caller's transaction. The job key is the delivery
 * id: a new schedule replaces a waiting job, and a job that already started (or whose worker died)
 * is superseded rather than doubled. `reserved`: the attempt was already started (it holds a slot of
 * its owner), so its job runs before any job that still has to take one.
 */
export async function enqueueDelivery(db: Db, deliveryId: string, runAt?: Date, reserved?: { attempts: number }): Promise<void> {
  const payload: DeliveryJob = reserved ? { delivery_id: deliveryId, attempt: reserved.attempts } : { delivery_id: deliveryId };
  await enqueue(db, WEBHOOK_DELIVER_TASK, payload, { jobKey: deliveryId, runAt, maxAttempts: 10, priority: reserved ? -1 : undefined });
}

interface DeliveryJob {
  delivery_id: string;
  /** Set when the attempt was started by the end of another attempt of the same owner (its slot passed on). */
  attempt?: number;
}

export interface DeliverySettings {
  policy: OutboundPolicy;
  /** Delay before retry n (seconds); after the last one a delivery is failed. */
  retryScheduleSeconds: readonly number[];
  timeoutMs: number;
  /** Attempts in flight at once, in every process, for one user's subscriptions together. */
  maxInFlightPerUser: number;
  /** Attempts in flight at once, in every process, for one subscription (at most the per-user cap). */
  maxInFlightPerSubscription: number;
}

type AttemptResult =
  | { kind: "response"; status: number; headers: IncomingHttpHeaders; body: string | null }
  | { kind: "error"; message: string };

/**
 * Sends deliveries: one job per attempt, the next attempt scheduled by the job itself (exact
 * delays, visible in `next_retry_at`) rather than by the queue's backoff. A user's attempts in
 * flight are capped (per user and per subscription, across processes), so a slow receiver holds at
 * most its owner's share of the runner's slots: a delivery over a cap waits without a job, and
 * each attempt of that user that ends starts the oldest waiting ones in the slots now free (the
 * first in the same job, which keeps the slot it had; any other through the queue).
 */
export class WebhookSender {
  private readonly leaseMs: number;
  private readonly caps: repo.InFlightCaps;
  private recoveryTimer: NodeJS.Timeout | null = null;
  private recovering: Promise<unknown> | null = null;
  /** Set on shutdown: a job then ends after its current send instead of sending the next one. */
  private stopping = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly settings: DeliverySettings,
    private readonly logger: Logger,
  ) {
    this.leaseMs = attemptLeaseMs(settings.timeoutMs);
    this.caps = { perUser: settings.maxInFlightPerUser, perSubscription: settings.maxInFlightPerSubscription };
  }

  readonly task: Task = async (payload) => {
    const job = payload as DeliveryJob;
    await this.attempt(job.delivery_id, job.attempt);
  };

  /**
   * One attempt of a delivery, unless it is settled, in flight elsewhere, or its subscription is
   * disabled; or none yet when its owner is at a cap (no attempt counted, `next_retry_at` untouched).
   * `reservedAttempt`: the attempt number already started for it by passSlots.
   */
  async attempt(deliveryId: string, reservedAttempt?: number): Promise<void> {
    let next: repo.ClaimedAttempt | undefined;
    if (reservedAttempt !== undefined) {
      // Undefined when settled, or when its lease expired and the sweep queued a newer attempt.
      next = await repo.reservedAttempt(this.db, deliveryId, reservedAttempt, this.leaseMs);
    } else {
      // None: settled, in flight elsewhere, its subscription disabled (then failed by the claim), or
      // its owner at a cap: it waits with no job, and the end of one of its owner's attempts starts it.
      next = await repo.claimAttempt(this.db, deliveryId, this.leaseMs, this.caps);
    }
    for (let sends = 1; next; sends++) {
      const current: repo.ClaimedAttempt = next;
      let succeeded: repo.SucceededAttempt | undefined;
      let sent = false;
      try {
        const result = await this.send(current);
        succeeded = successOf(current, result);
        // A success is recorded by the statement that hands the slot on (one round trip).
        if (!succeeded) await this.recordFailure(current, result);
        sent = true;
      } finally {
        const keepOne = sent && sends < SENDS_PER_JOB && !this.stopping;
        next = succeeded ? await this.succeedAndPassSlots(current.user_id, keepOne, succeeded) : await this.passSlots(current.user_id, keepOne);
      }
    }
  }

  /**
   * Hands the slots the user has free now to its oldest waiting deliveries: their attempts start
   * here (so no other ending attempt hands out the same slot). With `keepOne`, the oldest is
   * answered for this job to send (its queued job removed); the others' jobs are queued right after
   * (one statement starts them all). A hand-off lost to a crash or an error is the sweep's once the
   * attempt's lease expires.
   */
  private async passSlots(userId: string, keepOne: boolean): Promise<repo.ClaimedAttempt | undefined> {
    try {
      return await this.startWaiting(await repo.startWaitingAttempts(this.db, userId, this.leaseMs, this.caps, keepOne), keepOne);
    } catch (err) {
      this.logger.error({ err, user_id: userId }, "could not start the deliveries waiting for a slot");
      return undefined;
    }
  }

  /** Records a success and passes the slots on in one statement; a failure to record it fails the job (as record does). */
  private async succeedAndPassSlots(userId: string, keepOne: boolean, succeeded: repo.SucceededAttempt): Promise<repo.ClaimedAttempt | undefined> {
    return this.startWaiting(await repo.startWaitingAttempts(this.db, userId, this.leaseMs, this.caps, keepOne, succeeded), keepOne);
  }

  /** Keeps the first started attempt for this job (with `keepOne`) and queues the others' jobs. */
  private async startWaiting(started: repo.ClaimedAttempt[], keepOne: boolean): Promise<repo.ClaimedAttempt | undefined> {
    const kept = keepOne ? started.shift() : undefined;
    for (const attempt of started) await enqueueDelivery(this.db, attempt.id, undefined, { attempts: attempt.attempts });
    return kept;
  }

  private async send(claimed: repo.ClaimedAttempt): Promise<AttemptResult> {
    const payload = withoutReserved(claimed.payload as Record<string, unknown>);
    const body = JSON.stringify({ id: claimed.event_id, event: claimed.event_type, created_at: iso(claimed.event_created_at), ...payload });
    const now = Date.now();
    const secrets = [claimed.secret];
    if (claimed.previous_secret && claimed.previous_secret_expires_at && claimed.previous_secret_expires_at.getTime() > now) {
      secrets.push(claimed.previous_secret);
    }
    const headers = {
      "Content-Type": "application/json",
      "User-Agent": WEBHOOK_USER_AGENT,
      "X-Service-Event": claimed.event_type,
      "X-Service-Delivery": claimed.id,
      ...signWebhook({ id: claimed.id, timestamp: Math.floor(now / 1000), body, secrets }),
    };

    return this.post(claimed.url, headers, body);
  }

  private async post(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    try {
      const res = await outboundRequest({
        url,
        method: "POST",
        headers,
        body,
        timeoutMs: this.settings.timeoutMs,
        maxResponseBytes: RESPONSE_BODY_LIMIT,
        onOversize: "truncate",
        policy: this.settings.policy,
      });
      // Postgres text cannot hold NUL.
      const text = res.body.toString("utf8").replaceAll("\u0000", "");
      return { kind: "response", status: res.status, headers: res.headers, body: text.length > 0 ? text : null };
    } catch (err) {
      if (err instanceof UnsafeUrlError) return { kind: "error", message: `refused (${err.reason}): ${err.message}` };
      if (err instanceof OutboundError && err.reason === "timeout") {
        return { kind: "error", message: `timeout: no complete response within ${this.settings.timeoutMs / 1000} s` };
      }
      if (err instanceof OutboundError) return { kind: "error", message: `connection failed: ${err.message}` };
      throw err;
    }
  }

  private async recordFailure(claimed: repo.ClaimedAttempt, result: AttemptResult): Promise<void> {
    const { id: deliveryId, attempts, subscription_id: subscriptionId } = claimed;
    const response = result.kind === "response" ? result : null;
    const common = {
      in_flight_since: null,
      last_response_code: response?.status ?? null,
      last_response_body: response?.body ?? null,
    };

    const gone = response?.status === 410;
    const delayMs = gone ? null : retryDelayMs(attempts, this.settings.retryScheduleSeconds, response);
    const nextAt = delayMs === null ? null : new Date(Date.now() + delayMs);
    await this.db.transaction().execute(async (trx) => {
      const updated = await repo.updateDelivery(
        trx,
        deliveryId,
        { ...common, status: nextAt ? "pending" : "failed", next_retry_at: nextAt, last_error: describeFailure(result) },
        { attempts },
      );
      if (!updated) return; // a newer attempt took over
      if (nextAt) await enqueueDelivery(trx, deliveryId, nextAt);
      if (gone) {
        await repo.disableSubscription(trx, subscriptionId, "The endpoint answered 410 Gone");
        return;
      }
      const failingSince = await repo.markSubscriptionFailing(trx, subscriptionId);
      if (failingSince && Date.now() - failingSince.getTime() >= FAILING_DISABLE_AFTER_MS) {
        await repo.disableSubscription(trx, subscriptionId, `Every delivery failed since ${iso(failingSince)} (3 days or more)`);
      }
    });
  }

  /**
   * Queues again the deliveries whose sending process died mid-attempt (lease expired) or whose
   * job was lost: at least once, with the same delivery id.
   */
  async recoverStranded(): Promise<number> {
    const ids = await repo.strandedDeliveryIds(this.db, this.leaseMs, OVERDUE_MS, 500);
    for (const id of ids) await enqueueDelivery(this.db, id);
    if (ids.length > 0) this.logger.warn({ count: ids.length }, "re-queued stranded webhook deliveries");
    return ids.length;
  }

  /** Sweeps now and then periodically (every half lease, at most every 30 s). */
  startRecovery(): void {
    const sweep = () => {
      this.recovering ??= this.recoverStranded()
        .catch((err: Error) => this.logger.error({ err }, "webhook recovery sweep failed"))
        .finally(() => (this.recovering = null));
    };
    sweep();
    this.recoveryTimer = setInterval(sweep, Math.min(Math.max(this.leaseMs / 2, 1000), 30_000));
    this.recoveryTimer.unref();
  }

  /** Stops the sweep, and jobs from sending more than their current attempt (so the runner stops soon). */
  async stopRecovery(): Promise<void> {
    this.stopping = true;
    if (this.recoveryTimer) clearInterval(this.recoveryTimer);
    this.recoveryTimer = null;
    await this.recovering;
  }
}

/**
 * The delay before the next attempt after failed attempt number `attempts` (from 1), or null when
 * the schedule is used up. A 429 or 503 with Retry-After (seconds or a date) sets the delay itself.
 */
export function retryDelayMs(
  attempts: number,
  scheduleSeconds: readonly number[],
  response: { status: number; headers: IncomingHttpHeaders } | null,
  random: () => number = Math.random,
): number | null {
  if (attempts > scheduleSeconds.length) return null;
  if (response && (response.status === 429 || response.status === 503)) {
    const asked = retryAfterMs(response.headers["retry-after"]);
    if (asked !== null) return Math.min(Math.max(asked, 1000), RETRY_AFTER_CAP_MS);
  }
  const base = scheduleSeconds[attempts - 1]! * 1000;
  return Math.round(base * (1 - RETRY_JITTER + random() * 2 * RETRY_JITTER));
}

/** The success to record, if the attempt's answer was a 2xx. */
function successOf(claimed: repo.ClaimedAttempt, result: AttemptResult): repo.SucceededAttempt | undefined {
  if (result.kind !== "response" || result.status < 200 || result.status >= 300) return undefined;
  return { id: claimed.id, attempts: claimed.attempts, responseCode: result.status, responseBody: result.body };
}

/** The body's own fields (id, event, created_at) always win over a payload field of the same name. */
function withoutReserved(payload: Record<string, unknown>): Record<string, unknown> {
  const { id: _id, event: _event, created_at: _createdAt, ...rest } = payload;
  return rest;
}

function describeFailure(result: AttemptResult): string {
  if (result.kind === "error") return result.message;
  const { status, headers } = result;
  if (status === 410) return "HTTP 410 Gone: the subscription was disabled";
  if (status >= 300 && status < 400) return `HTTP ${status}: redirects are not followed${headers.location ? ` (Location: ${headers.location})` : ""}`;
  return `HTTP ${status}: not a 2xx response`;
}

/** Retry-After as seconds or an HTTP date (RFC 9110 §10.2.3), in milliseconds from now. */
function retryAfterMs(value: string | undefined): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}
