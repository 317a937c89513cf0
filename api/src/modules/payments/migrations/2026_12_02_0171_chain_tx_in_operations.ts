import { type Kysely, sql } from "kysely";

// One row per fact (issue 39): a purchase's chain transaction is stored once. A wallet's fill is its
// on-chain purchase's own (`transactions.chain_tx`: the platform sent nothing); a transaction the
// platform sent is its chain operation's (a card sale's `settle:<sale>`, a share purchase's
// `mint:<purchase>`, `result.txHash`), and a royalty payout's is its sale's. An operation that lacks
// the hash its purchase kept gets it first (or is written, for a purchase recorded without one);
// then the copies go, and a check keeps `chain_tx` to on-chain purchases.
const SENT = [
  { type: "sale", prefix: "settle:", kind: "marketplace_settle", reference: sql`t.id` },
  { type: "share_purchase", prefix: "mint:", kind: "fractional_mint", reference: sql`t.reference_id` },
] as const;

export async function up(db: Kysely<any>): Promise<void> {
  for (const { type, prefix, kind, reference } of SENT) {
    await sql`
      update chain_operations o set result = coalesce(o.result, '{}'::jsonb) || jsonb_build_object('txHash', t.chain_tx)
      from transactions t
      where o.key = ${prefix}::text || ${reference} and t.type = ${type}::text and t.payment_method = 'card' and t.chain_tx is not null and o.result->>'txHash' is null`.execute(db);
    await sql`
      insert into chain_operations (key, kind, payload, status, tx_hash, result, confirmed_from, confirmed_at, indexed_at, created_at)
      select ${prefix}::text || ${reference}, ${kind}::text, '{}'::jsonb, 'confirmed', t.chain_tx, jsonb_build_object('txHash', t.chain_tx),
             'indexer', coalesce(t.completed_at, t.updated_at), coalesce(t.completed_at, t.updated_at), t.created_at
      from transactions t
      where t.type = ${type}::text and t.payment_method = 'card' and t.chain_tx is not null and ${reference} is not null
        and not exists (select 1 from chain_operations o where o.key = ${prefix}::text || ${reference})`.execute(db);
  }
  await sql`update transactions set chain_tx = null where chain_tx is not null and not (payment_method = 'onchain' and type <> 'royalty_payout')`.execute(db);
  await sql`alter table transactions add constraint transactions_chain_tx_onchain check (chain_tx is null or (payment_method = 'onchain' and type <> 'royalty_payout'))`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table transactions drop constraint transactions_chain_tx_onchain`.execute(db);
  for (const { type, prefix, reference } of SENT) {
    await sql`
      update transactions t set chain_tx = coalesce(o.result->>'txHash', o.tx_hash)
      from chain_operations o
      where o.key = ${prefix}::text || ${reference} and t.type = ${type}::text and t.payment_method = 'card' and o.status = 'confirmed' and t.completed_at is not null`.execute(db);
  }
  await sql`update transactions c set chain_tx = p.chain_tx from transactions p where c.type = 'royalty_payout' and c.parent_id = p.id`.execute(db);
}
