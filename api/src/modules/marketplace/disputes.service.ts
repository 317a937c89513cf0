import { type Kysely, sql } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import type { Transact } from "../../db/transact.ts";
import { enqueue, type Task } from "../../jobs/queue.ts";
import { ApiError } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { type Page, paginate, paginated } from "../../lib/pagination.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import type { Actor } from "../../lib/actor.ts";
import type { LedgerService } from "../ledger/ledger.service.ts";
import type { PaymentsService } from "../payments/payments.service.ts";
import { childTransactions, refundTransactions } from "../payments/transactions.ts";
import type { UsersService } from "../users/users.service.ts";
import type { Dispute } from "./marketplace.tables.ts";
import * as sales from "./sales.repository.ts";
import type { SalesService } from "./sales.service.ts";

/** The job that refunds a dispute resolved with `refund` (payload `{ dispute_id }`). */
export const DISPUTE_REFUND_TASK = "marketplace_dispute_refund";

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
      payments: PaymentsService;
      users: UsersService;
      sales: SalesService;
      ledger: LedgerService;
    },
  ) {}

  async open(actor: Actor, transactionId: string, input: { reason: string }, transact: Transact) {
    const { ledger } = this.deps;
    const seen = isId("transaction", transactionId) ? await sales.find(this.deps.db, transactionId) : undefined;
    // A transaction you are not a party of is not yours to know about (admins read every one); a royalty payout is no sale.
    if (!seen || (actor.role !== "admin" && seen.buyer_id !== actor.userId && seen.seller_id !== actor.userId)) throw ApiError.notFound("Transaction");
    if (seen.buyer_id !== actor.userId) throw ApiError.forbidden("Only the buyer may dispute a sale");
    return transact(async (trx) => {
      const sale = (await sales.lock(trx, transactionId))!;
      if (sale.status !== "completed") throw ApiError.conflict("invalid_state", `The sale is ${sale.status}: only a completed sale can be disputed`);
      const deadline = sale.completed_at!.getTime() + DISPUTE_WINDOW_DAYS * 86_400_000;
      if (Date.now() > deadline) throw ApiError.conflict("invalid_state", `Disputes are accepted for ${DISPUTE_WINDOW_DAYS} days after completion (until ${iso(deadline)})`);
      const dispute = await trx
        .insertInto("disputes")
        .values({ id: newId("dispute"), transaction_id: sale.id, buyer_id: sale.buyer_id, seller_id: sale.seller_id, reason: input.reason, status: "open" })
        .onConflict((oc) => oc.column("transaction_id").where("status", "=", "open").doNothing())
        .returningAll()
        .executeTakeFirst();
      if (!dispute) throw ApiError.conflict("conflict", "The sale already has an open dispute");
      await ledger.append(trx, { kind: "dispute.opened", subjectId: dispute.id, actorId: actor.userId, parties: [sale.buyer_id, sale.seller_id], data: { transaction_id: sale.id, reason: input.reason } });
      return toDispute(dispute);
    });
  }

  /** A dispute for its buyer, its seller or an admin; anyone else 404. */
  async get(actor: Actor, id: string) {
    const d = isId("dispute", id) ? await this.find(this.deps.db, id) : undefined;
    if (!d || (actor.role !== "admin" && d.buyer_id !== actor.userId && d.seller_id !== actor.userId)) throw ApiError.notFound("Dispute");
    return toDispute(d);
  }

  /** Every dispute (admins), newest first. */
  async list(query: { status?: "open" | "resolved" | undefined }, page: Page) {
    let q = this.deps.db.selectFrom("disputes");
    if (query.status) q = q.where("status", "=", query.status);
    const { rows, total } = await paginate(q, page, (x) => x.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"));
    return paginated(rows.map(toDispute), page, total);
  }

  /** Open disputes (the admin report's count). */
  async countOpen(): Promise<number> {
    const row = await this.deps.db.selectFrom("disputes").select(sql<string>`count(*)`.as("n")).where("status", "=", "open").executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async resolve(admin: Actor, id: string, input: { resolution: "refund" | "reject"; note?: string | undefined }, transact: Transact) {
    const { ledger } = this.deps;
    if (!isId("dispute", id)) throw ApiError.notFound("Dispute");
    return transact(async (trx) => {
      const dispute = await trx.selectFrom("disputes").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
      if (!dispute) throw ApiError.notFound("Dispute");
      if (dispute.status !== "open") throw ApiError.conflict("invalid_state", `The dispute is ${dispute.status} already`);
      const resolved = await trx
        .updateTable("disputes")
        .set({
          status: "resolved",
          resolution: input.resolution,
          resolution_note: input.note ?? null,
          resolved_by: admin.userId,
          resolved_at: sql<Date>`now()`,
          refund_status: input.resolution === "refund" ? "pending" : null,
          updated_at: sql<Date>`now()`,
        })
        .where("id", "=", id)
        .returningAll()
        .executeTakeFirstOrThrow();
      if (input.resolution === "refund") await enqueue(trx, DISPUTE_REFUND_TASK, { dispute_id: id }, { jobKey: `dispute_refund:${id}`, maxAttempts: 25 });
      await ledger.append(trx, {
        kind: "dispute.resolved",
        subjectId: id,
        actorId: admin.userId,
        parties: [dispute.buyer_id, dispute.seller_id],
        data: { transaction_id: dispute.transaction_id, resolution: input.resolution, note: input.note ?? null },
      });
      return toDispute(resolved);
    });
  }

  readonly refundTask: Task = async (payload) => {
    const disputeId = (payload as { dispute_id?: unknown }).dispute_id;
    if (typeof disputeId !== "string") throw new Error(`${DISPUTE_REFUND_TASK}: payload without dispute_id`);
    await this.refund(disputeId);
  };

  /**
   * Refunds a dispute resolved with `refund` (the refund key is the dispute's: one refund, also
   * across retries), then, in one transaction: the sale and its transactions `refunded`, the ledger
   * entry, and the certificate's return when the buyer's wallet is custodial and still holds it.
   */
  async refund(disputeId: string): Promise<void> {
    const { db, payments, users, ledger } = this.deps;
    const dispute = await this.find(db, disputeId);
    if (!dispute || dispute.refund_status !== "pending") return;
    const sale = (await sales.find(db, dispute.transaction_id))!;
    const refund = await payments.refund({ chargeId: sale.charge_id!, idempotencyKey: `refund:dispute:${dispute.id}` });
    const buyer = await users.get(sale.buyer_id);
    await db.transaction().execute(async (trx) => {
      const moved = await trx
        .updateTable("disputes")
        .set({ refund_status: "refunded", refund_id: refund.id, certificate_return: buyer.wallet_kind === "custodial" ? "pending" : "not_possible", updated_at: sql<Date>`now()` })
        .where("id", "=", dispute.id)
        .where("refund_status", "=", "pending")
        .returningAll()
        .executeTakeFirst();
      if (!moved) return;
      await sales.move(trx, sale.id, ["completed"], "refunded");
      await refundTransactions(trx, [sale.id, ...(await childTransactions(trx, sale.id)).map((t) => t.id)]);
      if (buyer.wallet_kind === "custodial") await this.deps.sales.requestReturn(trx, dispute.id, sale, buyer);
      await ledger.append(trx, {
        kind: "payment.refunded",
        subjectId: sale.id,
        actorId: dispute.resolved_by,
        parties: [sale.buyer_id, sale.seller_id],
        data: { transaction_id: sale.id, dispute_id: dispute.id, charge_id: sale.charge_id, refund_id: refund.id, amount_cents: refund.amountCents.toString(), reason: "dispute" },
      });
    });
  }

  private find(db: Db, id: string): Promise<Dispute | undefined> {
    return db.selectFrom("disputes").selectAll().where("id", "=", id).executeTakeFirst();
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
    created_at: iso(d.created_at),
    resolved_at: isoOrNull(d.resolved_at),
  };
}
