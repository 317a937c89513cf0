import type { OutboxEvent } from "../../jobs/outbox.ts";
import type { Tier } from "../../lib/tiers.ts";

/**
 * What earns points and what takes them back (docs/rewards.md): one table, from which both the
 * computation below and the documented text (`GET /v1/rewards/rules`, docs/rewards.md) are derived.
 * Each rule earns once per source and user; a source that stops standing is reversed once.
 */

export type SourceType = "certification" | "sale" | "share_purchase" | "ticket_order" | "post" | "challenge_submission" | "challenge_win";

/** How many points: a fixed number, plus whole points per USD of a payload field (rounded down); or by the winner's place. */
export type Points = { fixed?: number; perUsd?: readonly string[]; paidOnly?: boolean } | { byPlace: readonly [number, number, number] };

export interface EarningRule {
  rule: string;
  source: SourceType;
  /** The outbox event that makes the source stand, and the payload field naming it. */
  event: string;
  sourceId: string;
  /** The payload field naming who earns (challenge wins: each winner). */
  earner: string;
  who: string;
  points: Points;
  /** Payload conditions: a post earns only as an artwork share or a discussion. */
  only?: { field: string; in: readonly string[] };
  /** Two payload fields that must differ: a sale earns nothing when its buyer's account is its seller's (a wallet of the seller's own bought it). */
  distinct?: readonly [string, string];
  /** The outbox events that say the source stopped standing (same source id field, same earner field). */
  reversedBy: readonly string[];
  reversedWhen: string;
}

export const EARNING_RULES: readonly EarningRule[] = [
  { rule: "certified", source: "certification", event: "artwork.certified", sourceId: "artwork_id", earner: "artist_id", who: "the artist", points: { fixed: 50 }, reversedBy: [], reversedWhen: "never" },
  {
    rule: "bought",
    source: "sale",
    event: "payment.completed",
    sourceId: "tx_id",
    earner: "buyer_id",
    who: "the buyer of a marketplace sale, unless the buyer's account is the seller's",
    points: { perUsd: ["amount_usd"] },
    distinct: ["buyer_id", "seller_id"],
    reversedBy: ["sale.refunded"],
    reversedWhen: "the sale is refunded",
  },
  {
    rule: "sold",
    source: "sale",
    event: "payment.completed",
    sourceId: "tx_id",
    earner: "seller_id",
    who: "the seller of a marketplace sale, unless the buyer's account is the seller's",
    points: { perUsd: ["amount_usd"] },
    distinct: ["buyer_id", "seller_id"],
    reversedBy: ["sale.refunded"],
    reversedWhen: "the sale is refunded",
  },
  {
    rule: "shares",
    source: "share_purchase",
    event: "fractional.purchase_confirmed",
    sourceId: "purchase_id",
    earner: "buyer_id",
    who: "the buyer of shares",
    points: { perUsd: ["total_paid_usd"] },
    reversedBy: [],
    reversedWhen: "never (a confirmed purchase of minted shares is not refunded)",
  },
  {
    rule: "tickets",
    source: "ticket_order",
    event: "ticket.purchased",
    sourceId: "order_id",
    earner: "buyer_id",
    who: "the buyer of paid tickets to an event that does not feature them",
    points: { fixed: 5, perUsd: ["paid_usd", "total_usd"], paidOnly: true },
    reversedBy: ["ticket.refunded"],
    reversedWhen: "the order is refunded (its event cancelled)",
  },
  {
    rule: "post",
    source: "post",
    event: "post.created",
    sourceId: "post_id",
    earner: "author_id",
    who: "the author of an artwork share or a discussion",
    points: { fixed: 10 },
    only: { field: "type", in: ["artwork_share", "discussion"] },
    reversedBy: ["post.deleted"],
    reversedWhen: "the post is deleted",
  },
  { rule: "joined", source: "challenge_submission", event: "challenge.joined", sourceId: "submission_id", earner: "user_id", who: "the submitter to a challenge", points: { fixed: 25 }, reversedBy: ["challenge.withdrawn"], reversedWhen: "the submission is withdrawn" },
  { rule: "won", source: "challenge_win", event: "challenge.winners_named", sourceId: "submission_id", earner: "user_id", who: "each winner of a challenge", points: { byPlace: [500, 300, 150] }, reversedBy: [], reversedWhen: "never" },
];

/** The rules as documented (`GET /v1/rewards/rules`): the same table, in words. */
export function describedRules() {
  return EARNING_RULES.map((r) => ({ rule: r.rule, source_type: r.source, event: r.event, who: r.who, points: pointsText(r.points), reversed_when: r.reversedWhen }));
}

function pointsText(points: Points): string {
  if ("byPlace" in points) return `${points.byPlace[0]} for first place, ${points.byPlace[1]} for second, ${points.byPlace[2]} for any other`;
  const parts = [...(points.fixed ? [`${points.fixed}`] : []), ...(points.perUsd ? ["1 per USD paid"] : [])];
  return `${parts.join(" + ")}${points.paidOnly ? " (paid orders only: free ones earn nothing)" : ""}`;
}

/** Every outbox event type the rewards module listens to. */
export const RULE_EVENTS: readonly string[] = [...new Set(EARNING_RULES.flatMap((r) => [r.event, ...r.reversedBy]))];

