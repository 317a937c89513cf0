/**
 * Every move on an artwork, and the states that refuse it (docs/ownership-and-money.md#moves): one
 * table, passed by every module's move under the artwork's row lock (OwnershipService.decide), from
 * which the guide's matrix is generated (tools/docs/moves.ts). Pure: no imports but types.
 *
 * A state is a fact about the artwork now, reported by the module that keeps it (the marketplace's
 * listings, orders, sales and disputes; the fractional share class; a withdrawal), by the artwork
 * itself (certified, removed) or by the chain (whose wallet holds the certificate). A state marked
 * `pending` is a chain effect still under way: it refuses what conflicts with it until the chain
 * settles it, and the refusal says to retry.
 */

export type ArtworkState =
  | "uncertified"
  | "removed"
  | "listed"
  | "listing_closed"
  | "selling"
  | "token_moved"
  | "order_fillable"
  | "disputed"
  | "refunding"
  | "shares_issued"
  | "withdrawing"
  | "resold"
  | "external_wallet"
  | "owner_unknown";

/** Who reports a state: a module's registered source, the artwork row, the chain's holder, or the move's subject (its listing, its sale). */
export type StateSource = "artworks" | "marketplace" | "fractional" | "withdrawals" | "chain" | "subject";

export interface StateRule {
  source: StateSource;
  /** A chain effect under way: ends by itself once the chain settles it (a refusal says when to retry). */
  pending?: true;
  /** What it means, in a clause ("it has an active listing"): the guide's text. */
  means: string;
}

export const ARTWORK_STATES: Readonly<Record<ArtworkState, StateRule>> = {
  uncertified: { source: "artworks", means: "its certificate is not on-chain yet (certification pending or failed)" },
  removed: { source: "artworks", means: "it was removed from the catalogue (its certificate and provenance stay)" },
  listed: { source: "marketplace", means: "it has an active listing" },
  listing_closed: { source: "subject", means: "the listing the move names is sold or cancelled" },
  selling: { source: "marketplace", pending: true, means: "a card sale of it is under way: its buyer being charged, or its certificate's transfer being mined" },
  token_moved: { source: "chain", means: "its listing's seller no longer holds the certificate on-chain (the listing is being cancelled)" },
  order_fillable: { source: "marketplace", pending: true, means: "a wallet can still fill an on-chain order of a listing that closed: the order's cancellation is not mined yet" },
  disputed: { source: "marketplace", means: "its last sale has an open dispute" },
  refunding: { source: "marketplace", pending: true, means: "its last sale is being refunded: the money, or the certificate going back on-chain" },
  shares_issued: { source: "fractional", means: "it is fractionalized: a share class exists or is being created" },
  withdrawing: { source: "withdrawals", pending: true, means: "its certificate is being withdrawn to its owner's own wallet" },
  resold: { source: "chain", means: "the certificate is no longer held by the account the move's sale sold it to" },
  external_wallet: { source: "chain", means: "the certificate is in a wallet of its owner's own (signed in with, or linked), which the platform cannot sign for" },
  owner_unknown: { source: "chain", means: "the certificate is in a wallet no account has" },
};

export type ArtworkMove =
  | "list"
  | "delist"
  | "buy"
  | "offer"
  | "accept_offer"
  | "fill"
  | "fractionalize"
  | "buy_shares"
  | "withdraw"
  | "dispute"
  | "refund"
  | "remove"
  | "edit"
  | "ask";

/**
 * Who may make a move: the certificate's holder (any wallet of the holder's account), or an admin
 * too; anyone but the listing's seller or the certificate's holder (no self-dealing, by account);
 * an admin; anyone the move's own module lets (the buyer of a disputed sale, the seller of an offer).
 */
export type Party = "holder" | "holder_or_admin" | "seller_or_admin" | "not_seller" | "not_holder" | "admin" | "anyone";

/**
 * How a state refuses a move: 409 invalid_state with the state as `reason` (the default), 409
 * conflict, or the artwork not there for it: 404 when the path names it, 400 on the body's
 * `artwork_id` when the body does (as an unknown id is).
 */
export type Refusal = "invalid_state" | "conflict" | "not_found" | "no_such_artwork";

