/**
 * The model behind test/api/ownership-model.test.ts: who owns each artwork and what every move
 * should answer, as docs/ownership-and-money.md says. Pure: users are indices into the run's users,
 * ids are the real ones the commands learned from the API.
 */

export type LockReason = "disputed" | "shares_issued" | "listed";
export type LockedMove = "list" | "fractionalize" | "remove" | "dispute";

/** Which locks refuse which move (the table of docs/ownership-and-money.md). */
const REFUSED_BY: Record<LockedMove, readonly LockReason[]> = {
  list: ["disputed", "shares_issued"],
  fractionalize: ["disputed", "listed"],
  remove: ["disputed", "shares_issued", "listed"],
  dispute: ["listed"],
};

export interface UserState {
  role: "artist" | "collector";
  /** `external`: signed in with their own wallet (SIWE), which the platform cannot sign for. */
  wallet: "custodial" | "external";
}

export interface ListingState {
  id: string;
  seller: number;
  priceCents: bigint;
  acceptsOffers: boolean;
}

export interface SharesState {
  total: number;
  priceCents: bigint;
  sold: number;
}

export interface ArtworkState {
  id: string;
  tokenId: bigint;
  artist: number;
  /** The user whose wallet holds the certificate. */
  owner: number;
  royaltyBps: number;
  deleted: boolean;
  listing: ListingState | null;
  shares: SharesState | null;
  /** Indices into `sales`, oldest first. */
  sales: number[];
}

export interface OfferState {
  id: string;
  art: number;
  listingId: string;
  buyer: number;
  amountCents: bigint;
  status: "pending" | "rejected" | "completed";
}

export interface SaleState {
  id: string;
  art: number;
  buyer: number;
  seller: number;
  priceCents: bigint;
  feeCents: bigint;
  royaltyCents: bigint;
  status: "completed" | "refunded";
  /** Refunded without the return (an admin's `force`), with the admin's note. */
  forcedNote: string | null;
}

export interface DisputeState {
  id: string;
  sale: number;
  status: "open" | "resolved";
}

export interface PurchaseState {
  txId: string;
  art: number;
  buyer: number;
  /** Whom the proceeds go to: the certificate's holder when the shares were bought. */
  payee: number;
  totalCents: bigint;
  feeCents: bigint;
}

export interface OwnershipModel {
  users: UserState[];
  artworks: ArtworkState[];
  offers: OfferState[];
  sales: SaleState[];
  disputes: DisputeState[];
  purchases: PurchaseState[];
  posts: { id: string; author: number }[];
  /** Points each user spent on redemptions. */
  redeemed: number[];
}

/** An admin acting (not one of the run's users). */
export const ADMIN = "admin" as const;
export type Actor = number | typeof ADMIN;

/** What the API should answer: one of `ok` statuses, or any one of `refused` (several locks may hold at once). */
export type Expected = { ok: readonly number[] } | { refused: readonly Refusal[] };
export interface Refusal {
  status: number;
  code: string;
  /** The problem's `reason`; undefined when the guide names none. */
  reason?: string;
}

const ok = (...statuses: number[]): Expected => ({ ok: statuses });
const refused = (...refusals: Refusal[]): Expected => ({ refused: refusals });
const invalidState = (reasons: readonly string[]): Expected => refused(...reasons.map((reason) => ({ status: 409, code: "invalid_state", reason })));
const FORBIDDEN: Refusal = { status: 403, code: "forbidden" };
const VALIDATION: Refusal = { status: 400, code: "validation_failed" };
const NOT_FOUND: Refusal = { status: 404, code: "not_found" };

// ---- money ----

const PLATFORM_FEE_BPS = 250n;

/** payments.platformFeeCents: amount × PLATFORM_FEE_BPS / 10,000, rounded half up. */
export const platformFeeCents = (amountCents: bigint): bigint => (amountCents * PLATFORM_FEE_BPS + 5_000n) / 10_000n;

/** ERC-2981 on a secondary sale (the artist sells: none), rounded down as OpenZeppelin's royaltyInfo. */
export const royaltyCents = (art: ArtworkState, seller: number, priceCents: bigint): bigint =>
  seller === art.artist ? 0n : (priceCents * BigInt(art.royaltyBps)) / 10_000n;

/** The card processor's USD limits, which what the platform sells stays within. */
export const withinChargeLimits = (cents: bigint): boolean => cents >= 50n && cents <= 99_999_999n;

// ---- points (docs/rewards.md) ----

/**
 * A user's points as the rules give them for what stands now: 50 per artwork they certified, 1 per
 * USD of each sale they bought or sold that was not refunded, 1 per USD of shares bought, 10 per
 * post still there; less what they redeemed.
 */
