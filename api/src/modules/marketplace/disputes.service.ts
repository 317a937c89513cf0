import type { Kysely, Transaction } from "kysely";
import type { Database } from "../../db/database.ts";
import type { Transact } from "../../db/transact.ts";
import { ApiError } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import type { Actor } from "../../lib/actor.ts";
import type { LedgerService } from "../ledger/ledger.service.ts";
import type { Purchase, Purchases, Refund, RefundCause } from "../payments/purchases.service.ts";
import type { UsersService } from "../users/users.service.ts";
import * as disputes from "./disputes.repository.ts";
import type { Dispute } from "./marketplace.tables.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import * as sales from "./sales.repository.ts";
import type { SalesService } from "./sales.service.ts";


const FORCE_HINT = "; an admin may refund without the return with force: true and a note";

/** How long after completion a buyer may dispute a sale. */
export const DISPUTE_WINDOW_DAYS = 14;

/**
 * Disputes of completed sales: the buyer opens one within 14 days; an admin resolves it. `refund`
 * refunds the charge in a job (the processor is outside the database), then marks the sale and
 * its transactions `refunded` and, when the buyer's wallet is custodial, returns the certificate
 * to the seller on-chain through the same settlement path (`return:<dispute id>`).
 */
export class DisputesService {
  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      users: UsersService;
      ownership: OwnershipService;
      purchases: Purchases;
      sales: SalesService;
      ledger: LedgerService;
    },
  ) {}

  async open(actor: Actor, transactionId: string, input: { reason: string }, transact: Transact) {
    const { ledger, ownership } = this.deps;
    const seen = isId("transaction", transactionId) ? await sales.find(this.deps.db, transactionId) : undefined;
    // A transaction you are not a party of is not yours to know about (admins read every one); a royalty payout is no sale.
    if (!seen || (actor.role !== "admin" && seen.buyer_id !== actor.userId && seen.seller_id !== actor.userId)) throw ApiError.notFound("Transaction");
    if (seen.buyer_id !== actor.userId) throw ApiError.forbidden("Only the buyer may dispute a sale");
    return transact(async (trx) => {
      // The move `dispute` on the artwork's last sale, under the artwork's lock: never beside a listing
      // or a sale under way (its refund could not unwind a resale). An earlier sale's locks nothing.
      if ((await sales.lastSaleIdOf(trx, seen.artwork_id)) === seen.id) await ownership.decide(trx, seen.artwork_id, "dispute", actor);
      const sale = (await sales.lock(trx, transactionId))!;
      if (sale.status !== "completed") throw ApiError.conflict("invalid_state", `The sale is ${sale.status}: only a completed sale can be disputed`);
      const completedAt = (await this.deps.purchases.find(trx, sale.id))!.completed_at!;
      const deadline = completedAt.getTime() + DISPUTE_WINDOW_DAYS * 86_400_000;
      if (Date.now() > deadline) throw ApiError.conflict("invalid_state", `Disputes are accepted for ${DISPUTE_WINDOW_DAYS} days after completion (until ${iso(deadline)})`);
      const dispute = await disputes.insertUnlessOpen(trx, { id: newId("dispute"), transaction_id: sale.id, buyer_id: actor.userId, seller_id: sale.seller_id, reason: input.reason, status: "open" });
      if (!dispute) throw ApiError.conflict("conflict", "The sale already has an open dispute");
      await ledger.append(trx, { kind: "dispute.opened", subjectId: dispute.id, actorId: actor.userId, parties: [actor.userId, sale.seller_id], data: { transaction_id: sale.id, reason: input.reason } });
      return toDispute(dispute);
    });
  }

  /** A dispute for its buyer, its seller or an admin; anyone else 404. */
  async get(actor: Actor, id: string) {
    const d = isId("dispute", id) ? await disputes.find(this.deps.db, id) : undefined;
    if (!d || (actor.role !== "admin" && d.buyer_id !== actor.userId && d.seller_id !== actor.userId)) throw ApiError.notFound("Dispute");
    return toDispute(d);
  }

  /** Every dispute (admins), newest first. */
  async list(query: { status?: "open" | "resolved" | undefined }, page: Page) {
    const { rows, total } = await disputes.list(this.deps.db, query, page);
    return paginated(rows.map(toDispute), page, total);
  }

  /** Open disputes (the admin report's count). */
  async countOpen(): Promise<number> {
    return disputes.countOpen(this.deps.db);
  }

  /**
   * Resolves an open dispute (admins). A `refund` must unwind the sale: the certificate goes back
   * from the buyer's custodial wallet to the seller's. When it cannot (shares issued, resold, an
   * external wallet), the resolution is refused (409 invalid_state with the reason) unless `force`
   * says to refund without the return (the note then required, and recorded in the ledger).
   */
  async resolve(admin: Actor, id: string, input: { resolution: "refund" | "reject"; note?: string | undefined; force?: boolean | undefined }, transact: Transact) {
    const { db, ledger, ownership, purchases } = this.deps;
    if (!isId("dispute", id)) throw ApiError.notFound("Dispute");
    const force = input.force === true;
    if (force && input.resolution !== "refund") throw ApiError.validation([{ field: "force", code: "invalid_value", message: "force applies to a refund only" }]);
    if (force && !input.note) throw ApiError.validation([{ field: "note", code: "required", message: "a forced refund needs a note saying why" }]);
    const seen = await disputes.find(db, id);
    if (!seen) throw ApiError.notFound("Dispute");
    const sale = (await sales.find(db, seen.transaction_id))!;
    if (input.resolution === "refund" && sale.payment_method === "onchain") {
      throw ApiError.refused("paid_onchain", `The sale was paid on-chain by the wallet ${sale.buyer_wallet}: the platform holds no card charge to refund; the seller can send the payment token back, and the dispute can be resolved with reject`);
    }
    return transact(async (trx) => {
      // The move `refund`, under the artwork's lock: the certificate can go back only from the buyer's
      // custodial wallet, with nothing hanging off the artwork or on its way.
      if (input.resolution === "refund" && !force) await ownership.decide(trx, sale.artwork_id, "refund", admin, { sale }, { hint: FORCE_HINT });
      const dispute = await disputes.lock(trx, id);
      if (!dispute) throw ApiError.notFound("Dispute");
      if (dispute.status !== "open") throw ApiError.conflict("invalid_state", `The dispute is ${dispute.status} already`);
      const resolved = (await disputes.resolve(trx, id, {
        status: "resolved",
        resolution: input.resolution,
        resolution_note: input.note ?? null,
        resolved_by: admin.userId,
        refund_status: input.resolution === "refund" ? "pending" : null,
        refund_forced: force,
      }))!;
      const cause = { reason: "dispute", actorId: admin.userId, referenceId: id, note: input.note ?? null, forced: force };
      if (input.resolution === "refund" && !(await purchases.refund(trx, dispute.transaction_id, cause))) {
        throw ApiError.conflict("invalid_state", "The sale's payment is not one that can be refunded now (not completed, or being refunded already)");
      }
      await ledger.append(trx, {
        kind: "dispute.resolved",
        subjectId: id,
        actorId: admin.userId,
        parties: [dispute.buyer_id, dispute.seller_id],
        data: { transaction_id: dispute.transaction_id, resolution: input.resolution, note: input.note ?? null, ...(force ? { forced: true } : {}) },
      });
      return toDispute(resolved);
    });
  }

  /**
   * A sale's refund went through (its purchase's refund step, in that transaction): the sale is
   * `refunded`, the dispute records the refund, and unless an admin forced it the certificate goes
   * back from the buyer's custodial wallet to the seller's (checked at the resolution, under the
   * dispute's lock on the artwork).
   */
  async onRefunded(trx: Transaction<Database>, purchase: Purchase, refund: Refund, cause: RefundCause | null): Promise<void> {
    // The only refund of a completed sale is a dispute's; a failed settlement's refund changes nothing more here.
    if (cause?.reason !== "dispute" || !cause.referenceId) return;
    await this.deps.sales.markRefunded(trx, purchase.id, refund);
    const dispute = (await disputes.lock(trx, cause.referenceId))!;
    if (dispute.refund_status !== "pending") return;
    const sale = (await sales.find(trx, dispute.transaction_id))!;
    const buyer = await this.deps.users.findByWallet(trx, sale.buyer_wallet);
    const returning = !dispute.refund_forced && buyer?.id === sale.buyer_id && buyer.wallet_kind === "custodial";
    await disputes.update(trx, dispute.id, { refund_status: "refunded", refund_id: refund.id, certificate_return: dispute.refund_forced ? "waived" : returning ? "pending" : "not_possible" });
    if (returning) await this.deps.sales.requestReturn(trx, dispute.id, sale, buyer);
  }
}

export function toDispute(d: Dispute) {
  return {
    dispute_id: d.id,
    transaction_id: d.transaction_id,
    buyer_id: d.buyer_id,
    seller_id: d.seller_id,
    reason: d.reason,
    status: d.status,
    resolution: d.resolution,
    resolution_note: d.resolution_note,
    refund_status: d.refund_status,
    certificate_return: d.certificate_return,
    refund_forced: d.refund_forced,
    created_at: iso(d.created_at),
    resolved_at: isoOrNull(d.resolved_at),
  };
}
