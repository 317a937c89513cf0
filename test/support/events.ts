/**
 * The platform of the events tests (events.test.ts: the catalogue; event-tickets.test.ts: sales,
 * check-in and cancellation): an API with its worker on a database of its own (the tests count its
 * tables), the sandbox processor, a cast of users, and the requests the tests make.
 */
import { randomBytes } from "node:crypto";
import { beforeAll, expect } from "vitest";
import { adminToken, createUser, type TestResponse, type TestUser, useIsolatedTestApi } from "./api.ts";

export const DAY = 86_400_000;
export const at = (ms: number) => new Date(ms).toISOString();
export const FAKE = { event: "evt_01JD3Y5V0Q3G7W7J6T4N4C2X1M", ticket: "tkt_01JD3Y5V0Q3G7W7J6T4N4C2X1M", order: "ord_01JD3Y5V0Q3G7W7J6T4N4C2X1M" };

/** Rejects when one of `requests` answers: a request that was to be held answered without reaching the hold. */
export async function answeredEarly(requests: Promise<TestResponse>[]): Promise<never> {
  const r = await Promise.race(requests);
  throw new Error(`a request answered before it was held: ${r.status} ${r.text}`);
}

export interface EventsCast {
  admin: string;
  artist: TestUser;
  artist2: TestUser;
  buyer: TestUser;
  other: TestUser;
  reader: TestUser;
}

/** The calling file's events platform (started in beforeAll), its cast (made in beforeAll) and requests. */
export function useEventsPlatform() {
  // One processor attempt per charge run, so that a transient failure reaches the order's own retry (its job).
  const api = useIsolatedTestApi({ MARKETPLACE_CHARGE_ATTEMPTS: "2", PAYMENT_MAX_ATTEMPTS: "1", PAYMENT_RETRY_BASE_MS: "5", TICKET_HOLD_SECONDS: "5", DATABASE_POOL_SIZE: "8" });
  const p = {
    api,
    get db() {
      return api.db;
    },
  };
  const cast = {} as EventsCast;
  /** A location no other test uses, so that list filters see only this file's events. */
  const place = `Lisbon-${randomBytes(3).toString("hex")}`;

  const req = (method: string, path: string, token?: string, body?: unknown, headers: Record<string, string> = {}) => p.api.request(method, path, { token, body, headers });
  const create = (body: Record<string, unknown>, token = cast.admin) => req("POST", "/v1/events", token, body);
  const buy = (user: TestUser | string, eventId: string, body: Record<string, unknown>, key?: string) =>
    req("POST", `/v1/events/${eventId}/tickets`, typeof user === "string" ? user : user.token, body, key ? { "Idempotency-Key": key } : {});
  const detail = async (id: string) => (await req("GET", `/v1/events/${id}`)).body;
  const count = async (table: "platform_events" | "ticket_orders" | "tickets" | "transactions" | "sandbox_charges" | "sandbox_refunds") =>
    Number((await p.db.selectFrom(table).select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n);
  const eventsOf = async (type: string) =>
    (await p.db.selectFrom("outbox_events").select(["payload", "audience"]).where("event_type", "=", type).execute()).map((e) => ({
      payload: (typeof e.payload === "string" ? JSON.parse(e.payload) : e.payload) as Record<string, unknown>,
      audience: [...e.audience].sort(),
    }));
  const hybrid = (over: Record<string, unknown> = {}) => ({
    title: "Night of the Prints",
    type: "exhibition",
    format: "hybrid",
    location: place,
    starts_at: at(Date.now() + 10 * DAY),
    ends_at: at(Date.now() + 10 * DAY + 4 * 3_600_000),
    tickets: { virtual: { price_usd: 5 }, in_person: { price_usd: 25, capacity: 50 } },
    ...over,
  });
  const expectCreated = (res: TestResponse) => {
    expect(res.status, res.text).toBe(201);
    return res.body as { event_id: string } & Record<string, any>;
  };

  beforeAll(async () => {
    const [admin, artist, artist2, buyer, other, reader] = await Promise.all([
      adminToken(p.api),
      createUser(p.api, { role: "artist" }),
      createUser(p.api, { role: "artist" }),
      createUser(p.api, { scope: ["write"] }),
      createUser(p.api, { scope: ["write"] }),
      createUser(p.api, { scope: ["users:read", "artworks:read"] }),
    ]);
    Object.assign(cast, { admin, artist, artist2, buyer, other, reader });
  }, 60_000);

  return { p, cast, place, req, create, buy, detail, count, eventsOf, hybrid, expectCreated };
}
