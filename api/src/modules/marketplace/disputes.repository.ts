import { type Insertable, sql, type Transaction, type UpdateObject } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import { type Page, paginate } from "../../lib/pagination.ts";
import type { Dispute, DisputesTable } from "./marketplace.tables.ts";

/** Opens a dispute unless its sale has an open one (the partial unique index); undefined then. */
export function insertUnlessOpen(db: Db, dispute: Insertable<DisputesTable>): Promise<Dispute | undefined> {
  return (
    db
      .insertInto("disputes")
      .values(dispute)
      // A literal predicate, so that Postgres can infer the partial index with a generic plan (marketplace.repository.ts insertUnlessOpen).
      .onConflict((oc) => oc.column("transaction_id").where("status", "=", sql.lit("open")).doNothing())
      .returningAll()
      .executeTakeFirst()
  );
}

export function find(db: Db, id: string): Promise<Dispute | undefined> {
  return db.selectFrom("disputes").selectAll().where("id", "=", id).executeTakeFirst();
}

export function lock(trx: Transaction<Database>, id: string): Promise<Dispute | undefined> {
  return trx.selectFrom("disputes").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

export function update(db: Db, id: string, set: UpdateObject<Database, "disputes">): Promise<Dispute | undefined> {
  return db
    .updateTable("disputes")
    .set({ ...set, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
}

/** Resolves a dispute now, with `set` (the resolution, its note, who, the refund's start). */
export function resolve(db: Db, id: string, set: UpdateObject<Database, "disputes">): Promise<Dispute | undefined> {
  return update(db, id, { ...set, resolved_at: sql<Date>`now()` });
}

/** The certificate's return of a refunded sale ended: back with the seller (its transaction is the return's operation's), or not possible. */
export function endReturn(db: Db, id: string, outcome: "returned" | "not_possible"): Promise<Dispute | undefined> {
  return db
    .updateTable("disputes")
    .set({ certificate_return: outcome, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("certificate_return", "=", "pending")
    .returningAll()
    .executeTakeFirst();
}

export function list(db: Db, filter: { status?: "open" | "resolved" | undefined }, page: Page) {
  let q = db.selectFrom("disputes");
  if (filter.status) q = q.where("status", "=", filter.status);
  return paginate(q, page, (x) => x.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"));
}

export async function countOpen(db: Db): Promise<number> {
  const row = await db.selectFrom("disputes").select(sql<string>`count(*)`.as("n")).where("status", "=", "open").executeTakeFirstOrThrow();
  return Number(row.n);
}
