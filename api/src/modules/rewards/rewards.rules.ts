import type { OutboxEvent } from "../../jobs/outbox.ts";
import type { Tier } from "../users/users.tables.ts";

/**
 * What earns points (README, Rewards): one rule per event, each naming who earns what. An event
 * earns once per (event, user, rule): the ledger's `source_key` is `<event id>:<rule>:<user>`.
 * Amounts in USD earn whole points per dollar, rounded down.
 */
export const EARNING_RULES = [
  { event: "artwork.certified", rule: "certified", who: "the artist", points: "50" },
  { event: "payment.completed", rule: "bought", who: "the buyer of a marketplace sale", points: "1 per USD paid" },
  { event: "payment.completed", rule: "sold", who: "the seller of a marketplace sale", points: "1 per USD of the price" },
  { event: "fractional.purchase_confirmed", rule: "shares", who: "the buyer of shares", points: "1 per USD paid" },
  { event: "ticket.purchased", rule: "tickets", who: "the buyer of tickets", points: "5 per order, plus 1 per USD paid" },
  { event: "post.created", rule: "post", who: "the author of a post (artwork share or discussion)", points: "10" },
  { event: "challenge.joined", rule: "joined", who: "the submitter to a challenge", points: "25" },
  { event: "challenge.winners_named", rule: "won", who: "each winner", points: "500 for first place, 300 for second, 150 for any other" },
] as const;

export interface Earning {
  userId: string;
  rule: string;
  points: number;
  reason: string;
  referenceId: string;
}

const perDollar = (usd: unknown): number => (typeof usd === "number" && Number.isFinite(usd) && usd > 0 ? Math.floor(usd) : 0);
const str = (v: unknown): string | null => (typeof v === "string" && v.length > 0 ? v : null);

/** The artworks whose artists an event's earnings name (earningsOf's `artistOf` is asked for these). */
export function artworksNamedBy(event: OutboxEvent): string[] {
  const artworkId = event.type === "artwork.certified" ? str(event.payload.artwork_id) : null;
  return artworkId ? [artworkId] : [];
}

/** The earnings an event makes (zero-point ones left out); `artistOf` knows the artists of artworksNamedBy(event). */
export function earningsOf(event: OutboxEvent, artistOf: (artworkId: string) => string | null): Earning[] {
  const p = event.payload;
  const out: Earning[] = [];
  const add = (userId: string | null, rule: string, points: number, reason: string, referenceId: string | null) => {
    if (userId && points > 0) out.push({ userId, rule, points, reason, referenceId: referenceId ?? event.id });
  };
  switch (event.type) {
    case "artwork.certified": {
      const artworkId = str(p.artwork_id);
      if (artworkId) add(artistOf(artworkId), "certified", 50, "Artwork certified on-chain", artworkId);
      break;
    }
    case "payment.completed":
      add(str(p.buyer_id), "bought", perDollar(p.amount_usd), "Marketplace purchase", str(p.tx_id));
      add(str(p.seller_id), "sold", perDollar(p.amount_usd), "Marketplace sale", str(p.tx_id));
      break;
    case "fractional.purchase_confirmed":
      add(str(p.buyer_id), "shares", perDollar(p.total_paid_usd), "Fractional shares purchased", str(p.purchase_id));
      break;
    case "ticket.purchased":
      add(str(p.buyer_id), "tickets", 5 + perDollar(p.paid_usd ?? p.total_usd), "Event tickets purchased", str(p.order_id));
      break;
    case "post.created":
      if (p.type === "artwork_share" || p.type === "discussion") add(str(p.author_id), "post", 10, "Community post", str(p.post_id));
      break;
    case "challenge.joined":
      add(str(p.user_id), "joined", 25, "Challenge joined", str(p.submission_id));
      break;
    case "challenge.winners_named":
      for (const w of Array.isArray(p.winners) ? (p.winners as { user_id?: unknown; rank?: unknown; submission_id?: unknown }[]) : []) {
        const rank = typeof w.rank === "number" ? w.rank : 0;
        if (rank < 1) continue;
        add(str(w.user_id), `won:${rank}`, rank === 1 ? 500 : rank === 2 ? 300 : 150, `Challenge won (place ${rank})`, str(w.submission_id));
      }
      break;
  }
  return out;
}

/** Tiers by lifetime points (CONTRACT §4), lowest first. */
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