export function expectedPoints(m: OwnershipModel, user: number): number {
  const usd = (cents: bigint) => Number(cents / 100n);
  const certified = m.artworks.filter((a) => a.artist === user).length * 50;
  const sales = m.sales.filter((s) => s.status === "completed").reduce((n, s) => n + (s.buyer === user ? usd(s.priceCents) : 0) + (s.seller === user ? usd(s.priceCents) : 0), 0);
  const shares = m.purchases.filter((p) => p.buyer === user).reduce((n, p) => n + usd(p.totalCents), 0);
  const posts = m.posts.filter((p) => p.author === user).length * 10;
  return certified + sales + shares + posts - m.redeemed[user]!;
}

// ---- reads of the model ----

export const isOwner = (art: ArtworkState, actor: Actor): boolean => actor === ADMIN || actor === art.owner;

export function lastSale(m: OwnershipModel, art: ArtworkState): SaleState | undefined {
  const last = art.sales.at(-1);
  return last === undefined ? undefined : m.sales[last];
}

export const openDisputeOf = (m: OwnershipModel, sale: number): DisputeState | undefined => m.disputes.find((d) => d.sale === sale && d.status === "open");

/** What hangs off the artwork now. */
export function locksOf(m: OwnershipModel, art: ArtworkState): LockReason[] {
  const locks: LockReason[] = [];
  const last = art.sales.at(-1);
  if (last !== undefined && openDisputeOf(m, last)) locks.push("disputed");
  if (art.shares) locks.push("shares_issued");
  if (art.listing) locks.push("listed");
  return locks;
}

const lockRefusals = (m: OwnershipModel, art: ArtworkState, move: LockedMove) => locksOf(m, art).filter((r) => REFUSED_BY[move].includes(r));

// ---- predictions ----

export function predictListing(m: OwnershipModel, actor: number, art: ArtworkState, priceCents: bigint): Expected {
  if (!withinChargeLimits(priceCents)) return refused(VALIDATION);
  // A removed artwork is out of the catalogue: no such artwork to list (its certificate stays withdrawable).
  if (art.deleted) return refused(VALIDATION);
  if (!isOwner(art, actor)) return refused(FORBIDDEN);
  const answers: Refusal[] = lockRefusals(m, art, "list").map((reason) => ({ status: 409, code: "invalid_state", reason }));
  // One open listing per artwork.
  if (art.listing) answers.push({ status: 409, code: "conflict" });
  return answers.length > 0 ? refused(...answers) : ok(201);
}

export function predictPurchase(listing: ListingState, buyer: number): Expected {
  return buyer === listing.seller ? refused({ status: 409, code: "invalid_state" }) : ok(201, 202);
}

export function predictOffer(m: OwnershipModel, listing: ListingState, buyer: number, amountCents: bigint): Expected {
  if (!withinChargeLimits(amountCents)) return refused(VALIDATION);
  if (buyer === listing.seller || !listing.acceptsOffers) return refused({ status: 409, code: "invalid_state" });
  if (m.offers.some((o) => o.listingId === listing.id && o.buyer === buyer && o.status === "pending")) return refused({ status: 409, code: "conflict" });
  return ok(201);
}

export function predictFractionalize(m: OwnershipModel, actor: Actor, art: ArtworkState): Expected {
  if (art.deleted) return refused(VALIDATION);
  if (!isOwner(art, actor)) return refused(FORBIDDEN);
  const answers: Refusal[] = lockRefusals(m, art, "fractionalize").map((reason) => ({ status: 409, code: "invalid_state", reason }));
  if (art.shares) answers.push({ status: 409, code: "conflict" });
  return answers.length > 0 ? refused(...answers) : ok(201, 202);
}

export function predictSharePurchase(art: ArtworkState, shares: SharesState, buyer: number, quantity: number): Expected {
  if (!withinChargeLimits(shares.priceCents * BigInt(quantity))) return refused(VALIDATION);
  const answers: Refusal[] = [];
  if (buyer === art.owner) answers.push({ status: 409, code: "invalid_state", reason: "own_artwork" });
  if (shares.sold + quantity > shares.total) answers.push({ status: 409, code: "insufficient_shares" });
  return answers.length > 0 ? refused(...answers) : ok(201, 202);
}

export function predictPatch(art: ArtworkState, actor: Actor): Expected {
  if (art.deleted) return refused(NOT_FOUND);
  return isOwner(art, actor) ? ok(200) : refused(FORBIDDEN);
}