export interface MoveRule {
  /** What the move does, and where (the guide's text). */
  does: string;
  /** The start of a refusal's detail: "The artwork cannot be listed". */
  refused: string;
  by: Party;
  /** Who may, in words, when the move's own module checks it (`anyone` here): the guide's text. */
  byModule?: string;
  /** A state that must hold (buying shares needs a share class); its absence refuses with `reason` and `missing`. */
  requires?: { state: ArtworkState; reason: string; missing: string };
  /** The states that refuse the move, and how. */
  refusedBy: Partial<Record<ArtworkState, Refusal>>;
  /**
   * The artwork's row lock: `exclusive` for moves that change what hangs off the artwork; `shared`
   * for moves that only need it to stand still (share purchases: many at once, none changes it).
   */
  lock: "exclusive" | "shared";
  /**
   * The states the move leaves the artwork in once it is allowed, a pending one first (a withdrawal
   * is `withdrawing`, then the certificate is in an `external_wallet`): until another move or the
   * chain ends them, they refuse what their rows say. The guide's text, and what the race tests check.
   */
  leaves: readonly ArtworkState[];
}

/**
 * What hangs off an artwork: while any of these stands (a sale or an order under way, a dispute or
 * its refund, shares, a withdrawal), its holder cannot list it, fractionalize it, withdraw it or
 * remove it; each of those rows adds its own.
 */
const HANGING: MoveRule["refusedBy"] = {
  selling: "invalid_state",
  order_fillable: "invalid_state",
  disputed: "invalid_state",
  refunding: "invalid_state",
  shares_issued: "invalid_state",
  withdrawing: "invalid_state",
};

/** What a move must not meet while a sale of the artwork is open: the listing moves share it. */
const LISTING_MOVE: MoveRule["refusedBy"] = {
  listing_closed: "invalid_state",
  selling: "invalid_state",
  token_moved: "invalid_state",
  removed: "invalid_state",
  disputed: "invalid_state",
  refunding: "invalid_state",
  shares_issued: "invalid_state",
  withdrawing: "invalid_state",
  // Not `order_fillable`: with a listing active, an order still fillable is its own (a declined card
  // sale's cancellation on its way), and a fill of it is this listing's sale, beating a card sale.
};

