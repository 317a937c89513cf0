import { type Insertable, sql } from "kysely";
import { readViews } from "../../chain/indexer-views.ts";
import type { Db } from "../../db/database.ts";
import { type Page, paginate } from "../../lib/pagination.ts";
import type { Withdrawal, WithdrawalAsset, WithdrawalsTable } from "./withdrawals.tables.ts";

export function insert(db: Db, row: Insertable<WithdrawalsTable>): Promise<Withdrawal> {
  return db.insertInto("withdrawals").values(row).returningAll().executeTakeFirstOrThrow();
}

export function find(db: Db, id: string): Promise<Withdrawal | undefined> {
  return db.selectFrom("withdrawals").selectAll().where("id", "=", id).executeTakeFirst();
}

export function pendingCertificateOf(db: Db, artworkId: string): Promise<Withdrawal | undefined> {
  return db.selectFrom("withdrawals").selectAll().where("artwork_id", "=", artworkId).where("asset", "=", "certificate").where("status", "=", "pending").executeTakeFirst();
}

export function listOf(db: Db, userId: string, page: Page) {
  return paginate(db.selectFrom("withdrawals").where("user_id", "=", userId), page, (q) => q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"));
}

/**
 * Moves a pending withdrawal to `completed` or `failed`, in the transaction that confirms or fails
 * its chain operation; with the transaction's time (`now()`: the operation's confirmed_at, which the
 * same transaction writes). Undefined when it was not pending (settled once).
 */
export async function settle(db: Db, id: string, status: "completed" | "failed"): Promise<{ withdrawal: Withdrawal; at: Date } | undefined> {
  const row = await db
    .updateTable("withdrawals")
    .set({ status, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("status", "=", "pending")
    .returning((eb) => [eb.fn("now", []).as("settled_at")])
    .returningAll()
    .executeTakeFirst();
  if (!row) return undefined;
  const { settled_at: at, ...withdrawal } = row as typeof row & { settled_at: Date };
  return { withdrawal: withdrawal as Withdrawal, at };
}

/** Pending withdrawals of `asset` (only those of `ids`, when given). */
export function pendingOf(db: Db, asset: WithdrawalAsset, ids?: readonly string[]): Promise<Withdrawal[]> {
  if (ids?.length === 0) return Promise.resolve([]);
  const query = db.selectFrom("withdrawals").selectAll().where("asset", "=", asset).where("status", "=", "pending");
  return (ids ? query.where("id", "in", [...ids]) : query).execute();
}

/** A withdrawal and a transaction of it: the one it sent (its chain operation's, or its signed one's), or an indexed transfer that carries it out. */
export interface WithdrawalTransaction {
  withdrawal_id: string;
  tx_hash: string;
}

/** `sent` as a recordset of (withdrawal_id, tx_hash) to join. */
function sentRows(sent: readonly WithdrawalTransaction[]) {
  return sql`jsonb_to_recordset(${JSON.stringify(sent)}::jsonb) as s(withdrawal_id text, tx_hash text)`;
}

/**
 * The indexer's certificate transfers that carry out pending withdrawals (its token, from its
 * custodial wallet to its linked wallet, mined in a block after the head when it was asked for): in blocks (from, to], or of
 * the given withdrawals whatever their block. `sent`: the transactions their operations sent.
 */
export function indexedTransfers(db: Db, viewsSchema: string, of: { blocks: [bigint, bigint] } | { ids: string[] }, sent: readonly WithdrawalTransaction[]): Promise<WithdrawalTransaction[]> {
  const which = "blocks" in of ? sql`t.block_number > ${of.blocks[0]} and t.block_number <= ${of.blocks[1]}` : sql`w.id = any(${of.ids}::text[])`;
  return readViews(async () => {
    const { rows } = await sql<WithdrawalTransaction>`
      select w.id as withdrawal_id, t.tx_hash
      from withdrawals w
      join ${sql.table(`${viewsSchema}.certificate_transfer`)} t
        on t.token_id = w.token_id and t."from" = w.from_wallet and t."to" = w.to_wallet
      left join ${sentRows(sent)} on s.withdrawal_id = w.id
      where w.asset = 'certificate' and w.status = 'pending'
        -- its own transaction, or (a send whose hash was lost) one mined after the head block when
        -- it was asked for: an earlier transfer of the same token between the same wallets is not
        -- this withdrawal's (rows from before after_block: by the block's time, less a minute)
        and (t.tx_hash = s.tx_hash
          or (w.after_block is not null and t.block_number > w.after_block)
          or (w.after_block is null and t.block_timestamp >= extract(epoch from w.created_at)::bigint - 60))
        and ${which}`.execute(db);
    return rows;
  });
}

/** A user's pending withdrawals of `asset` (of the share class `tokenId`, for shares), to count against their wallet's balance. */
export function pendingOfUser(db: Db, userId: string, asset: WithdrawalAsset, tokenId?: bigint): Promise<Withdrawal[]> {
  const query = db.selectFrom("withdrawals").selectAll().where("user_id", "=", userId).where("asset", "=", asset).where("status", "=", "pending");
  return (tokenId === undefined ? query : query.where("token_id", "=", tokenId)).execute();
}

/** Another pending shares withdrawal of the wallet with a signed transaction (at most one: withdrawals_signing_wallet_key). */
export function signingOf(db: Db, wallet: string, exceptId: string): Promise<Withdrawal | undefined> {
  return db.selectFrom("withdrawals").selectAll().where("from_wallet", "=", wallet).where("status", "=", "pending").where("signed_tx", "is not", null).where("id", "<>", exceptId).executeTakeFirst();
}

/** Keeps the transaction a shares withdrawal's wallet signed (sent from now on). */
export async function recordSigned(db: Db, id: string, signed: { sender_nonce: number; signed_tx: string }): Promise<void> {
  await db.updateTable("withdrawals").set({ ...signed, updated_at: sql<Date>`now()` }).where("id", "=", id).where("status", "=", "pending").where("signed_tx", "is", null).execute();
}

/**
 * The indexer's share transfers that carry out pending shares withdrawals: their own transaction
 * (`signed`: the hash of the one each signed, known before it is sent), in blocks (from, to] or
 * whatever their block.
 */
export async function indexedShareTransfers(db: Db, viewsSchema: string, signed: readonly WithdrawalTransaction[], blocks?: [bigint, bigint]): Promise<WithdrawalTransaction[]> {
  if (signed.length === 0) return [];
  const which = blocks ? sql`t.block_number > ${blocks[0]} and t.block_number <= ${blocks[1]}` : sql`true`;
  return readViews(async () => {
    const { rows } = await sql<WithdrawalTransaction>`
      select w.id as withdrawal_id, t.tx_hash
      from ${sentRows(signed)}
      join withdrawals w on w.id = s.withdrawal_id
      join ${sql.table(`${viewsSchema}.share_transfer`)} t
        on t.tx_hash = s.tx_hash and t.token_id = w.token_id and t."from" = w.from_wallet and t."to" = w.to_wallet
      where w.asset = 'shares' and w.status = 'pending' and w.signed_tx is not null and ${which}`.execute(db);
    return rows;
  });
}
