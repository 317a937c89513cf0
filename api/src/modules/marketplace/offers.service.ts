import type { Kysely } from "kysely";
import type { Database } from "../../db/database.ts";
import type { Transact } from "../../db/transact.ts";
import { enqueue, removeJobs, type Task } from "../../jobs/queue.ts";
import { ApiError } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { centsToUsd, usdToCents } from "../../lib/money.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import type { Actor } from "../../lib/actor.ts";
import type { LedgerService } from "../ledger/ledger.service.ts";
import type { PaymentsService } from "../payments/payments.service.ts";
import type { UsersService } from "../users/users.service.ts";
import * as listings from "./marketplace.repository.ts";
import { decideListingMove } from "./listing-moves.ts";
import type { Offer } from "./marketplace.tables.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import * as repo from "./offers.repository.ts";
import type { OfferCreate, OffersQuery } from "./offers.schemas.ts";
import { offerLedgerEntry, recordOfferEvent } from "./sale-records.ts";
import type { SalesService } from "./sales.service.ts";

/** The job that expires one offer at its `expires_at` (payload `{ offer_id }`, job key `offer_expire:<id>`). */
export const OFFER_EXPIRE_TASK = "marketplace_offer_expire";

/**
 * Offers (docs/decisions.md#states): a buyer offers on a listing that accepts offers, with the
 * payment method charged if the seller accepts. Each move locks the listing, then the offer (one
 * order everywhere, so concurrent moves serialize instead of deadlocking), checks the state and
 * either changes it or refuses with 409 `invalid_state` having changed nothing. Every move is an
 * audit-ledger entry; the webhook events go to the buyer and the seller only.
 */
