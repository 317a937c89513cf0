import { type ChainOperations, transactionOf } from "../../chain/operations.ts";
import type { Db } from "../../db/database.ts";
import type { TransactionRow } from "./payments.tables.ts";
import * as repo from "./purchases.repository.ts";
import { toTransaction } from "./transactions.schemas.ts";

export type TransactionAnswer = ReturnType<typeof toTransaction>;

/**
 * Transactions as their resource, each with the chain transaction of its effect (`on_chain_tx`).
 * That hash is stored once: a wallet's own fill is its purchase's (`chain_tx`, an on-chain sale:
 * the platform sent nothing), a transaction the platform sent is its chain operation's (a card
 * sale's settlement, a share purchase's mint: the kind's `chainOperationOf`), read once the purchase
 * completed; a royalty payout's is its sale's. One query for the payouts' sales and one for the
 * operations, whatever the number of rows.
 */
export async function transactionAnswers(
  db: Db,
  rows: readonly TransactionRow[],
  hooks: { chainOperationOf(purchase: TransactionRow): string | null; operations: Pick<ChainOperations, "findMany"> },
): Promise<TransactionAnswer[]> {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const missing = [...new Set(rows.flatMap((r) => (r.type === "royalty_payout" && r.parent_id && !byId.has(r.parent_id) ? [r.parent_id] : [])))];
  for (const parent of missing.length > 0 ? await repo.findMany(db, missing) : []) byId.set(parent.id, parent);
  const purchaseOf = (r: TransactionRow) => (r.type === "royalty_payout" && r.parent_id ? (byId.get(r.parent_id) ?? r) : r);

  const keyOf = new Map<string, string>();
  for (const r of rows) {
    const purchase = purchaseOf(r);
    const key = purchase.chain_tx === null && purchase.completed_at !== null ? hooks.chainOperationOf(purchase) : null;
    if (key) keyOf.set(r.id, key);
  }
  const operations = new Map((await hooks.operations.findMany(db, [...new Set(keyOf.values())])).map((op) => [op.key, op]));
  return rows.map((r) => toTransaction(r, purchaseOf(r).chain_tx ?? transactionOf(operations.get(keyOf.get(r.id) ?? ""), { confirmed: true })));
}

