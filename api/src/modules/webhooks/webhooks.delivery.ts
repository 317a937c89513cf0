import type { IncomingHttpHeaders } from "node:http";
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Database, Db } from "../../db/database.ts";
import { notifyOnCommit } from "../../db/notifications.ts";
import { ClaimLoop } from "../../jobs/claim-loop.ts";
import { failureSeenByUser, isLoopbackAddress, OutboundError, type OutboundPolicy, outboundRequest, UnsafeUrlError } from "../../lib/outbound.ts";
import { iso } from "../../lib/time.ts";
import { signWebhook } from "./signature.ts";
import * as repo from "./webhooks.repository.ts";

export const WEBHOOK_USER_AGENT = "ArtPlatform-Webhooks/1.0";
/** NOTIFY'd by every transaction that makes a delivery due now: the senders claim at once. */
export const DELIVERIES_CHANNEL = "webhook_deliveries_due";

/** Bytes of a receiver's response body kept in the delivery log. */
const RESPONSE_BODY_LIMIT = 4096;
/** A scheduled retry comes this fraction of its delay early or late, at random: spreads retry storms. */
export const RETRY_JITTER = 0.1;
/** A receiver's Retry-After is honoured up to this. */
const RETRY_AFTER_CAP_MS = 24 * 3600_000;
/** A subscription with no success since its first failure this long ago is disabled. */
export const FAILING_DISABLE_AFTER_MS = 3 * 24 * 3600_000;
/** How often a sender claims without being told (scheduled retries, a lost notification, a slot freed elsewhere). */
const POLL_MS = 1000;

/**
 * How long an attempt may stay in flight before it counts as abandoned by a dead process: past the
 * request's own deadline with a wide margin, so a live attempt is never sent twice at once.
 */
export function attemptLeaseMs(timeoutMs: number): number {
  return 2 * timeoutMs + 5_000;
}

/** Makes the senders claim now, once the caller's transaction commits (a delivery became due). */
export async function notifyDeliveriesDue(db: Db): Promise<void> {
  await notifyOnCommit(db, DELIVERIES_CHANNEL);
}

export interface DeliverySettings {
  policy: OutboundPolicy;
  /** Delay before retry n (seconds); after the last one a delivery is failed. */
  retryScheduleSeconds: readonly number[];
  timeoutMs: number;
  /** A loopback receiver's (development) answer body kept in the delivery log; else its code only, so that /deliveries is no window on the machine's services. */
  keepLoopbackResponseBodies?: boolean;
  /** Attempts this process sends at once. */
  concurrency: number;
  /** Attempts in flight at once, in every process, for one user's subscriptions together. */
  maxInFlightPerUser: number;
  /** Attempts in flight at once, in every process, for one subscription (at most the per-user cap). */
  maxInFlightPerSubscription: number;
}

type AttemptResult =
  | { kind: "response"; status: number; headers: IncomingHttpHeaders; body: string | null }
  | { kind: "error"; message: string };

/**
 * Sends deliveries. The deliveries table is the queue: a sender claims due deliveries in batches, as
 * many as it has free sockets (`concurrency`), each claim one statement that starts their attempts
 * within the users' and subscriptions' caps of attempts in flight, across processes
 * (webhook_claim_attempts); so a slow receiver holds at most its owner's share, and a user's backlog
 * never hides another user's deliveries. Each answer is recorded as it arrives: successes that arrive
 * together in one statement, a failure with its next attempt's time (exact delays, visible in
 * `next_retry_at`). A sender claims when told that deliveries became due (NOTIFY on commit), when an
 * attempt of its own ends (a slot is free), and every second (scheduled retries, slots freed
 * elsewhere). An attempt is counted and marked in flight before it is sent: if its process dies, its
 * lease expires and the next claim sends it again (at least once, with the same delivery id).
 */
