import type { Kysely } from "kysely";
import type { Database } from "../../db/database.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { centsToUsd, usdToCents } from "../../lib/money.ts";
import { paginated } from "../../lib/pagination.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import type { Actor } from "../../lib/actor.ts";
import type { UsersService } from "../users/users.service.ts";
import * as repo from "./events.repository.ts";
import type { EventCreate, EventPatch, EventsQuery } from "./events.schemas.ts";
import type { PlatformEvent, ScheduleItem, Speaker, TicketKind } from "./events.tables.ts";

type EventInput = Omit<EventCreate, "tickets"> & { tickets: EventCreate["tickets"] };

/**
 * Platform events (docs/integrators/events.md#events): admins create, edit and cancel them; anyone
 * lists and reads them. Ticket sales are TicketsService's; the seat counters they move live on the
 * event's row, so an edit never lowers a capacity below the seats already sold (checked under the
 * row's lock).
 */
export class EventsService {
  constructor(private readonly deps: { db: Kysely<Database>; users: UsersService }) {}

  create(actor: Actor, input: EventCreate, transact: Transact = transactOn(this.deps.db)) {
    const tickets = ticketColumns(input.format, input.tickets);
    const speakers = speakersOf(input.speakers, []);
    const schedule = scheduleOf(input.schedule, speakers, input.starts_at, input.ends_at);
    return transact(async (trx) => {
      const artists = await this.requireArtists(trx, input.artist_ids);
      const id = newId("event");
      await repo.insert(trx, {
        id,
        title: input.title,
        type: input.type,
        format: input.format,
        location: input.location,
        description: input.description,
        starts_at: input.starts_at,
        ends_at: input.ends_at,
        featured: input.featured,
        ...tickets,
        schedule: JSON.stringify(schedule),
        speakers: JSON.stringify(speakers),
        created_by: actor.userId,
      });
      await repo.setArtists(trx, id, artists);
      return this.detailIn(trx, id);
    });
  }

  /**
   * Edits an event that is not cancelled. Times, format and tickets may change: a kind of ticket
   * with seats sold cannot be dropped, and a capacity cannot go below the seats sold (409
   * invalid_state); prices apply to orders made after the edit.
   */
  async update(id: string, patch: EventPatch, transact: Transact = transactOn(this.deps.db)) {
    return transact(async (trx) => {
      const event = found(isId("event", id) ? await repo.lock(trx, id) : undefined, "Event");
      if (event.status === "cancelled") throw ApiError.conflict("invalid_state", "The event is cancelled: it cannot be edited");
      const startsAt = patch.starts_at ?? event.starts_at;
      const endsAt = patch.ends_at ?? event.ends_at;
      if (endsAt <= startsAt) throw ApiError.validation([{ field: patch.ends_at ? "ends_at" : "starts_at", code: "invalid_value", message: "ends_at must be after starts_at" }]);
      const format = patch.format ?? event.format;
      let tickets: ReturnType<typeof ticketColumns> | undefined;
      if (patch.tickets !== undefined || patch.format !== undefined) {
        tickets = ticketColumns(format, patch.tickets ?? currentTickets(event), "tickets");
        for (const kind of ["virtual", "in_person"] as const) {
          const sold = kind === "virtual" ? event.virtual_sold : event.in_person_sold;
          const price = kind === "virtual" ? tickets.virtual_price_cents : tickets.in_person_price_cents;
          const capacity = kind === "virtual" ? tickets.virtual_capacity : tickets.in_person_capacity;
          if (sold > 0 && price === null) throw ApiError.conflict("invalid_state", `${sold} ${kind} ticket(s) are sold: the event must keep offering ${kind} tickets`);
          if (capacity !== null && capacity < sold) throw ApiError.conflict("invalid_state", `${sold} ${kind} ticket(s) are sold: the capacity cannot go below that`);
        }
      }
      const speakers = patch.speakers !== undefined ? speakersOf(patch.speakers, event.speakers) : event.speakers;
      const schedule = patch.schedule !== undefined || patch.speakers !== undefined || patch.starts_at !== undefined || patch.ends_at !== undefined
        ? scheduleOf(patch.schedule ?? event.schedule.map((item) => ({ ...item, starts_at: new Date(item.starts_at), ends_at: new Date(item.ends_at) })), speakers, startsAt, endsAt)
        : event.schedule;
      if (patch.artist_ids !== undefined) await repo.setArtists(trx, event.id, await this.requireArtists(trx, patch.artist_ids));
      await repo.update(trx, event.id, {
        ...(patch.title !== undefined ? { title: patch.title } : {}),
        ...(patch.type !== undefined ? { type: patch.type } : {}),
        ...(patch.location !== undefined ? { location: patch.location } : {}),
        ...(patch.description !== undefined ? { description: patch.description } : {}),
        ...(patch.featured !== undefined ? { featured: patch.featured } : {}),
        ...(tickets ?? {}),
        format,
        starts_at: startsAt,
        ends_at: endsAt,
        schedule: JSON.stringify(schedule),
        speakers: JSON.stringify(speakers),
      });
      return this.detailIn(trx, event.id);
    });
  }

