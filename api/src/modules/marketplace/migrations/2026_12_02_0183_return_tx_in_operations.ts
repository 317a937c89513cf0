import { type Kysely, sql } from "kysely";

// One row per fact (issue 39): the transaction that returned a refunded sale's certificate to its
// seller is stored once, in the return's chain operation (`settle:return:<dispute>`, the confirmed
// settlement's `result.txHash`); the dispute keeps its state (`certificate_return`) and no longer a
// copy (`return_tx_hash`). An operation that lacks the hash its dispute kept gets it first (or is
// written, for a return recorded without one); where the two disagree the migration stops and
// names them. Then the copy goes.

const KEY = sql`'settle:return:' || d.id`;
/** The hash an operation answers with today, in the slot the copy fills: the confirmation's once confirmed, else the one sent. */
const OPERATION_TX = sql`case when o.status = 'confirmed' then o.result->>'txHash' else o.tx_hash end`;

export async function up(db: Kysely<any>): Promise<void> {
  const { rows: disagreeing } = await sql<{ id: string; return_tx_hash: string; operation_tx: string }>`
    select d.id, d.return_tx_hash, ${OPERATION_TX} as operation_tx
    from disputes d join chain_operations o on o.key = ${KEY}
    where d.return_tx_hash is not null and ${OPERATION_TX} is not null and lower(${OPERATION_TX}) <> lower(d.return_tx_hash)`.execute(db);
  if (disagreeing.length > 0) {
    throw new Error(
      `disputes whose certificate return is not their chain operation's (dispute: its copy / the operation's): ${disagreeing.map((r) => `${r.id}: ${r.return_tx_hash} / ${r.operation_tx}`).join(", ")}`,
    );
  }

  await sql`
    update chain_operations o set result = coalesce(o.result, '{}'::jsonb) || jsonb_build_object('txHash', d.return_tx_hash)
    from disputes d
    where o.key = ${KEY} and d.return_tx_hash is not null and o.status = 'confirmed' and o.result->>'txHash' is null`.execute(db);
  await sql`
    update chain_operations o set tx_hash = d.return_tx_hash, status = case when o.status = 'pending' then 'sent' else o.status end
    from disputes d
    where o.key = ${KEY} and d.return_tx_hash is not null and o.status <> 'confirmed' and o.tx_hash is null`.execute(db);
  await sql`
    insert into chain_operations (key, kind, payload, status, tx_hash, result, confirmed_from, confirmed_at, indexed_at, created_at)
    select ${KEY}, 'marketplace_settle', jsonb_build_object('sale_id', 'return:' || d.id), 'confirmed', d.return_tx_hash,
           jsonb_build_object('saleId', 'return:' || d.id, 'txHash', d.return_tx_hash), 'indexer', d.updated_at, d.updated_at, coalesce(d.resolved_at, d.updated_at)
    from disputes d
    where d.return_tx_hash is not null and not exists (select 1 from chain_operations o where o.key = ${KEY})`.execute(db);
  await sql`alter table disputes drop column return_tx_hash`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table disputes add column return_tx_hash text`.execute(db);
  await sql`
    update disputes d set return_tx_hash = coalesce(o.result->>'txHash', o.tx_hash)
    from chain_operations o
    where o.key = ${KEY} and o.status = 'confirmed' and d.certificate_return = 'returned'`.execute(db);
}