export class OffersService {
  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      users: UsersService;
      payments: PaymentsService;
      sales: SalesService;
      ownership: OwnershipService;
      ledger: LedgerService;
    },
  ) {}

  async create(actor: Actor, input: OfferCreate, transact: Transact) {
    const { users, payments, ledger } = this.deps;
    const buyer = await users.get(actor.userId);
    // Checked now (404 for a method that is not the caller's); charged only if the seller accepts.
    const method = await payments.resolvePaymentMethod(buyer.id, input.payment_method_id);
    const noSuchListing = ApiError.validation([{ field: "listing_id", code: "not_found", message: "no such listing" }]);
    if (!isId("listing", input.listing_id)) throw noSuchListing;
    return transact(async (trx) => {
      const listing = await decideListingMove(this.deps.ownership, trx, input.listing_id, "offer", actor);
      if (!listing) throw noSuchListing;
      if (!listing.accepts_offers) throw ApiError.conflict("invalid_state", "The listing does not accept offers: buy it at its price instead");
      const offer = await repo.insertUnlessPending(trx, {
        id: newId("offer"),
        listing_id: listing.id,
        buyer_id: buyer.id,
        seller_id: listing.seller_id,
        amount_cents: usdToCents(input.offer_amount_usd),
        message: input.message ?? null,
        payment_method_id: method.id,
        status: "pending",
        expires_at: new Date(Date.now() + input.expires_in_hours * 3_600_000),
      });
      if (!offer) throw ApiError.conflict("conflict", "You already have a pending offer on this listing; withdraw it first");
      await enqueue(trx, OFFER_EXPIRE_TASK, { offer_id: offer.id }, { jobKey: expireJobKey(offer.id), runAt: offer.expires_at, maxAttempts: 25 });
      await recordOfferEvent(trx, "offer.created", { ...offer, decided_at: offer.created_at });
      await ledger.append(trx, offerLedgerEntry("offer.created", offer, buyer.id, { expires_at: iso(offer.expires_at), payment_method_id: method.id }));
      return toOffer(offer);
    });
  }

  async list(actor: Actor, query: Omit<OffersQuery, "page" | "limit">, page: Page) {
    const { rows, total } = await repo.listOf(this.deps.db, actor.userId, { role: query.role, status: query.status, listingId: query.listing_id }, page);
    return paginated(rows.map(toOffer), page, total);
  }

  /** An offer for its buyer, its seller or an admin; anyone else 404 (offers are private). */
  async get(actor: Actor, id: string) {
    const offer = isId("offer", id) ? await repo.find(this.deps.db, id) : undefined;
    return toOffer(this.visible(actor, offer));
  }

  /**
   * The seller accepts: the offer becomes `accepted`, the listing `pending_payment`, and the sale
   * starts (the buyer's method is charged by the sale's job, then the certificate moves on-chain).
   * Refused (409 invalid_state) when the offer is not pending or has expired, or the listing is not
   * active (sold, cancelled, or another sale under way).
   */
  async accept(actor: Actor, id: string, transact: Transact) {
    const { db, users, sales, ledger } = this.deps;
    // Reads outside the transaction come first: a transaction never waits for a second connection.
    const seen = isId("offer", id) ? await repo.find(db, id) : undefined;
    const buyer = seen ? await users.get(seen.buyer_id) : undefined;
    return this.decide(actor, id, "seller", transact, { move: "accept_offer" }, async (trx, offer, listing) => {
      const sale = await sales.startSale(trx, { listing, buyer: buyer!, paymentMethodId: offer.payment_method_id, priceCents: offer.amount_cents, offerId: offer.id }, { chargeInRequest: false });
      const accepted = (await repo.move(trx, offer.id, "pending", "accepted", { decidedBy: actor.userId, transactionId: sale.id }))!;
      await removeJobs(trx, [expireJobKey(offer.id)]);
      await recordOfferEvent(trx, "offer.accepted", accepted);
      await ledger.append(trx, offerLedgerEntry("offer.accepted", accepted, actor.userId, { transaction_id: sale.id }));
      return accepted;
    });
  }

  async reject(actor: Actor, id: string, transact: Transact) {
    return this.decide(actor, id, "seller", transact, null, async (trx, offer) => {
      const rejected = (await repo.move(trx, offer.id, "pending", "rejected", { decidedBy: actor.userId }))!;
      await removeJobs(trx, [expireJobKey(offer.id)]);
      await recordOfferEvent(trx, "offer.rejected", rejected, { reason: "seller_rejected" });
      await this.deps.ledger.append(trx, offerLedgerEntry("offer.rejected", rejected, actor.userId, { reason: "seller_rejected" }));
      return rejected;
    });
  }

  async withdraw(actor: Actor, id: string, transact: Transact) {
    return this.decide(actor, id, "buyer", transact, null, async (trx, offer) => {
      const withdrawn = (await repo.move(trx, offer.id, "pending", "withdrawn", { decidedBy: actor.userId }))!;
      await removeJobs(trx, [expireJobKey(offer.id)]);
      await this.deps.ledger.append(trx, offerLedgerEntry("offer.withdrawn", withdrawn, actor.userId));
      return withdrawn;
    });
  }

  /**
   * One move of a pending offer by `party`: locks the listing then the offer, hides the offer from
   * non-parties (404), refuses the other party (403) and any offer that is not pending or has
   * expired (409), then runs `move`.
   */
  private async decide(
    actor: Actor,
    id: string,
    party: "buyer" | "seller",
    transact: Transact,
    artworkMove: { move: "accept_offer" } | null,
    move: (trx: Parameters<Parameters<Transact>[0]>[0], offer: Offer, listing: NonNullable<Awaited<ReturnType<typeof listings.lock>>>) => Promise<Offer>,
  ) {
    const { db } = this.deps;
    const seen = isId("offer", id) ? await repo.find(db, id) : undefined;
    const isParty = seen && (seen.buyer_id === actor.userId || seen.seller_id === actor.userId);
    if (!seen || (!isParty && actor.role !== "admin")) throw ApiError.notFound("Offer");
    const own = party === "seller" ? seen.seller_id : seen.buyer_id;
    if (own !== actor.userId) {
      throw ApiError.forbidden(party === "seller" ? "Only the seller may accept or reject an offer" : "Only the buyer may withdraw an offer");
    }
    const decided = await transact(async (trx) => {
      // Accepting starts a sale: a move on the artwork, decided under its lock before the listing's.
      const listing = artworkMove ? (await decideListingMove(this.deps.ownership, trx, seen.listing_id, artworkMove.move, actor))! : (await listings.lock(trx, seen.listing_id))!;
      const offer = (await repo.lock(trx, id))!;
      if (offer.status !== "pending") throw ApiError.conflict("invalid_state", `The offer is ${offer.status}: only a pending offer can be ${party === "seller" ? "accepted or rejected" : "withdrawn"}`);
      if (offer.expires_at.getTime() <= Date.now()) throw ApiError.conflict("invalid_state", `The offer expired at ${iso(offer.expires_at)}`);
      return toOffer(await move(trx, offer, listing));
    });
    return decided;
  }

  // ---- expiry ----

  readonly expireTask: Task = async (payload) => {
    const offerId = (payload as { offer_id?: unknown }).offer_id;
    if (typeof offerId !== "string") throw new Error(`${OFFER_EXPIRE_TASK}: payload without offer_id`);
    await this.expire(offerId);
  };

  /** Expires a pending offer whose time has come (earlier: the job runs again at `expires_at`). */
  async expire(offerId: string): Promise<boolean> {
    const { db, ledger } = this.deps;
    return db.transaction().execute(async (trx) => {
      const seen = await repo.find(trx, offerId);
      if (!seen || seen.status !== "pending") return false;
      await listings.lock(trx, seen.listing_id);
      const offer = (await repo.lock(trx, offerId))!;
      if (offer.status !== "pending") return false;
      if (offer.expires_at.getTime() > Date.now()) {
        await enqueue(trx, OFFER_EXPIRE_TASK, { offer_id: offer.id }, { jobKey: expireJobKey(offer.id), runAt: offer.expires_at, maxAttempts: 25 });
        return false;
      }
      const expired = (await repo.move(trx, offer.id, "pending", "expired"))!;
      await recordOfferEvent(trx, "offer.expired", expired);
      await ledger.append(trx, offerLedgerEntry("offer.expired", expired, null));
      return true;
    });
  }

  /** Expires overdue offers whose job was lost (the safety net behind the expiry jobs); how many. */
  async expireOverdue(): Promise<number> {
    let expired = 0;
    for (const { id } of await repo.overdue(this.deps.db, 200)) if (await this.expire(id)) expired++;
    return expired;
  }

  /** Rejects the pending offers of a listing being cancelled, in its transaction (events and ledger entries). */
  async rejectForCancelledListing(trx: Parameters<Parameters<Transact>[0]>[0], listingId: string, actorId: string | null): Promise<void> {
    const rejected = await repo.rejectPendingOf(trx, listingId, actorId);
    await removeJobs(trx, rejected.map((o) => expireJobKey(o.id)));
    for (const offer of rejected) await recordOfferEvent(trx, "offer.rejected", offer, { reason: "listing_cancelled" });
    for (const offer of rejected) await this.deps.ledger.append(trx, offerLedgerEntry("offer.rejected", offer, actorId, { reason: "listing_cancelled" }));
  }

  private visible(actor: Actor, offer: Offer | undefined): Offer {
    if (!offer || (actor.role !== "admin" && offer.buyer_id !== actor.userId && offer.seller_id !== actor.userId)) throw ApiError.notFound("Offer");
    return offer;
  }
}

function expireJobKey(offerId: string): string {
  return `offer_expire:${offerId}`;
}

export function toOffer(o: Offer) {
  return {
    offer_id: o.id,
    listing_id: o.listing_id,
    buyer_id: o.buyer_id,
    seller_id: o.seller_id,
    offer_amount_usd: centsToUsd(o.amount_cents),
    currency: "USD" as const,
    message: o.message,
    status: o.status,
    expires_at: iso(o.expires_at),
    created_at: iso(o.created_at),
    decided_at: isoOrNull(o.decided_at),
    transaction_id: o.transaction_id,
  };
}
