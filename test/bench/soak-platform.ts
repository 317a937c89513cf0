/**
 * The soak's platform side (test/bench/soak.ts): its parties and requests, what it sets up before
 * the traffic (users, certified artworks in share classes, events, a reward), what the traffic can
 * act on (refreshed from the database), the answers' statistics and the processes' RSS.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { type Kysely, sql } from "kysely";
import type { Database } from "../../api/src/db/database.ts";
import { waitUntil } from "../../tools/stack/processes.ts";
import { submitArtwork } from "./certification.ts";
import { BENCH_ADMIN_KEY, call } from "./context.ts";

export const ARTISTS = 6;
export const COLLECTORS = 40;
export const REWARD_COST = 50;
export const REWARD_STOCK = 150;
export const TICKET_SEATS = 300;

export interface Party {
  id: string;
  token: string;
}

export interface Answer {
  status: number;
  body: any;
}

/** One request of the traffic: status, time, the body when JSON. Network errors answer status 0. */
export async function request(baseUrl: string, method: string, p: string, options: { token?: string; json?: unknown; form?: FormData } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.json !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET") headers["idempotency-key"] = randomUUID();
  try {
    const res = await fetch(new URL(p, baseUrl), { method, headers, body: options.form ?? (options.json !== undefined ? JSON.stringify(options.json) : undefined) });
    const text = await res.text();
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = text;
    }
    return { status: res.status, body };
  } catch (err) {
    return { status: 0, body: String(err) };
  }
}