  /** Public list (docs/decisions.md#filters): by default the events that have not ended, soonest first. */
  async list(query: EventsQuery) {
    const { rows, total } = await repo.search(this.deps.db, query, query);
    const counts = rows.length === 0 ? new Map<string, number>() : await repo.countArtists(this.deps.db, rows.map((r) => r.id));
    return paginated(rows.map((r) => toSummary(r, counts.get(r.id) ?? 0)), query, total);
  }

  get(id: string) {
    if (!isId("event", id)) throw ApiError.notFound("Event");
    return this.detailIn(this.deps.db, id);
  }

  /** The event, for its calendar entry. */
  /** The artists each of the events features (an event featuring none is absent). */
  async featuredArtists(eventIds: string[]): Promise<Map<string, Set<string>>> {
    const rows = await repo.featuredArtistsOf(this.deps.db, eventIds);
    const out = new Map<string, Set<string>>();
    for (const r of rows) out.set(r.event_id, (out.get(r.event_id) ?? new Set()).add(r.artist_id));
    return out;
  }

  async find(id: string): Promise<PlatformEvent> {
    return found(isId("event", id) ? await repo.find(this.deps.db, id) : undefined, "Event");
  }

  async detailIn(db: Kysely<Database>, id: string) {
    const event = found(await repo.find(db, id), "Event");
    const artists = await repo.artistsOf(db, id);
    const now = Date.now();
    return {
      ...toSummary(event, artists.length),
      description: event.description,
      artists: artists.map((a) => ({ id: a.id, name: a.display_name })),
      tickets: ticketsView(event, now),
      schedule: event.schedule,
      speakers: event.speakers,
      cancelled_at: isoOrNull(event.cancelled_at),
      created_at: iso(event.created_at),
      updated_at: iso(event.updated_at),
    };
  }

  /** Every id a user with the artist role; in the order given, without repeats. */
  private async requireArtists(db: Kysely<Database>, ids: string[]): Promise<string[]> {
    const unique = [...new Set(ids)];
    if (unique.length !== ids.length) throw ApiError.validation([{ field: "artist_ids", code: "invalid_value", message: "an artist is named twice" }]);
    if (unique.length === 0) return [];
    const byId = await this.deps.users.rolesOf(db, unique);
    const bad = unique.findIndex((id) => byId.get(id) !== "artist");
    if (bad >= 0) {
      throw ApiError.validation([{ field: `artist_ids.${bad}`, code: byId.has(unique[bad]!) ? "invalid_value" : "not_found", message: byId.has(unique[bad]!) ? "not an artist" : "no such user" }]);
    }
    return unique;
  }
}

/** The ticket columns of an event of `format`: a kind the format does not offer is refused. */
function ticketColumns(format: PlatformEvent["format"], tickets: EventInput["tickets"], field = "tickets") {
  const offers = { virtual: format !== "in_person", in_person: format !== "virtual" };
  for (const kind of ["virtual", "in_person"] as const) {
    if (tickets[kind] && !offers[kind]) throw ApiError.validation([{ field: `${field}.${kind}`, code: "invalid_value", message: `a ${format} event has no ${kind} tickets` }]);
  }
  return {
    virtual_price_cents: tickets.virtual ? usdToCents(tickets.virtual.price_usd) : null,
    virtual_capacity: tickets.virtual?.capacity ?? null,
    in_person_price_cents: tickets.in_person ? usdToCents(tickets.in_person.price_usd) : null,
    in_person_capacity: tickets.in_person?.capacity ?? null,
  };
}