export function predictRemoval(m: OwnershipModel, art: ArtworkState, actor: Actor): Expected {
  if (art.deleted) return refused(NOT_FOUND);
  if (!isOwner(art, actor)) return refused(FORBIDDEN);
  const locks = lockRefusals(m, art, "remove");
  return locks.length > 0 ? invalidState(locks) : ok(200);
}

/** The buyer opens a dispute on a sale (the seller 403, anyone else 404). */
export function predictDispute(m: OwnershipModel, saleIndex: number, actor: number): Expected {
  const sale = m.sales[saleIndex]!;
  if (actor === sale.seller) return refused(FORBIDDEN);
  if (actor !== sale.buyer) return refused(NOT_FOUND);
  const art = m.artworks[sale.art]!;
  // Only a completed sale is disputed (the guide names no reason for the others).
  if (sale.status !== "completed") return refused({ status: 409, code: "invalid_state" });
  // A listing locks the dispute of the sale it came from: the artwork's last one.
  if (art.sales.at(-1) === saleIndex && lockRefusals(m, art, "dispute").length > 0) return invalidState(["listed"]);
  if (openDisputeOf(m, saleIndex)) return refused({ status: 409, code: "conflict" });
  return ok(201);
}

/**
 * Why a refund cannot give the seller their artwork back (empty: it can). A listing refuses the
 * return too: the dispute of an older sale does not lock listing, so a buyer who holds the artwork
 * again (a later sale, then a transfer back) may have listed it.
 */
export function refundRefusals(m: OwnershipModel, sale: SaleState): ("shares_issued" | "listed" | "resold" | "external_wallet")[] {
  const art = m.artworks[sale.art]!;
  const reasons: ("shares_issued" | "listed" | "resold" | "external_wallet")[] = [];
  if (art.shares) reasons.push("shares_issued");
  if (art.listing) reasons.push("listed");
  if (art.owner !== sale.buyer) reasons.push("resold");
  if (m.users[sale.buyer]!.wallet === "external") reasons.push("external_wallet");
  return reasons;
}

export function predictRefund(m: OwnershipModel, sale: SaleState): Expected {
  const reasons = refundRefusals(m, sale);
  return reasons.length > 0 ? invalidState(reasons) : ok(200);
}

// ---- changes ----

/** A sale completed: the buyer holds the certificate, the listing is sold and its other pending offers rejected. */
export function applySale(m: OwnershipModel, artIndex: number, input: { id: string; buyer: number; priceCents: bigint; offerId?: string }): SaleState {
  const art = m.artworks[artIndex]!;
  const listing = art.listing!;
  const sale: SaleState = {
    id: input.id,
    art: artIndex,
    buyer: input.buyer,
    seller: listing.seller,
    priceCents: input.priceCents,
    feeCents: platformFeeCents(input.priceCents),
    royaltyCents: royaltyCents(art, listing.seller, input.priceCents),
    status: "completed",
    forcedNote: null,
  };
  m.sales.push(sale);
  art.sales.push(m.sales.length - 1);
  for (const o of m.offers) if (o.listingId === listing.id && o.status === "pending") o.status = o.id === input.offerId ? "completed" : "rejected";
  art.listing = null;
  art.owner = input.buyer;
  return sale;
}

/** The listing ended without a sale (cancelled by its seller, or by the sweep after the token moved): its pending offers are rejected. */
export function endListing(m: OwnershipModel, art: ArtworkState): void {
  if (!art.listing) return;
  for (const o of m.offers) if (o.listingId === art.listing.id && o.status === "pending") o.status = "rejected";
  art.listing = null;
}

/** The certificate moved on-chain outside the platform; the sweep cancels its listing. */
export function applyTransfer(m: OwnershipModel, art: ArtworkState, to: number): void {
  art.owner = to;
  endListing(m, art);
}

/** A refund: the sale and its royalty refunded; the certificate back with the seller unless forced. */
export function applyRefund(m: OwnershipModel, dispute: DisputeState, forcedNote: string | null): void {
  const sale = m.sales[dispute.sale]!;
  dispute.status = "resolved";
  sale.status = "refunded";
  sale.forcedNote = forcedNote;
  if (forcedNote === null) m.artworks[sale.art]!.owner = sale.seller;
}

/** Cents, for the model's totals: what the run's charges should add up to, net of refunds. */
export function expectedNetCents(m: OwnershipModel): bigint {
  const sales = m.sales.filter((s) => s.status === "completed").reduce((sum, s) => sum + s.priceCents, 0n);
  return sales + m.purchases.reduce((sum, p) => sum + p.totalCents, 0n);
}