export function vmRssKb(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

export class Stats {
  readonly latencies = new Map<string, number[]>();
  readonly statuses = new Map<string, Map<number, number>>();
  readonly serverErrors: { kind: string; status: number; body: string; at: number }[] = [];
  /** The first problem code answered per kind and 4xx status, for the report. */
  readonly refusals = new Map<string, string>();
  skipped = 0;

  record(kind: string, status: number, ms: number, body: unknown, at: number): void {
    if (!this.latencies.has(kind)) this.latencies.set(kind, []);
    this.latencies.get(kind)!.push(ms);
    const byStatus = this.statuses.get(kind) ?? new Map<number, number>();
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    this.statuses.set(kind, byStatus);
    const code = (body as { code?: unknown } | null)?.code;
    if (status >= 400 && status < 500 && !this.refusals.has(`${kind} ${status}`)) this.refusals.set(`${kind} ${status}`, typeof code === "string" ? code : JSON.stringify(body).slice(0, 80));
    if (status >= 500 || status === 0) this.serverErrors.push({ kind, status, body: typeof body === "string" ? body.slice(0, 300) : JSON.stringify(body).slice(0, 300), at });
  }
}

/** The cast and the goods: artists and collectors, three share classes on-chain, two events and a reward. */
export async function setUpGoods(baseUrl: string, db: Kysely<Database>, say: (line: string) => void) {
  const admin = (await call(baseUrl, "POST", "/v1/auth/token", { api_key: BENCH_ADMIN_KEY, scope: ["admin"] })).token as string;
  const user = async (name: string, role: "artist" | "collector"): Promise<Party> => {
    const created = await call(baseUrl, "POST", "/v1/admin/users", { username: name, email: `${name}@example.test`, role }, admin);
    const token = await call(baseUrl, "POST", "/v1/auth/token", { api_key: created.api_key.secret, scope: ["write"] });
    return { id: created.id as string, token: token.token as string };
  };
  const artists = await Promise.all(Array.from({ length: ARTISTS }, (_, i) => user(`soak_artist_${i}`, "artist")));
  const collectors = await Promise.all(Array.from({ length: COLLECTORS }, (_, i) => user(`soak_collector_${i}`, "collector")));
  const everyone = [...artists, ...collectors];

  // Three share classes: two large, one small enough to sell out during the run.
  const shareTerms = [
    { total_shares: 100_000, price_per_share_usd: 1 },
    { total_shares: 100_000, price_per_share_usd: 2.5 },
    { total_shares: 1_500, price_per_share_usd: 1 },
  ];
  const shareOwner = artists[0]!;
  const shareArtworks = await Promise.all(shareTerms.map((_, i) => submitArtwork(baseUrl, shareOwner.token, 900_000 + i)));
  await waitUntil(
    async () => {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from chain.certificate where artwork_id in (${sql.join(shareArtworks)})`.execute(db);
      return rows[0]!.n === shareArtworks.length || undefined;
    },
    { timeoutMs: 120_000, intervalMs: 250, what: "the share artworks certified and indexed" },
  );
  for (const [i, artworkId] of shareArtworks.entries()) {
    const made = await request(baseUrl, "POST", "/v1/fractional/artworks", { token: shareOwner.token, json: { artwork_id: artworkId, ...shareTerms[i] } });
    if (made.status !== 201 && made.status !== 202) throw new Error(`fractionalizing answered ${made.status}: ${JSON.stringify(made.body)}`);
  }
  await waitUntil(
    async () => {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from fractional_artworks where status = 'active'`.execute(db);
      return rows[0]!.n === shareArtworks.length || undefined;
    },
    { timeoutMs: 120_000, intervalMs: 250, what: "the share classes on-chain" },
  );
  const eventAt = Date.now() + 30 * 86_400_000;
  const events = [
    (await call(baseUrl, "POST", "/v1/events", { title: "Soak night", type: "exhibition", format: "in_person", location: "Soak Hall", starts_at: new Date(eventAt).toISOString(), ends_at: new Date(eventAt + 3_600_000).toISOString(), tickets: { in_person: { price_usd: 25, capacity: TICKET_SEATS } } }, admin)).event_id as string,
    (await call(baseUrl, "POST", "/v1/events", { title: "Soak talk", type: "talk", format: "virtual", location: "Online", starts_at: new Date(eventAt).toISOString(), ends_at: new Date(eventAt + 3_600_000).toISOString(), tickets: { virtual: { price_usd: 5, capacity: null } } }, admin)).event_id as string,
  ];
  const reward = (await call(baseUrl, "POST", "/v1/admin/rewards", { name: "Soak code", points_cost: REWARD_COST, kind: "code", stock: REWARD_STOCK, active: true }, admin)).reward_id as string;
  say(`${ARTISTS} artists, ${COLLECTORS} collectors, ${shareArtworks.length} share classes, ${events.length} events, a reward of ${REWARD_STOCK}`);
  return { admin, artists, collectors, everyone, shareArtworks, events, reward };
}

/** What the traffic can act on, refreshed from the database (not counted as traffic). */
export function trafficWorld(db: Kysely<Database>, artistIds: string[]) {
  const world = {
    listable: [] as { id: string; artist_id: string }[],
    listings: [] as { id: string; seller_id: string; accepts_offers: boolean }[],
    offers: [] as { id: string; seller_id: string; listing_id: string }[],
    posts: [] as string[],
    artworks: [] as string[],
    redeemers: [] as string[],
  };
  const refresh = async () => {
    const [listable, listings, offers, posts, artworks, redeemers] = await Promise.all([
      sql<{ id: string; artist_id: string }>`
        select a.id, a.artist_id from artworks a join chain.certificate c on c.artwork_id = a.id
        join users u on u.id = a.artist_id and lower(u.wallet_address) = lower(c.owner)
        where a.artist_id in (${sql.join(artistIds)}) and a.status = 'certified' and a.fractionalized_at is null and a.deleted_at is null
          and not exists (select 1 from listings l where l.artwork_id = a.id and l.status in ('active', 'pending_payment', 'sold'))
        limit 200`.execute(db),
      sql<{ id: string; seller_id: string; accepts_offers: boolean }>`select id, seller_id, accepts_offers from listings where status = 'active' limit 500`.execute(db),
      sql<{ id: string; seller_id: string; listing_id: string }>`select id, seller_id, listing_id from offers where status = 'pending' limit 200`.execute(db),
      sql<{ id: string }>`select id from community_posts where removed_at is null order by created_at desc limit 300`.execute(db),
      sql<{ id: string }>`select id from artworks where deleted_at is null order by created_at desc limit 300`.execute(db),
      sql<{ id: string }>`select user_id as id from reward_balances where service_points >= ${REWARD_COST}`.execute(db),
    ]);
    world.listable = listable.rows;
    world.listings = listings.rows;
    world.offers = offers.rows;
    world.posts = posts.rows.map((r) => r.id);
    world.artworks = artworks.rows.map((r) => r.id);
    world.redeemers = redeemers.rows.map((r) => r.id);
  };
  return { world, refresh };
}