export const ARTWORK_MOVES: Readonly<Record<ArtworkMove, MoveRule>> = {
  list: {
    does: "list it for sale (POST /v1/marketplace/listings)",
    refused: "The artwork cannot be listed",
    by: "holder",
    refusedBy: { uncertified: "invalid_state", removed: "no_such_artwork", listed: "conflict", ...HANGING },
    lock: "exclusive",
    leaves: ["listed"],
  },
  delist: {
    does: "cancel its listing (DELETE /v1/marketplace/listings/:id); orders a wallet could fill are cancelled on-chain",
    refused: "The listing cannot be cancelled",
    by: "seller_or_admin",
    // A listing whose certificate already left the seller's wallet is sold (a fill) or being cancelled (a transfer): the chain decided.
    refusedBy: { listing_closed: "invalid_state", selling: "invalid_state", token_moved: "invalid_state" },
    lock: "exclusive",
    leaves: ["listing_closed", "order_fillable"],
  },
  buy: {
    does: "buy its listing by card (POST /v1/marketplace/listings/:id/purchase)",
    refused: "The listing cannot be bought",
    by: "not_seller",
    refusedBy: LISTING_MOVE,
    lock: "exclusive",
    leaves: ["selling", "listing_closed"],
  },
  offer: {
    does: "make an offer on its listing (POST /v1/marketplace/offers)",
    refused: "No offer can be made on the listing",
    by: "not_seller",
    refusedBy: LISTING_MOVE,
    lock: "exclusive",
    leaves: [],
  },
  accept_offer: {
    does: "accept an offer on its listing (POST /v1/marketplace/offers/:id/accept): a card sale starts",
    refused: "The offer cannot be accepted",
    by: "anyone",
    byModule: "the offer's seller",
    refusedBy: LISTING_MOVE,
    lock: "exclusive",
    leaves: ["selling", "listing_closed"],
  },
  fill: {
    does: "hand a wallet an order of its listing to fill on-chain (POST /v1/marketplace/listings/:id/onchain-purchase)",
    refused: "The listing cannot be bought on-chain",
    by: "not_seller",
    refusedBy: LISTING_MOVE,
    lock: "exclusive",
    leaves: [],
  },
  fractionalize: {
    does: "fractionalize it into shares (POST /v1/fractional/artworks)",
    refused: "The artwork cannot be fractionalized",
    by: "holder_or_admin",
    refusedBy: { uncertified: "invalid_state", removed: "no_such_artwork", listed: "invalid_state", ...HANGING, shares_issued: "conflict", owner_unknown: "invalid_state" },
    lock: "exclusive",
    leaves: ["shares_issued"],
  },
  buy_shares: {
    does: "buy some of its shares (POST /v1/fractional/:artwork_id/purchase)",
    refused: "The artwork's shares cannot be bought",
    by: "not_holder",
    requires: { state: "shares_issued", reason: "not_fractionalized", missing: "it is not fractionalized" },
    refusedBy: { removed: "invalid_state", withdrawing: "invalid_state", owner_unknown: "invalid_state" },
    lock: "shared",
    leaves: [],
  },
  withdraw: {
    does: "withdraw its certificate to a linked wallet (POST /v1/withdrawals)",
    refused: "The certificate cannot be withdrawn",
    by: "holder",
    // Not `removed`: a removed artwork's certificate stays its holder's to take.
    refusedBy: { uncertified: "invalid_state", listed: "invalid_state", ...HANGING, external_wallet: "invalid_state" },
    lock: "exclusive",
    leaves: ["withdrawing", "external_wallet"],
  },
  dispute: {
    does: "open a dispute on its last sale (POST /v1/marketplace/transactions/:id/disputes)",
    refused: "The sale cannot be disputed",
    by: "anyone",
    byModule: "the sale's buyer",
    refusedBy: { listed: "invalid_state", selling: "invalid_state", order_fillable: "invalid_state", disputed: "conflict", refunding: "invalid_state" },
    lock: "exclusive",
    leaves: ["disputed"],
  },
  refund: {
    does: "refund a disputed sale, the certificate going back to its seller (POST /v1/admin/disputes/:id/resolve)",
    refused: "The certificate cannot go back to the seller",
    by: "admin",
    refusedBy: {
      listed: "invalid_state",
      selling: "invalid_state",
      order_fillable: "invalid_state",
      refunding: "invalid_state",
      shares_issued: "invalid_state",
      withdrawing: "invalid_state",
      resold: "invalid_state",
      external_wallet: "invalid_state",
    },
    lock: "exclusive",
    leaves: ["refunding"],
  },
  remove: {
    does: "remove it from the catalogue (DELETE /v1/artworks/:id); its certificate stays withdrawable",
    refused: "The artwork cannot be removed from the catalogue",
    by: "holder_or_admin",
    refusedBy: { removed: "not_found", listed: "invalid_state", ...HANGING },
    lock: "exclusive",
    leaves: ["removed"],
  },
  edit: {
    does: "change its description (PATCH /v1/artworks/:id)",
    refused: "The artwork cannot be changed",
    by: "holder_or_admin",
    refusedBy: { removed: "not_found" },
    lock: "exclusive",
    leaves: [],
  },
  ask: {
    does: "set its asking price or for_sale (PATCH /v1/artworks/:id with price_usd or for_sale): the holder's ask, which a move of the certificate ends",
    refused: "The artwork's price and for_sale cannot be changed",
    by: "holder_or_admin",
    // A listing is the ask while it stands (its price is the artwork's); shares are sold instead of the work.
    refusedBy: { removed: "not_found", listed: "invalid_state", selling: "invalid_state", shares_issued: "invalid_state" },
    lock: "exclusive",
    leaves: [],
  },
};

/**
 * What the chain does on its own, which no rule can refuse: a wallet's fill or transfer is written
 * under the artwork's lock all the same; the end of a pending state needs no lock (the chain shows
 * it by then, and a move reads the holder after the states). The guide lists them below the matrix.
 */
export const CHAIN_FACTS: readonly { fact: string; effect: string }[] = [
  { fact: "a wallet's fill of an order mined", effect: "the listing is sold to that wallet (a card sale under way loses and is refunded); order_fillable ends" },
  { fact: "a wallet's transfer of the certificate mined", effect: "the holder changes; a listing of the old holder is cancelled (token_moved until then)" },
  { fact: "a card sale's transfer mined", effect: "selling ends: the listing is sold" },
  { fact: "a withdrawal's transfer mined", effect: "withdrawing ends: the linked wallet holds it (external_wallet)" },
  { fact: "a refund's return mined", effect: "refunding ends: the seller holds it again" },
  { fact: "an order's cancellation mined, or its time up", effect: "order_fillable ends" },
  { fact: "any move of the certificate out of a wallet mined (a sale, a fill, a transfer, a withdrawal, a return)", effect: "that wallet's ask ends: `for_sale` false, `price_usd` null" },
];

