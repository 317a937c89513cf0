import { type Insertable, sql, type Transaction, type Updateable } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import { containsPattern, type Page, paginate } from "../../lib/pagination.ts";
import type { EventsQuery } from "./events.schemas.ts";
import type { PlatformEvent, PlatformEventsTable } from "./events.tables.ts";

export type EventFilter = Pick<EventsQuery, "type" | "featured" | "location" | "from" | "to">;

export async function insert(db: Db, event: Insertable<PlatformEventsTable>): Promise<void> {
  await db.insertInto("platform_events").values(event).execute();
}

export function find(db: Db, id: string): Promise<PlatformEvent | undefined> {
  return db.selectFrom("platform_events").selectAll().where("id", "=", id).executeTakeFirst();
}

export async function exists(db: Db, id: string): Promise<boolean> {
  return (await db.selectFrom("platform_events").select("id").where("id", "=", id).executeTakeFirst()) !== undefined;
}

/** Locks an event's row for a change of its seats or state; only inside a transaction the service opened. */
export function lock(trx: Transaction<Database>, id: string): Promise<PlatformEvent | undefined> {
  return trx.selectFrom("platform_events").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

/**
 * The event's status, its row locked against a cancellation or a change, both of which lock it FOR
 * UPDATE (`lock`). FOR KEY SHARE, the weakest lock that conflicts with FOR UPDATE: confirmations of
 * one event do not wait for each other, nor for seats being reserved or released (plain UPDATEs,
 * FOR NO KEY UPDATE), and a holder that releases seats next upgrades without a deadlock (a shared
 * or NO KEY UPDATE lock here would be one, or would queue every confirmation on the row).
 */
export function lockStatus(trx: Transaction<Database>, id: string): Promise<Pick<PlatformEvent, "status">> {
  return trx.selectFrom("platform_events").select("status").where("id", "=", id).forKeyShare().executeTakeFirstOrThrow();
}

/** Every change moves `sequence`: calendars replace the entries they imported. */
export async function update(db: Db, id: string, changes: Updateable<PlatformEventsTable>): Promise<void> {
  await db
    .updateTable("platform_events")
    .set({ ...changes, sequence: sql<number>`sequence + 1`, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .execute();
}

export async function cancel(db: Db, id: string): Promise<void> {
  await db
    .updateTable("platform_events")
    .set({ status: "cancelled", cancelled_at: sql<Date>`now()`, sequence: sql<number>`sequence + 1`, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .execute();
}

/** Events by the filter, soonest first; without dates, the events that have not ended. */
export function search(db: Db, filter: EventFilter, page: Page): Promise<{ rows: PlatformEvent[]; total: number }> {
  let q = db.selectFrom("platform_events");
  if (filter.type) q = q.where("type", "=", filter.type);
  if (filter.featured !== undefined) q = q.where("featured", "=", filter.featured);
  if (filter.location) q = q.where("location", "ilike", containsPattern(filter.location));
  // Dates are UTC days, both inclusive: an event is in [from, to] when it overlaps those days.
  if (filter.from) q = q.where("ends_at", ">=", new Date(`${filter.from}T00:00:00Z`));
  if (filter.to) q = q.where("starts_at", "<", new Date(Date.parse(`${filter.to}T00:00:00Z`) + 86_400_000));
  if (!filter.from && !filter.to) q = q.where("ends_at", ">", sql<Date>`now()`);
  return paginate(q, page, (x) => x.selectAll().orderBy("starts_at").orderBy("id"));
}

/** An event's artists in their order, named by the users module's view (UsersViews). */
export function artistsOf(db: Db, eventId: string): Promise<{ id: string; display_name: string }[]> {
  return db
    .selectFrom("event_artists")
    .innerJoin("user_directory as u", "u.id", "event_artists.artist_id")
    .select(["u.id", "u.display_name"])
    .where("event_artists.event_id", "=", eventId)
    .orderBy("event_artists.position")
    .execute();
}

/** The (event, artist) pairs of these events. */
export function featuredArtistsOf(db: Db, eventIds: string[]): Promise<{ event_id: string; artist_id: string }[]> {
  return db.selectFrom("event_artists").select(["event_id", "artist_id"]).where("event_id", "in", eventIds).execute();
}

/** How many artists each of the events has (events without any are absent). */
export async function countArtists(db: Db, eventIds: string[]): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom("event_artists")
    .select(["event_id", (eb) => eb.fn.countAll<string>().as("n")])
    .where("event_id", "in", eventIds)
    .groupBy("event_id")
    .execute();
  return new Map(rows.map((r) => [r.event_id, Number(r.n)]));
}

/** Replaces an event's artists with `artistIds`, in that order. */
export async function setArtists(db: Db, eventId: string, artistIds: string[]): Promise<void> {
  await db.deleteFrom("event_artists").where("event_id", "=", eventId).execute();
  if (artistIds.length > 0) {
    await db.insertInto("event_artists").values(artistIds.map((artist_id, position) => ({ event_id: eventId, artist_id, position }))).execute();
  }
}