function currentTickets(e: PlatformEvent): EventInput["tickets"] {
  return {
    ...(e.virtual_price_cents !== null ? { virtual: { price_usd: centsToUsd(e.virtual_price_cents), capacity: e.virtual_capacity } } : {}),
    ...(e.in_person_price_cents !== null ? { in_person: { price_usd: centsToUsd(e.in_person_price_cents), capacity: e.in_person_capacity! } } : {}),
  };
}

/** Speakers with their ids: kept when a `spk_` id of the event's speakers is given, new otherwise. */
function speakersOf(input: EventCreate["speakers"], current: Speaker[]): Speaker[] {
  const known = new Set(current.map((s) => s.id));
  const seen = new Set<string>();
  return input.map((s, i) => {
    if (s.id !== undefined && (!known.has(s.id) || seen.has(s.id))) {
      throw ApiError.validation([{ field: `speakers.${i}.id`, code: "not_found", message: "not a speaker of this event (omit id for a new speaker)" }]);
    }
    if (s.user_id != null && !isId("user", s.user_id)) throw ApiError.validation([{ field: `speakers.${i}.user_id`, code: "invalid_value", message: "not a user id" }]);
    const id = s.id ?? newId("speaker");
    seen.add(id);
    return { id, name: s.name, bio: s.bio ?? null, user_id: s.user_id ?? null };
  });
}

/** The schedule, each session within the event's times and naming its speakers by id. */
function scheduleOf(input: { starts_at: Date; ends_at: Date; title: string; speaker_ids: (number | string)[] }[], speakers: Speaker[], startsAt: Date, endsAt: Date): ScheduleItem[] {
  const ids = new Set(speakers.map((s) => s.id));
  return input
    .map((item, i) => {
      if (item.ends_at <= item.starts_at) throw ApiError.validation([{ field: `schedule.${i}.ends_at`, code: "invalid_value", message: "must be after starts_at" }]);
      if (item.starts_at < startsAt || item.ends_at > endsAt) {
        throw ApiError.validation([{ field: `schedule.${i}`, code: "invalid_value", message: "a session must lie within the event's starts_at and ends_at" }]);
      }
      const speakerIds = item.speaker_ids.map((ref, j) => {
        const id = typeof ref === "number" ? speakers[ref]?.id : ref;
        if (id === undefined || !ids.has(id)) {
          throw ApiError.validation([{ field: `schedule.${i}.speaker_ids.${j}`, code: "not_found", message: "no such speaker (a position in speakers, or a spk_ id of the event)" }]);
        }
        return id;
      });
      return { starts_at: iso(item.starts_at), ends_at: iso(item.ends_at), title: item.title, speaker_ids: [...new Set(speakerIds)] };
    })
    .sort((a, b) => a.starts_at.localeCompare(b.starts_at));
}

/** Whether tickets are on sale at `now`: scheduled and not ended. */
export function onSale(e: PlatformEvent, now: number): boolean {
  return e.status === "scheduled" && e.ends_at.getTime() > now;
}

export function remainingOf(e: PlatformEvent, kind: TicketKind): number | null {
  const capacity = kind === "virtual" ? e.virtual_capacity : e.in_person_capacity;
  return capacity === null ? null : capacity - (kind === "virtual" ? e.virtual_sold : e.in_person_sold);
}

function ticketsView(e: PlatformEvent, now: number) {
  const selling = onSale(e, now);
  const view: Record<string, unknown> = {};
  if (e.virtual_price_cents !== null) {
    const remaining = remainingOf(e, "virtual");
    view.virtual = { price_usd: centsToUsd(e.virtual_price_cents), available: selling && (remaining === null || remaining > 0), capacity: e.virtual_capacity, remaining };
  }
  if (e.in_person_price_cents !== null) {
    const remaining = remainingOf(e, "in_person")!;
    view.in_person = { price_usd: centsToUsd(e.in_person_price_cents), available: selling && remaining > 0, capacity: e.in_person_capacity!, remaining };
  }
  return view;
}

function toSummary(e: PlatformEvent, artistsCount: number) {
  return {
    event_id: e.id,
    title: e.title,
    type: e.type,
    format: e.format,
    location: e.location,
    starts_at: iso(e.starts_at),
    ends_at: iso(e.ends_at),
    artists_count: artistsCount,
    featured: e.featured,
    status: e.status,
  };
}
