import { type Kysely, sql } from "kysely";
import { type Hex, keccak256 } from "viem";

// One row per fact (issue 39): a withdrawal's transaction is stored once. A certificate's or the
// payment token's is its chain operation's (`withdraw:<id>`: the last one sent, `tx_hash`, or once
// confirmed the one its confirmation saw, `result.txHash`); a shares withdrawal's is the hash of the
// transaction its wallet signed, which it keeps to send again (`signed_tx`). An operation that lacks
// the hash its withdrawal kept gets it first (or is written, for a settled withdrawal recorded
// without one); where the two disagree, or a shares withdrawal's copy is not its signed
// transaction's, the migration stops and names them. Then `withdrawals.tx_hash` goes.

/** The hash an operation answers with today, in the slot the copy fills: the confirmation's once confirmed, else the one sent. */
const OPERATION_TX = sql`case when o.status = 'confirmed' then o.result->>'txHash' else o.tx_hash end`;

export async function up(db: Kysely<any>): Promise<void> {
  const { rows: disagreeing } = await sql<{ id: string; tx_hash: string; operation_tx: string }>`
    select w.id, w.tx_hash, ${OPERATION_TX} as operation_tx
    from withdrawals w join chain_operations o on o.key = 'withdraw:' || w.id
    where w.asset <> 'shares' and w.tx_hash is not null and ${OPERATION_TX} is not null and lower(${OPERATION_TX}) <> lower(w.tx_hash)`.execute(db);
  if (disagreeing.length > 0) {
    throw new Error(`withdrawals whose transaction is not their chain operation's (withdrawal: its copy / the operation's): ${disagreeing.map((r) => `${r.id}: ${r.tx_hash} / ${r.operation_tx}`).join(", ")}`);
  }
  const { rows: signed } = await sql<{ id: string; tx_hash: string; signed_tx: string | null }>`
    select id, tx_hash, signed_tx from withdrawals where asset = 'shares' and tx_hash is not null`.execute(db);
  const notSigned = signed.filter((w) => w.signed_tx === null || keccak256(w.signed_tx as Hex) !== w.tx_hash.toLowerCase());
  if (notSigned.length > 0) {
    throw new Error(`shares withdrawals whose transaction is not the one they signed (keccak256 of signed_tx): ${notSigned.map((w) => `${w.id}: ${w.tx_hash}`).join(", ")}`);
  }
  const { rows: orphans } = await sql<{ id: string; tx_hash: string }>`
    select w.id, w.tx_hash from withdrawals w
    where w.asset <> 'shares' and w.tx_hash is not null and w.status = 'pending'
      and not exists (select 1 from chain_operations o where o.key = 'withdraw:' || w.id)`.execute(db);
  if (orphans.length > 0) {
    throw new Error(`pending withdrawals with a transaction but no chain operation to carry them out (settle them first): ${orphans.map((w) => `${w.id}: ${w.tx_hash}`).join(", ")}`);
  }

  await sql`
    update chain_operations o set result = coalesce(o.result, '{}'::jsonb) || jsonb_build_object('txHash', w.tx_hash)
    from withdrawals w
    where o.key = 'withdraw:' || w.id and w.asset <> 'shares' and w.tx_hash is not null and o.status = 'confirmed' and o.result->>'txHash' is null`.execute(db);
  // Sent, as the component records a send (an attempt resumes from the hash).
  await sql`
    update chain_operations o set tx_hash = w.tx_hash, status = case when o.status = 'pending' then 'sent' else o.status end
    from withdrawals w
    where o.key = 'withdraw:' || w.id and w.asset <> 'shares' and w.tx_hash is not null and o.status <> 'confirmed' and o.tx_hash is null`.execute(db);
  await sql`
    insert into chain_operations (key, kind, payload, status, tx_hash, result, last_error, confirmed_from, confirmed_at, indexed_at, created_at)
    select 'withdraw:' || w.id, case w.asset when 'certificate' then 'withdrawal' else 'withdrawal_payment_token' end,
           jsonb_build_object('withdrawal_id', w.id, 'token_id', w.token_id::text, 'from', w.from_wallet, 'to', w.to_wallet),
           case w.status when 'completed' then 'confirmed' else 'failed' end, w.tx_hash,
           case when w.status = 'completed' then jsonb_build_object('txHash', w.tx_hash) end, w.failure_reason,
           case when w.status = 'completed' then (case w.asset when 'certificate' then 'indexer' else 'chain' end) end,
           w.completed_at, w.completed_at, w.created_at
    from withdrawals w
    where w.asset <> 'shares' and w.tx_hash is not null and w.status in ('completed', 'failed')
      and not exists (select 1 from chain_operations o where o.key = 'withdraw:' || w.id)`.execute(db);
  await sql`alter table withdrawals drop column tx_hash`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table withdrawals add column tx_hash text`.execute(db);
  await sql`
    update withdrawals w set tx_hash = coalesce(case when o.status = 'confirmed' then o.result->>'txHash' end, o.tx_hash)
    from chain_operations o
    where o.key = 'withdraw:' || w.id and w.asset <> 'shares'`.execute(db);
  const { rows: signed } = await sql<{ id: string; signed_tx: string }>`select id, signed_tx from withdrawals where asset = 'shares' and signed_tx is not null`.execute(db);
  for (const w of signed) await sql`update withdrawals set tx_hash = ${keccak256(w.signed_tx as Hex)} where id = ${w.id}`.execute(db);
}