export class WebhookSender {
  private readonly leaseMs: number;
  private readonly caps: repo.InFlightCaps;
  private readonly loop: ClaimLoop;
  /** Attempts sent or being recorded by this process. */
  private inFlight = 0;
  private readonly idle = new Set<() => void>();
  private successes: { attempt: repo.SucceededAttempt; recorded: () => void }[] = [];
  private recordingSuccesses = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly settings: DeliverySettings,
    private readonly logger: Logger,
  ) {
    this.leaseMs = attemptLeaseMs(settings.timeoutMs);
    this.caps = { perUser: settings.maxInFlightPerUser, perSubscription: settings.maxInFlightPerSubscription };
    this.loop = new ClaimLoop({ name: "webhook sender", channel: DELIVERIES_CHANNEL, pollMs: POLL_MS, logger, claim: () => this.claim() });
  }

  start(databaseUrl: string): void {
    this.loop.start(databaseUrl);
  }

  /** Claims no more and waits for the attempts under way to be sent and recorded (each within its timeout). */
  async stop(): Promise<void> {
    await this.loop.stop();
    if (this.inFlight > 0) await new Promise<void>((resolve) => this.idle.add(resolve));
  }

  /** Claims as many due deliveries as this process has free sockets and sends them; true when all were taken (more may be due). */
  private async claim(): Promise<boolean> {
    const free = this.settings.concurrency - this.inFlight;
    if (free <= 0) return false; // the end of an attempt wakes the loop
    const claimed = await repo.claimAttempts(this.db, free, this.leaseMs, this.caps);
    for (const attempt of claimed) void this.attempt(attempt);
    return claimed.length === free;
  }

  /** Sends one claimed attempt and records its answer; the slot it held is then free for the next claim. */
  private async attempt(claimed: repo.ClaimedAttempt): Promise<void> {
    this.inFlight++;
    try {
      const result = await this.send(claimed);
      const succeeded = successOf(claimed, result);
      if (succeeded) await this.recordSuccess(succeeded);
      else await this.recordFailure(claimed, result);
    } catch (err) {
      // Unrecorded: the attempt stays in flight until its lease expires, then it is sent again.
      this.logger.error({ err, delivery_id: claimed.id }, "could not record a webhook attempt; it is sent again once its lease expires");
    } finally {
      this.inFlight--;
      if (this.inFlight === 0) {
        for (const resolve of this.idle) resolve();
        this.idle.clear();
      }
      this.loop.wake();
    }
  }

  /** Successes that arrive while one is being recorded are recorded together next (one statement). */
  private recordSuccess(attempt: repo.SucceededAttempt): Promise<void> {
    return new Promise<void>((recorded) => {
      this.successes.push({ attempt, recorded });
      if (!this.recordingSuccesses) void this.recordSuccesses();
    });
  }

  private async recordSuccesses(): Promise<void> {
    this.recordingSuccesses = true;
    try {
      while (this.successes.length > 0) {
        const batch = this.successes;
        this.successes = [];
        try {
          await repo.recordSuccesses(this.db, batch.map((s) => s.attempt));
        } catch (err) {
          // Unrecorded: sent again once their leases expire (at least once).
          this.logger.error({ err, delivery_ids: batch.map((s) => s.attempt.id) }, "could not record webhook successes; they are sent again once their leases expire");
        }
        for (const s of batch) s.recorded();
      }
    } finally {
      this.recordingSuccesses = false;
    }
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
        keepAlive: true,
      });
      // Postgres text cannot hold NUL.
      const text = res.body.toString("utf8").replaceAll("\u0000", "");
      const kept = text.length > 0 && (this.settings.keepLoopbackResponseBodies === true || !isLoopbackAddress(res.address)) ? text : null;
      return { kind: "response", status: res.status, headers: res.headers, body: kept };
    } catch (err) {
      if (err instanceof UnsafeUrlError) return { kind: "error", message: `refused (${err.reason}): ${err.message}` };
      if (err instanceof OutboundError && err.reason === "timeout") {
        return { kind: "error", message: `timeout: no complete response within ${this.settings.timeoutMs / 1000} s` };
      }
      if (err instanceof OutboundError) return { kind: "error", message: `connection failed: ${failureSeenByUser(err)}` };
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
