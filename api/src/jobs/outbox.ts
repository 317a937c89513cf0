import { type Kysely, sql } from "kysely";
import type { Logger } from "pino";
import type { Database, Db } from "../db/database.ts";
import { newId } from "../lib/ids.ts";
import { enqueue, type Task } from "./queue.ts";

export const OUTBOX_DISPATCH_TASK = "outbox_dispatch";

export interface OutboxEvent {
  id: string;
  type: string;
  payload: Record<string, unknown>;
  /** The ids of the users the event concerns (see recordEvent). */
  audience: string[];
  createdAt: Date;
}

/**
 * Records a domain event in the caller's transaction, with the job that dispatches it: both exist
 * exactly when the change commits, so no event is lost to a crash and none reports a rolled-back change.
 * `audience` names the users the event concerns (ids): only their webhook subscriptions, and admins'
 * all-users ones, receive it; an empty audience keeps the event from every other user.
 */
export async function recordEvent(db: Db, type: string, payload: Record<string, unknown>, audience: readonly string[]): Promise<string> {
  const { id } = await insertEvent(db, type, payload, audience, false);
  await enqueue(db, OUTBOX_DISPATCH_TASK, { event_id: id }, { maxAttempts: 25 });
  return id;
}

/**
 * Records an event that its one consumer handles in the caller's transaction (a webhook ping to one
 * subscription): stored like any other, marked dispatched, never handed to the subscribers.
 */
export async function recordUndispatchedEvent(db: Db, type: string, payload: Record<string, unknown>, audience: readonly string[]): Promise<OutboxEvent> {
  return insertEvent(db, type, payload, audience, true);
}

async function insertEvent(db: Db, type: string, payload: Record<string, unknown>, audience: readonly string[], dispatched: boolean): Promise<OutboxEvent> {
  const users = [...new Set(audience)];
  const row = await db
    .insertInto("outbox_events")
    .values({
      id: newId("webhookEvent"),
      event_type: type,
      payload: JSON.stringify(payload),
      audience: users,
      dispatched_at: dispatched ? sql<Date>`now()` : null,
    })
    .returning(["id", "created_at"])
    .executeTakeFirstOrThrow();
  return { id: row.id, type, payload, audience: users, createdAt: row.created_at };
}

/** An undispatched event older than this is handed out again (its job may sit behind a dead worker). */
const STALE_DISPATCH_MINUTES = 2;

/**
 * The safety net of the outbox: graphile-worker keeps a crashed worker's jobs locked for hours, so
 * events still undispatched after a few minutes get a fresh dispatch job. Dispatch is idempotent per
 * event, so a job that later wakes up again does no harm.
 */
export async function redispatchStaleEvents(db: Kysely<Database>): Promise<number> {
  const stale = await db
    .selectFrom("outbox_events")
    .select("id")
    .where("dispatched_at", "is", null)
    .where("created_at", "<", sql<Date>`now() - make_interval(mins => ${STALE_DISPATCH_MINUTES})`)
    .orderBy("created_at")
    .limit(1000)
    .execute();
  for (const { id } of stale) {
    await enqueue(db, OUTBOX_DISPATCH_TASK, { event_id: id }, { maxAttempts: 25, jobKey: `outbox_redispatch:${id}` });
  }
  return stale.length;
}

export type OutboxHandler = (event: OutboxEvent, db: Kysely<Database>) => Promise<void>;

/**
 * Hands each committed event to the subscribers registered by features (webhook fan-out, rewards);
 * a failing subscriber fails the job, which the queue retries with backoff: delivery is at least once.
 */
export class OutboxDispatcher {
  private readonly handlers: { type: string; handler: OutboxHandler }[] = [];

  constructor(
    private readonly db: Kysely<Database>,
    private readonly logger: Logger,
  ) {}

  /** `type` is an event name or `*`. Handlers must be idempotent per event id. */
  subscribe(type: string, handler: OutboxHandler): void {
    this.handlers.push({ type, handler });
  }

  readonly task: Task = async (payload) => {
    const { event_id: eventId } = payload as { event_id: string };
    const row = await this.db.selectFrom("outbox_events").selectAll().where("id", "=", eventId).executeTakeFirst();
    if (!row) {
      this.logger.warn({ event_id: eventId }, "outbox event vanished before dispatch");
      return;
    }
    const event: OutboxEvent = {
      id: row.id,
      type: row.event_type,
      payload: row.payload as Record<string, unknown>,
      audience: row.audience,
      createdAt: row.created_at,
    };
    for (const { type, handler } of this.handlers) {
      if (type === "*" || type === event.type) await handler(event, this.db);
    }
    await this.db.updateTable("outbox_events").set({ dispatched_at: sql<Date>`now()` }).where("id", "=", eventId).execute();
  };
}