export interface SourceRef {
  type: SourceType;
  id: string;
}

export interface Earning {
  userId: string;
  source: SourceRef;
  rule: string;
  points: number;
  reason: string;
}

export interface Reversal {
  userId: string;
  source: SourceRef;
  rule: string;
  reason: string;
}

/** What a batch of events needs to know beyond their payloads: artworks' artists, events' featured artists. */
export interface EarningContext {
  artistOf(artworkId: string): string | null;
  /** Whether `userId` is featured as an artist by the ticket order's event (its tickets earn nothing). */
  features(eventId: string, userId: string): boolean;
}

const str = (v: unknown): string | null => (typeof v === "string" && v.length > 0 ? v : null);
const perDollar = (usd: unknown): number => (typeof usd === "number" && Number.isFinite(usd) && usd > 0 ? Math.floor(usd) : 0);

/** The artworks and events whose artists an event's earnings need (the context is asked about these). */
export function contextNeeds(event: OutboxEvent): { artworks: string[]; events: string[] } {
  const artwork = event.type === "artwork.certified" ? str(event.payload.artwork_id) : null;
  const platformEvent = event.type === "ticket.purchased" ? str(event.payload.event_id) : null;
  return { artworks: artwork ? [artwork] : [], events: platformEvent ? [platformEvent] : [] };
}

/** The earnings an event makes (none of zero points), by the table. */
export function earningsOf(event: OutboxEvent, ctx: EarningContext): Earning[] {
  const p = event.payload;
  const out: Earning[] = [];
  for (const r of EARNING_RULES) {
    if (r.event !== event.type) continue;
    if (r.only && !r.only.in.includes(String(p[r.only.field]))) continue;
    if (r.distinct && str(p[r.distinct[0]]) !== null && p[r.distinct[0]] === p[r.distinct[1]]) continue;
    if ("byPlace" in r.points) {
      for (const w of Array.isArray(p.winners) ? (p.winners as Record<string, unknown>[]) : []) {
        const place = typeof w.rank === "number" ? w.rank : 0;
        const userId = str(w[r.earner]);
        const sourceId = str(w[r.sourceId]);
        if (place < 1 || !userId || !sourceId) continue;
        out.push({ userId, source: { type: r.source, id: sourceId }, rule: r.rule, points: r.points.byPlace[Math.min(place, 3) - 1]!, reason: `Challenge won (place ${place})` });
      }
      continue;
    }
    const sourceId = str(p[r.sourceId]);
    const userId = r.source === "certification" && sourceId ? ctx.artistOf(sourceId) : str(p[r.earner]);
    if (!sourceId || !userId) continue;
    if (r.source === "ticket_order" && ctx.features(String(p.event_id), userId)) continue;
    const usd = r.points.perUsd?.map((field) => p[field]).find((v) => typeof v === "number");
    const paid = perDollar(usd);
    if (r.points.paidOnly && !(typeof usd === "number" && usd > 0)) continue;
    const points = (r.points.fixed ?? 0) + (r.points.perUsd ? paid : 0);
    if (points > 0) out.push({ userId, source: { type: r.source, id: sourceId }, rule: r.rule, points, reason: REASONS[r.rule] ?? r.rule });
  }
  return out;
}

/** The reversals an event asks for: every rule of the source it names, for each earner it names. */
export function reversalsOf(event: OutboxEvent): Reversal[] {
  const p = event.payload;
  const reason = str(p.reason) ?? REVERSAL_REASONS[event.type] ?? event.type;
  return EARNING_RULES.filter((r) => r.reversedBy.includes(event.type)).flatMap((r) => {
    const sourceId = str(p[r.sourceId]);
    const userId = str(p[r.earner]);
    return sourceId && userId ? [{ userId, source: { type: r.source, id: sourceId }, rule: r.rule, reason }] : [];
  });
}

const REASONS: Record<string, string> = {
  certified: "Artwork certified on-chain",
  bought: "Marketplace purchase",
  sold: "Marketplace sale",
  shares: "Fractional shares purchased",
  tickets: "Event tickets purchased",
  post: "Community post",
  joined: "Challenge joined",
};

const REVERSAL_REASONS: Record<string, string> = {
  "sale.refunded": "The sale was refunded",
  "ticket.refunded": "The tickets were refunded",
  "post.deleted": "The post was deleted",
  "challenge.withdrawn": "The challenge submission was withdrawn",
};

/** Tiers by lifetime points (docs/decisions.md#tiers), lowest first. */
export const TIERS: readonly { tier: Tier; from: number }[] = [
  { tier: "bronze", from: 0 },
  { tier: "silver", from: 1_000 },
  { tier: "gold", from: 5_000 },
  { tier: "platinum", from: 15_000 },
];

export function tierOf(lifetime: number): Tier {
  let tier: Tier = "bronze";
  for (const t of TIERS) if (lifetime >= t.from) tier = t.tier;
  return tier;
}

/** The next tier's threshold, or null at the top. */
export function nextThreshold(lifetime: number): number | null {
  return TIERS.find((t) => t.from > lifetime)?.from ?? null;
}
