import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Database, Db } from "../db/database.ts";
import { newId } from "../lib/ids.ts";
import { ClaimLoop } from "./claim-loop.ts";
import * as repo from "./outbox.repository.ts";

/** NOTIFY'd by every transaction that records events: the dispatchers claim them once it commits. */
export const OUTBOX_CHANNEL = "outbox_events_recorded";

export interface OutboxEvent {
  id: string;
  type: string;
  payload: Record<string, unknown>;
  /** The ids of the users the event concerns (see recordEvent). */
  audience: string[];
  createdAt: Date;
}

/** An event to record: its type, payload, and the ids of the users it concerns (see recordEvent). */
export interface NewEvent {
  type: string;
  payload: Record<string, unknown>;
  audience: readonly string[];
}

/**
 * Records a domain event in the caller's transaction: it exists, and is dispatched, exactly when the
 * change commits, so no event is lost to a crash and none reports a rolled-back change.
 * `audience` names the users the event concerns (ids): only their webhook subscriptions, and admins'
 * all-users ones, receive it; an empty audience keeps the event from every other user.
 */
export async function recordEvent(db: Db, type: string, payload: Record<string, unknown>, audience: readonly string[]): Promise<string> {
  const [id] = await recordEvents(db, [{ type, payload, audience }]);
  return id!;
}

/**
 * Records several events in the caller's transaction, in one statement that also tells the
 * dispatchers (NOTIFY, delivered on commit): a transaction that confirms a block's worth of changes
 * writes its events at the cost of one. They are dispatched in the order given. The ids, in that order.
 */
export async function recordEvents(db: Db, events: readonly NewEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  // Ids are ULIDs: their order is the order given, and the dispatchers hand events out by (created_at, id).
  const rows = events.map((e) => eventRow(e, false));
  await repo.insertAndNotify(db, rows, OUTBOX_CHANNEL);
  return rows.map((r) => r.id);
}

/**
 * Records an event that its one consumer handles in the caller's transaction (a webhook ping to one
 * subscription): stored like any other, marked dispatched, never handed to the subscribers.
 */
export async function recordUndispatchedEvent(db: Db, type: string, payload: Record<string, unknown>, audience: readonly string[]): Promise<OutboxEvent> {
  return insertEvent(db, type, payload, audience, true);
}

async function insertEvent(db: Db, type: string, payload: Record<string, unknown>, audience: readonly string[], dispatched: boolean): Promise<OutboxEvent> {
  const values = eventRow({ type, payload, audience }, dispatched);
  const row = await repo.insertOne(db, values);
  return { id: row.id, type, payload, audience: values.audience, createdAt: row.created_at };
}

/** The outbox row of a new event (its audience without repeats). */
function eventRow(e: NewEvent, dispatched: boolean): repo.NewEventRow {
  return { id: newId("webhookEvent"), event_type: e.type, payload: JSON.stringify(e.payload), audience: [...new Set(e.audience)], dispatched };
}

export type OutboxHandler = (event: OutboxEvent, db: Kysely<Database>) => Promise<void>;
/** A subscriber's work for several events at once (in the order recorded); idempotent per event id, as a handler is. */
export type OutboxBatchHandler = (events: OutboxEvent[], db: Kysely<Database>) => Promise<void>;

/** Events one claim hands out, in one transaction. */
const EVENTS_PER_CLAIM = 100;
/** How often a dispatcher claims without being told (an event whose retry is due, a lost notification). */
const POLL_MS = 1000;
/** A failed event waits 2^(attempts-1) seconds before the next dispatch, at most this long. */
const RETRY_CAP_MS = 3600_000;