/** A state as its source reports it, with a clause naming the thing (`it is listed for sale (lst_…)`). */
export interface StateFact {
  state: ArtworkState;
  detail: string;
}

/** What a move is judged on, besides the artwork's states: who makes it, whether they hold the certificate, what the listing says. */
export interface MoveParties {
  actor: { role: "admin" | "artist" | "collector" } | null;
  /** The actor's account holds the certificate (any of its wallets). */
  actorHolds: boolean;
  /** The actor's account is the listing's seller (the move names a listing). */
  actorSells: boolean;
}

export interface Refused {
  status: 400 | 403 | 404 | 409;
  code: "validation_failed" | "forbidden" | "not_found" | "invalid_state" | "conflict";
  /** The problem's `reason`: the state, or the party rule (own_listing, own_artwork). */
  reason: string | null;
  detail: string;
  /** A pending state: it ends by itself, so the move may succeed if retried (Retry-After). */
  pending: boolean;
}

/**
 * Whether `move` may happen now: null when it may, else the refusal. An artwork that is not there
 * for the move first (404, or 400 for the body's artwork_id), then the party rule (who may make it),
 * then what it requires, then the first state that refuses it, in the order of ARTWORK_STATES.
 */
export function decideMove(move: ArtworkMove, facts: readonly StateFact[], parties: MoveParties): Refused | null {
  const rule = ARTWORK_MOVES[move];
  const present = STATE_ORDER.flatMap((state) => facts.filter((f) => f.state === state));
  const refusing = present.filter((f) => rule.refusedBy[f.state] !== undefined);
  if (refusing.some((f) => rule.refusedBy[f.state] === "not_found")) return { status: 404, code: "not_found", reason: null, detail: "Artwork not found", pending: false };
  const gone = refusing.find((f) => rule.refusedBy[f.state] === "no_such_artwork");
  if (gone) return { status: 400, code: "validation_failed", reason: null, detail: `no such artwork (${gone.detail})`, pending: false };
  const party = refusedParty(rule, parties);
  if (party) return party;
  if (rule.requires && !present.some((f) => f.state === rule.requires!.state)) {
    return { status: 409, code: "invalid_state", reason: rule.requires.reason, detail: `${rule.refused}: ${rule.requires.missing}`, pending: false };
  }
  const first = refusing[0];
  if (!first) return null;
  const detail = `${rule.refused}: ${first.detail}`;
  const pending = ARTWORK_STATES[first.state].pending === true;
  return rule.refusedBy[first.state] === "conflict"
    ? { status: 409, code: "conflict", reason: null, detail, pending }
    : { status: 409, code: "invalid_state", reason: first.state, detail, pending };
}

const STATE_ORDER = Object.keys(ARTWORK_STATES) as ArtworkState[];

function refusedParty(rule: MoveRule, p: MoveParties): Refused | null {
  const admin = p.actor?.role === "admin";
  const forbidden = (detail: string): Refused => ({ status: 403, code: "forbidden", reason: null, detail, pending: false });
  switch (rule.by) {
    case "holder":
      return p.actorHolds ? null : forbidden(`${rule.refused}: only the holder of its certificate may; your wallets do not hold it`);
    case "holder_or_admin":
      return p.actorHolds || admin ? null : forbidden(`${rule.refused}: only the holder of its certificate or an admin may; your wallets do not hold it`);
    case "seller_or_admin":
      return p.actorSells || admin ? null : forbidden(`${rule.refused}: only its seller or an admin may`);
    case "admin":
      return admin ? null : forbidden(`${rule.refused}: only an admin may`);
    case "not_seller":
      return p.actorSells ? { status: 409, code: "invalid_state", reason: "own_listing", detail: `${rule.refused}: it is your own listing (one of your wallets sells it)`, pending: false } : null;
    case "not_holder":
      return p.actorHolds ? { status: 409, code: "invalid_state", reason: "own_artwork", detail: `${rule.refused}: you hold this artwork's certificate`, pending: false } : null;
    case "anyone":
      return null;
  }
}
