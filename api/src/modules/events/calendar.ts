import ical, { escape, ICalEventStatus } from "ical-generator";
import type { PlatformEvent } from "./events.tables.ts";

/**
 * An event as an RFC 5545 calendar (ical-generator writes the format: folding, escaping, CRLF).
 * UID is stable (the event id at the API's host), so a calendar that imported it updates that entry
 * when SEQUENCE rises (each edit) and shows STATUS:CANCELLED once it is cancelled. Times are UTC.
 */
export function calendarOf(event: PlatformEvent, publicBaseUrl: string): string {
  const base = new URL(publicBaseUrl);
  const page = new URL(`/v1/events/${event.id}`, base).toString();
  // ical-generator escapes the event's text fields but writes the calendar's name (NAME, X-WR-CALNAME) as given: escaped with its own escape.
  const calendar = ical({ prodId: { company: "Art Platform", product: "Events API", language: "EN" }, name: escape(event.title, false) });
  calendar.createEvent({
    id: `${event.id}@${base.hostname}`,
    sequence: event.sequence,
    start: event.starts_at,
    end: event.ends_at,
    stamp: event.updated_at,
    created: event.created_at,
    lastModified: event.updated_at,
    summary: event.title,
    description: event.description ? `${event.description}\n\n${page}` : page,
    location: event.location,
    url: page,
    status: event.status === "cancelled" ? ICalEventStatus.CANCELLED : ICalEventStatus.CONFIRMED,
  });
  return calendar.toString();
}
