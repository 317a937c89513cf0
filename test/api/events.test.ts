/**
 * Platform events on real pieces (Postgres, the API over HTTP, its worker): admins' events with
 * schedules and speakers, filters and date bounds, edits that keep sold seats, the calendar entry,
 * and refused bodies that store nothing. Tickets: event-tickets.test.ts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { expectProblem, type TestUser } from "../support/api.ts";
import { at, DAY, FAKE, useEventsPlatform } from "../support/events.ts";

const { p, cast, place, req, create, buy, detail, count, hybrid, expectCreated } = useEventsPlatform();

describe("platform events", () => {
  let admin: string;
  let artist: TestUser;
  let artist2: TestUser;
  let buyer: TestUser;
  beforeAll(() => void ({ admin, artist, artist2, buyer } = cast));

  it("creates an event with artists, speakers and a schedule that names them; only admins create, edit and cancel", async () => {
    const start = Date.now() + 20 * DAY;
    const body = hybrid({
      title: "Talk: ink and code",
      type: "talk",
      starts_at: at(start),
      ends_at: at(start + 3 * 3_600_000),
      featured: true,
      description: "Two artists on printing.",
      artist_ids: [artist.id, artist2.id],
      speakers: [{ name: "Ada", bio: "Printmaker", user_id: artist.id }, { name: "Grace" }],
      schedule: [
        { starts_at: at(start + 3_600_000), ends_at: at(start + 2 * 3_600_000), title: "Panel", speaker_ids: [0, 1] },
        { starts_at: at(start), ends_at: at(start + 3_600_000), title: "Opening", speaker_ids: [1] },
      ],
    });
    // Access: anonymous, a user, a token without the admin scope.
    expectProblem(await req("POST", "/v1/events", undefined, body), 401, "unauthenticated");
    expectProblem(await create(body, buyer.token), 403, "insufficient_scope");
    expect(await count("platform_events")).toBe(0);

    const e = expectCreated(await create(body));
    expect(e.event_id).toMatch(/^evt_/);
    expect(e).toMatchObject({ title: "Talk: ink and code", type: "talk", format: "hybrid", location: place, featured: true, artists_count: 2, status: "scheduled", description: "Two artists on printing." });
    expect(e.artists.map((a: { id: string }) => a.id)).toEqual([artist.id, artist2.id]);
    expect(e.speakers).toHaveLength(2);
    const [ada, grace] = e.speakers as { id: string; name: string; user_id: string | null; bio: string | null }[];
    expect(ada).toMatchObject({ name: "Ada", bio: "Printmaker", user_id: artist.id });
    expect(grace).toMatchObject({ name: "Grace", bio: null, user_id: null });
    expect(ada!.id).toMatch(/^spk_/);
    // Sorted by time, speakers named by id.
    expect(e.schedule).toEqual([
      { starts_at: at(start), ends_at: at(start + 3_600_000), title: "Opening", speaker_ids: [grace!.id] },
      { starts_at: at(start + 3_600_000), ends_at: at(start + 2 * 3_600_000), title: "Panel", speaker_ids: [ada!.id, grace!.id] },
    ]);
    expect(e.tickets).toEqual({
      virtual: { price_usd: 5, available: true, capacity: null, remaining: null },
      in_person: { price_usd: 25, available: true, capacity: 50, remaining: 50 },
    });
    expect(await detail(e.event_id)).toEqual(e);

    // Edit: a user may not; an admin changes fields, keeps a speaker by id, the schedule by id.
    expectProblem(await req("PATCH", `/v1/events/${e.event_id}`, buyer.token, { title: "x" }), 403, "insufficient_scope");
    const edited = await req("PATCH", `/v1/events/${e.event_id}`, admin, {
      title: "Talk: ink, code and paper",
      speakers: [{ id: ada!.id, name: "Ada L." }],
      schedule: [{ starts_at: at(start), ends_at: at(start + 3_600_000), title: "Solo", speaker_ids: [ada!.id] }],
      tickets: { virtual: { price_usd: 7, capacity: 100 }, in_person: { price_usd: 30, capacity: 40 } },
    });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body.title).toBe("Talk: ink, code and paper");
    expect(edited.body.speakers).toEqual([{ id: ada!.id, name: "Ada L.", bio: null, user_id: null }]);
    expect(edited.body.schedule).toEqual([{ starts_at: at(start), ends_at: at(start + 3_600_000), title: "Solo", speaker_ids: [ada!.id] }]);
    expect(edited.body.tickets.in_person).toEqual({ price_usd: 30, available: true, capacity: 40, remaining: 40 });
    expect(edited.body.tickets.virtual).toEqual({ price_usd: 7, available: true, capacity: 100, remaining: 100 });
    // The removed speaker cannot stay in the schedule.
    expectProblem(await req("PATCH", `/v1/events/${e.event_id}`, admin, { speakers: [{ name: "Someone else" }] }), 400, "validation_failed");

    // Cancel: a user may not; unknown ids 404.
    expectProblem(await req("DELETE", `/v1/events/${e.event_id}`, buyer.token), 403, "insufficient_scope");
    expectProblem(await req("DELETE", `/v1/events/${FAKE.event}`, admin), 404, "not_found");
    expectProblem(await req("PATCH", `/v1/events/${FAKE.event}`, admin, { title: "x" }), 404, "not_found");
    expectProblem(await req("GET", `/v1/events/${FAKE.event}`), 404, "not_found");
    expectProblem(await req("GET", "/v1/events/not-an-id"), 404, "not_found");
  });

  it("refuses bad event bodies with a problem and stores nothing", async () => {
    const before = await count("platform_events");
    const ok = hybrid();
    for (const bad of [
      {},
      { ...ok, ends_at: ok.starts_at },
      { ...ok, ends_at: at(Date.parse(ok.starts_at) - 1000) },
      { ...ok, type: "party" },
      { ...ok, format: "mixed" },
      { ...ok, title: "" },
      { ...ok, starts_at: "tomorrow" },
      { ...ok, extra: 1 },
      { ...ok, format: "virtual" }, // in_person tickets for a virtual event
      { ...ok, format: "in_person" }, // virtual tickets for an in-person event
      { ...ok, tickets: { in_person: { price_usd: 10 } } }, // in-person without a capacity
      { ...ok, tickets: { in_person: { price_usd: -1, capacity: 5 } } },
      { ...ok, tickets: { in_person: { price_usd: 1.234, capacity: 5 } } },
      { ...ok, tickets: { virtual: { price_usd: 1, capacity: 0 } } },
      { ...ok, tickets: { balcony: { price_usd: 1 } } },
      { ...ok, artist_ids: [buyer.id] }, // not an artist
      { ...ok, artist_ids: [artist.id, artist.id] },
      { ...ok, artist_ids: ["usr_01JD3Y5V0Q3G7W7J6T4N4C2X1M"] },
      { ...ok, speakers: [{ name: "A" }], schedule: [{ starts_at: ok.starts_at, ends_at: ok.ends_at, title: "t", speaker_ids: [1] }] },
      { ...ok, schedule: [{ starts_at: at(Date.parse(ok.starts_at) - 1000), ends_at: ok.ends_at, title: "early" }] },
      { ...ok, schedule: [{ starts_at: ok.ends_at, ends_at: ok.starts_at, title: "backwards" }] },
      { ...ok, speakers: [{ name: "A", id: "spk_01JD3Y5V0Q3G7W7J6T4N4C2X1M" }] },
      { ...ok, speakers: [{ name: "A", user_id: "nobody" }] },
    ]) {
      const res = await create(bad as Record<string, unknown>);
      expectProblem(res, 400, "validation_failed");
    }
    expect(await count("platform_events")).toBe(before);
  });

  it("lists events by type, location, featured and inclusive date bounds; upcoming by default, past ones by `to`", async () => {
    const day0 = Date.UTC(2031, 4, 10); // 2031-05-10, far from the other tests' events
    const mk = async (title: string, over: Record<string, unknown>) => expectCreated(await create({ ...hybrid({ title, location: `${place} Harbour` }), ...over })).event_id;
    const a = await mk("A", { type: "exhibition", starts_at: at(day0 + 10 * 3_600_000), ends_at: at(day0 + 12 * 3_600_000), featured: true });
    const b = await mk("B", { type: "workshop", starts_at: at(day0 + DAY + 23 * 3_600_000), ends_at: at(day0 + 2 * DAY + 3_600_000) }); // 05-11 23:00 .. 05-12 01:00
    const c = await mk("C", { type: "fair", starts_at: at(day0 + 3 * DAY), ends_at: at(day0 + 3 * DAY + 3_600_000) }); // 05-13
    const past = await mk("Past", { type: "talk", format: "virtual", tickets: { virtual: { price_usd: 0 } }, starts_at: at(Date.now() - 3 * DAY), ends_at: at(Date.now() - 2 * DAY) });
    const ids = async (query: string) => {
      const res = await req("GET", `/v1/events?location=${encodeURIComponent(`${place} harbour`)}&${query}`);
      expect(res.status, res.text).toBe(200);
      return (res.body.data as { event_id: string }[]).map((e) => e.event_id);
    };
    expect(await ids("")).toEqual([a, b, c]);
    expect(await ids("type=workshop")).toEqual([b]);
    expect(await ids("featured=true")).toEqual([a]);
    expect(await ids("featured=false")).toEqual([b, c]);
    expect(await ids("from=2031-05-10&to=2031-05-10")).toEqual([a]);
    expect(await ids("from=2031-05-11&to=2031-05-11")).toEqual([b]); // starts on the 11th
    expect(await ids("from=2031-05-12&to=2031-05-12")).toEqual([b]); // still running on the 12th
    expect(await ids("from=2031-05-12")).toEqual([b, c]);
    expect(await ids("to=2031-05-11")).toContain(past);
    expect(await ids("to=2031-05-11")).toEqual([past, a, b]);
    // Pagination and the list item's fields.
    const page = await req("GET", `/v1/events?location=${encodeURIComponent(place)}%20Harbour&limit=2&page=2`);
    expect(page.body.pagination).toEqual({ page: 2, limit: 2, total: 3, has_more: false });
    expect(Object.keys(page.body.data[0]).sort()).toEqual(["artists_count", "ends_at", "event_id", "featured", "format", "location", "starts_at", "status", "title", "type"]);
    for (const q of ["type=party", "from=2031-13-01", "to=yesterday", "featured=yes", "limit=0", "page=0"]) expectProblem(await req("GET", `/v1/events?${q}`), 400, "invalid_parameter");
  });

  it("refuses to drop a kind with seats sold or to go below them", async () => {
    const e = expectCreated(await create(hybrid()));
    await buy(buyer, e.event_id, { kind: "in_person", quantity: 5, payment_method_id: "pm_card_visa" });
    expectProblem(await req("PATCH", `/v1/events/${e.event_id}`, admin, { tickets: { in_person: { price_usd: 25, capacity: 4 } , virtual: { price_usd: 5 } } }), 409, "invalid_state");
    expectProblem(await req("PATCH", `/v1/events/${e.event_id}`, admin, { format: "virtual", tickets: { virtual: { price_usd: 5 } } }), 409, "invalid_state");
    const ok = await req("PATCH", `/v1/events/${e.event_id}`, admin, { tickets: { in_person: { price_usd: 20, capacity: 5 }, virtual: { price_usd: 5 } } });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.tickets.in_person).toEqual({ price_usd: 20, available: false, capacity: 5, remaining: 0 });
  });

  it("serves the event as an RFC 5545 calendar entry that follows edits and the cancellation", async () => {
    const start = Date.UTC(2031, 6, 1, 18, 30);
    const e = expectCreated(await create(hybrid({ title: "Opening; with, commas\\and a backslash", description: "Line one\nLine two", starts_at: at(start), ends_at: at(start + 2 * 3_600_000) })));
    const get = () => fetch(new URL(`/v1/events/${e.event_id}/calendar.ics`, p.api.url));
    const res = await get();
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/calendar; charset=utf-8");
    const text = await res.text();
    expect(text.startsWith("BEGIN:VCALENDAR\r\n")).toBe(true);
    expect(text.trimEnd().endsWith("END:VCALENDAR")).toBe(true);
    // Lines end in CRLF and are folded at 75 octets.
    expect(text.split("\r\n").every((line) => Buffer.byteLength(line) <= 75)).toBe(true);
    const unfolded = text.replace(/\r\n[ \t]/g, "");
    const field = (name: string) => unfolded.split("\r\n").find((l) => l.startsWith(`${name}:`) || l.startsWith(`${name};`));
    expect(field("VERSION")).toBe("VERSION:2.0");
    expect(field("UID")).toBe(`UID:${e.event_id}@127.0.0.1`);
    expect(field("DTSTART")).toBe("DTSTART:20310701T183000Z");
    expect(field("DTEND")).toBe("DTEND:20310701T203000Z");
    expect(field("SUMMARY")).toBe("SUMMARY:Opening\\; with\\, commas\\\\and a backslash");
    // The calendar's own name, escaped as the summary is.
    expect(field("NAME")).toBe("NAME:Opening\\; with\\, commas\\\\and a backslash");
    expect(field("X-WR-CALNAME")).toBe("X-WR-CALNAME:Opening\\; with\\, commas\\\\and a backslash");
    expect(field("LOCATION")).toBe(`LOCATION:${place}`);
    expect(field("DESCRIPTION")).toContain("Line one\\nLine two");
    expect(field("SEQUENCE")).toBe("SEQUENCE:0");
    expect(field("STATUS")).toBe("STATUS:CONFIRMED");
    expect(unfolded.match(/BEGIN:VEVENT/g)).toHaveLength(1);

    await req("PATCH", `/v1/events/${e.event_id}`, admin, { location: "Porto" });
    await req("DELETE", `/v1/events/${e.event_id}`, admin);
    const after = (await (await get()).text()).replace(/\r\n[ \t]/g, "");
    expect(after).toContain("\r\nLOCATION:Porto\r\n");
    expect(after).toContain("\r\nSEQUENCE:2\r\n");
    expect(after).toContain("\r\nSTATUS:CANCELLED\r\n");
    expect((await fetch(new URL(`/v1/events/${FAKE.event}/calendar.ics`, p.api.url))).status).toBe(404);
  });
});
