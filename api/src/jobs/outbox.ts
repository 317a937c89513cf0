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

/** An event to record: its type, payload, and the ids of the users it concerns (see recordEvent). */
export interface NewEvent {
  type: string;
  payload: Record<string, unknown>;
  audience: readonly string[];
}

/** Events recorded together share one dispatch job, up to this many. */
const EVENTS_PER_DISPATCH = 100;

/**
 * Records a domain event in the caller's transaction, with the job that dispatches it: both exist
 * exactly when the change commits, so no event is lost to a crash and none reports a rolled-back change.
 * `audience` names the users the event concerns (ids): only their webhook subscriptions, and admins'
 * all-users ones, receive it; an empty audience keeps the event from every other user.
 */
export async function recordEvent(db: Db, type: string, payload: Record<string, unknown>, audience: readonly string[]): Promise<string> {
  const [id] = await recordEvents(db, [{ type, payload, audience }]);
  return id!;
}

/**
 * Records several events in the caller's transaction (one statement), dispatched in order by one
 * job per EVENTS_PER_DISPATCH: a transaction that confirms a block's worth of changes writes its
 * events at the cost of one. The ids, in the order given.
 */
export async function recordEvents(db: Db, events: readonly NewEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  const rows = events.map((e) => eventRow(e, false));
  await db.insertInto("outbox_events").values(rows).execute();
  const ids = rows.map((r) => r.id);
  for (let i = 0; i < ids.length; i += EVENTS_PER_DISPATCH) {
    const chunk = ids.slice(i, i + EVENTS_PER_DISPATCH);
    await enqueue(db, OUTBOX_DISPATCH_TASK, chunk.length === 1 ? { event_id: chunk[0] } : { event_ids: chunk }, { maxAttempts: 25 });
  }
  return ids;
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
  const row = await db.insertInto("outbox_events").values(values).returning(["id", "created_at"]).executeTakeFirstOrThrow();
  return { id: row.id, type, payload, audience: values.audience, createdAt: row.created_at };
}

/** The outbox row of a new event (its audience without repeats). */
function eventRow(e: NewEvent, dispatched: boolean) {
  return {
    id: newId("webhookEvent"),
    event_type: e.type,
    payload: JSON.stringify(e.payload),
    audience: [...new Set(e.audience)],
    dispatched_at: dispatched ? sql<Date>`now()` : null,
  };
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

  /**
   * Dispatches the job's events (`event_id`, or `event_ids` for events recorded together) in order.
   * A failing subscriber fails the job after the events before it are marked dispatched; the retry
   * hands out the whole list again (handlers are idempotent per event id).
   */
  readonly task: Task = async (payload) => {
    const { event_id: one, event_ids: many } = payload as { event_id?: string; event_ids?: string[] };
    const ids = many ?? (one ? [one] : []);
    if (ids.length === 0) throw new Error(`${OUTBOX_DISPATCH_TASK}: payload without event_id or event_ids`);
    const rows = await this.db.selectFrom("outbox_events").selectAll().where("id", "in", ids).execute();
    const byId = new Map(rows.map((row) => [row.id, row]));
    const vanished = ids.filter((id) => !byId.has(id));
    if (vanished.length > 0) this.logger.warn({ event_ids: vanished }, "outbox events vanished before dispatch");
    const done: string[] = [];
    try {
      for (const id of ids) {
        const row = byId.get(id);
        if (!row) continue;
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
        done.push(id);
      }
    } finally {
      if (done.length > 0) await this.db.updateTable("outbox_events").set({ dispatched_at: sql<Date>`now()` }).where("id", "in", done).execute();
    }
  };
}