/**
 * Hands each committed event to the subscribers registered by features (webhook fan-out, rewards).
 * The outbox table is the queue: a dispatcher claims the oldest undispatched events, up to
 * EVENTS_PER_CLAIM, in a transaction that locks them (`FOR NO KEY UPDATE SKIP LOCKED`: any number of
 * worker processes share the work, and a subscriber's rows may still reference the events), hands them
 * to the subscribers in order, and marks them dispatched as it commits. A dispatcher that dies
 * mid-batch leaves its events undispatched and unlocked: they are handed out again (at least once;
 * subscribers are idempotent per event id). A failing subscriber stops the batch: the events before
 * it are dispatched, the failed one waits (2^(attempts-1) s, at most an hour, its error kept on it),
 * and the ones after it are claimed again at once. Dispatchers claim when told that events were
 * recorded (NOTIFY on commit), after a full batch, and every second.
 */
export class OutboxDispatcher {
  private readonly handlers: { type: string; handler: OutboxHandler; batch?: OutboxBatchHandler }[] = [];
  private readonly loop: ClaimLoop;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly logger: Logger,
  ) {
    this.loop = new ClaimLoop({ name: "outbox dispatcher", channel: OUTBOX_CHANNEL, pollMs: POLL_MS, logger, claim: async () => (await this.dispatchBatch()) === "more" });
  }

  /**
   * `type` is an event name or `*`. Handlers must be idempotent per event id. With `batch`, a claim's
   * events go to it together; should anything fail, the claim's events are handed out again one by
   * one (to `handler`), so the failure is the failing event's alone.
   */
  subscribe(type: string, handler: OutboxHandler, batch?: OutboxBatchHandler): void {
    this.handlers.push({ type, handler, ...(batch ? { batch } : {}) });
  }

  start(databaseUrl: string): void {
    this.loop.start(databaseUrl);
  }

  /** Claims no more, and waits for the batch being handed out. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One claim: the oldest due events, handed out in order and marked dispatched (or the failed one delayed) as it commits. */
  async dispatchBatch(): Promise<"more" | "done"> {
    return this.db.transaction().execute(async (trx) => {
      const rows = await repo.claimDue(trx, EVENTS_PER_CLAIM);
      const { done, failed } = await this.handOutInOrder(rows);
      if (done.length > 0) await repo.markDispatched(trx, done);
      if (failed) {
        const attempts = failed.row.dispatch_attempts + 1;
        const delayMs = Math.min(1000 * 2 ** (attempts - 1), RETRY_CAP_MS);
        this.logger.error({ err: failed.err, event_id: failed.row.id, attempts, retry_in_ms: delayMs }, "an outbox subscriber failed; the event is dispatched again later");
        await repo.delayDispatch(trx, failed.row.id, attempts, new Date(Date.now() + delayMs), failed.err.message.slice(0, 2000));
      }
      return rows.length === EVENTS_PER_CLAIM || (failed && done.length + 1 < rows.length) ? "more" : "done";
    });
  }

  /** Hands out a claim's events: together to the batch subscribers, else (or after a failure) one by one until one fails. */
  private async handOutInOrder(rows: repo.OutboxRow[]): Promise<{ done: string[]; failed?: { row: repo.OutboxRow; err: Error } }> {
    if (rows.length > 1 && this.handlers.some((h) => h.batch)) {
      const events = rows.map(eventOf);
      try {
        for (const { type, handler, batch } of this.handlers) {
          const theirs = events.filter((event) => type === "*" || type === event.type);
          if (theirs.length === 0) continue;
          if (batch) await batch(theirs, this.db);
          else for (const event of theirs) await handler(event, this.db);
        }
        return { done: rows.map((row) => row.id) };
      } catch (err) {
        this.logger.warn({ err, events: rows.length }, "outbox events handed out together failed; handing them out one by one");
      }
    }
    const done: string[] = [];
    for (const row of rows) {
      try {
        await this.handOut(eventOf(row));
        done.push(row.id);
      } catch (err) {
        return { done, failed: { row, err: err as Error } };
      }
    }
    return { done };
  }

  private async handOut(event: OutboxEvent): Promise<void> {
    for (const { type, handler } of this.handlers) {
      if (type === "*" || type === event.type) await handler(event, this.db);
    }
  }
}

function eventOf(row: repo.OutboxRow): OutboxEvent {
  return { id: row.id, type: row.event_type, payload: row.payload as Record<string, unknown>, audience: row.audience, createdAt: row.created_at };
}
