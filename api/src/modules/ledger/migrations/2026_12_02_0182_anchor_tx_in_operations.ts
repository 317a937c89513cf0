import { type Kysely, sql } from "kysely";

// One row per fact (issue 39): the transaction that anchored a range of the ledger is stored once,
// in its chain operation (`ledger_anchor:<first>-<last>`: the last one sent, `tx_hash`, or once
// confirmed the one its confirmation saw, `result.txHash`), no longer copied to `ledger_anchors`.
// An operation that lacks the hash its anchor kept gets it first; an anchor with a hash and no
// operation gets one, written from the range it records (its payload is the range's). Where the two
// disagree the migration stops and names them. Then `ledger_anchors.tx_hash` goes.

const KEY = sql`'ledger_anchor:' || a.first_seq || '-' || a.last_seq`;
/** The hash an operation answers with today, in the slot the copy fills: the confirmation's once confirmed, else the one sent. */
const OPERATION_TX = sql`case when o.status = 'confirmed' then o.result->>'txHash' else o.tx_hash end`;

export async function up(db: Kysely<any>): Promise<void> {
  const { rows: disagreeing } = await sql<{ first_seq: string; last_seq: string; tx_hash: string; operation_tx: string }>`
    select a.first_seq, a.last_seq, a.tx_hash, ${OPERATION_TX} as operation_tx
    from ledger_anchors a join chain_operations o on o.key = ${KEY}
    where a.tx_hash is not null and ${OPERATION_TX} is not null and lower(${OPERATION_TX}) <> lower(a.tx_hash)`.execute(db);
  if (disagreeing.length > 0) {
    throw new Error(
      `ledger anchors whose transaction is not their chain operation's (anchor: its copy / the operation's): ${disagreeing.map((r) => `${r.first_seq}-${r.last_seq}: ${r.tx_hash} / ${r.operation_tx}`).join(", ")}`,
    );
  }

  await sql`
    update chain_operations o set result = coalesce(o.result, '{}'::jsonb) || jsonb_build_object('txHash', a.tx_hash)
    from ledger_anchors a
    where o.key = ${KEY} and a.tx_hash is not null and o.status = 'confirmed' and o.result->>'txHash' is null`.execute(db);
  // Sent, as the component records a send (an attempt resumes from the hash).
  await sql`
    update chain_operations o set tx_hash = a.tx_hash, status = case when o.status = 'pending' then 'sent' else o.status end
    from ledger_anchors a
    where o.key = ${KEY} and a.tx_hash is not null and o.status <> 'confirmed' and o.tx_hash is null`.execute(db);
  // A pending anchor's operation is due at once: its attempt waits for the transaction sent.
  await sql`
    insert into chain_operations (key, kind, payload, status, tx_hash, result, last_error, confirmed_from, confirmed_at, indexed_at, due_at, created_at)
    select ${KEY}, 'ledger_anchor',
           jsonb_build_object('first_seq', a.first_seq, 'last_seq', a.last_seq, 'merkle_root', a.merkle_root, 'head_hash', a.head_hash, 'contract_address', a.contract_address),
           case a.status when 'confirmed' then 'confirmed' when 'failed' then 'failed' else 'sent' end, a.tx_hash,
           case when a.status = 'confirmed' then jsonb_build_object(
             'anchorIndex', a.anchor_index::text, 'firstSeq', a.first_seq::text, 'lastSeq', a.last_seq::text, 'merkleRoot', a.merkle_root,
             'headHash', a.head_hash, 'txHash', a.tx_hash, 'blockNumber', a.block_number::text) end,
           a.last_error, case when a.status = 'confirmed' then 'indexer' end, a.confirmed_at, a.confirmed_at,
           case when a.status = 'pending' then now() end, a.created_at
    from ledger_anchors a
    where a.tx_hash is not null and not exists (select 1 from chain_operations o where o.key = ${KEY})`.execute(db);
  await sql`alter table ledger_anchors drop column tx_hash`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table ledger_anchors add column tx_hash text`.execute(db);
  await sql`
    update ledger_anchors a set tx_hash = coalesce(case when o.status = 'confirmed' then o.result->>'txHash' end, o.tx_hash)
    from chain_operations o where o.key = ${KEY}`.execute(db);
}
