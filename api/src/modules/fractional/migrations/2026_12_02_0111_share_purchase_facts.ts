import { type Kysely, sql } from "kysely";

// One row per fact (issue 39): a share purchase's money, stage and failure are its `transactions`
// row's (payments/purchases.service.ts), the mint's and the class's transactions (and a class's failure) their
// chain operations' (`mint:<purchase>`, `share_class:<artwork>`). What those rows lack is first copied
// from the fractional rows, then the copies go. A purchase keeps its shares, price per share and
// status (its reservation: reserved, minted, released), a class its terms, counters and status.
export async function up(db: Kysely<any>): Promise<void> {
  // The purchase's own row, completed with anything only the fractional row kept. Its times are its
  // own already (a completed or failed transaction has them, by its checks): a purchase confirmed
  // completed with it, a payment's failure failed with it, a mint's failure refunds it first.
  await sql`
    update transactions t set
      charge_id = coalesce(t.charge_id, p.charge_id),
      fee_cents = case when t.fee_cents = 0 and p.fee_cents is not null then p.fee_cents else t.fee_cents end,
      payment_method_id = coalesce(t.payment_method_id, p.payment_method_id),
      failure_code = coalesce(t.failure_code, p.failure_code),
      failure_reason = coalesce(t.failure_reason, p.failure_reason),
      chain_tx = coalesce(t.chain_tx, p.mint_tx_hash)
    from fractional_purchases p
    where p.transaction_id = t.id`.execute(db);

  // The mint's transaction is its operation's confirmed facts (`result.txHash`).
  await sql`
    update chain_operations o set result = coalesce(o.result, '{}'::jsonb) || jsonb_build_object('purchaseKey', p.purchase_key, 'txHash', p.mint_tx_hash)
    from fractional_purchases p
    where o.key = 'mint:' || p.id and p.mint_tx_hash is not null and o.result->>'txHash' is null`.execute(db);
  await sql`
    insert into chain_operations (key, kind, payload, status, tx_hash, result, confirmed_from, confirmed_at, indexed_at, created_at)
    select 'mint:' || p.id, 'fractional_mint',
           jsonb_build_object('purchase_id', p.id, 'to', p.buyer_wallet, 'token_id', p.token_id::text, 'amount', p.shares::text, 'purchase_key', p.purchase_key),
           'confirmed', p.mint_tx_hash, jsonb_build_object('purchaseKey', p.purchase_key, 'txHash', p.mint_tx_hash),
           'indexer', coalesce(p.confirmed_at, p.updated_at), coalesce(p.confirmed_at, p.updated_at), p.created_at
    from fractional_purchases p
    where p.mint_tx_hash is not null and not exists (select 1 from chain_operations o where o.key = 'mint:' || p.id)`.execute(db);

  // The class's transaction and failure, likewise (classes written outside the service, as the seed did, get their operation).
  await sql`
    update chain_operations o set result = coalesce(o.result, '{}'::jsonb) || jsonb_build_object('tokenId', f.token_id::text, 'txHash', f.class_tx_hash)
    from fractional_artworks f
    where o.key = 'share_class:' || f.artwork_id and f.class_tx_hash is not null and o.result->>'txHash' is null`.execute(db);
  await sql`
    update chain_operations o set last_error = f.failure_reason
    from fractional_artworks f
    where o.key = 'share_class:' || f.artwork_id and f.failure_reason is not null and o.last_error is null`.execute(db);
  await sql`
    insert into chain_operations (key, kind, payload, status, tx_hash, result, confirmed_from, confirmed_at, indexed_at, created_at)
    select 'share_class:' || f.artwork_id, 'fractional_create_class',
           jsonb_build_object('artwork_id', f.artwork_id, 'token_id', f.token_id::text, 'cap', f.total_shares::text),
           'confirmed', f.class_tx_hash, jsonb_build_object('tokenId', f.token_id::text, 'txHash', f.class_tx_hash),
           'indexer', coalesce(f.activated_at, f.updated_at), coalesce(f.activated_at, f.updated_at), f.created_at
    from fractional_artworks f
    where f.class_tx_hash is not null and not exists (select 1 from chain_operations o where o.key = 'share_class:' || f.artwork_id)`.execute(db);

  await sql`drop index if exists fractional_purchases_charging_idx`.execute(db);
  await sql`alter table fractional_purchases
    drop column total_cents, drop column payment_method_id, drop column stage, drop column charge_id, drop column fee_cents,
    drop column mint_tx_hash, drop column failure_code, drop column failure_reason, drop column confirmed_at, drop column failed_at`.execute(db);
  await sql`alter table fractional_artworks drop column class_tx_hash, drop column failure_reason`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table fractional_artworks add column class_tx_hash text, add column failure_reason text`.execute(db);
  await sql`
    update fractional_artworks f set class_tx_hash = o.result->>'txHash', failure_reason = case when f.status = 'failed' then o.last_error end
    from chain_operations o where o.key = 'share_class:' || f.artwork_id`.execute(db);
  await sql`alter table fractional_purchases
    add column total_cents bigint, add column payment_method_id text, add column stage text check (stage in ('charging', 'minting', 'done')),
    add column charge_id text, add column fee_cents bigint, add column mint_tx_hash text, add column failure_code text, add column failure_reason text,
    add column confirmed_at timestamptz, add column failed_at timestamptz`.execute(db);
  await sql`
    update fractional_purchases p set
      total_cents = t.amount_cents, payment_method_id = t.payment_method_id, charge_id = t.charge_id, fee_cents = t.fee_cents,
      stage = case when p.status <> 'pending' then 'done' when t.stage = 'charging' then 'charging' else 'minting' end,
      mint_tx_hash = case when p.status = 'confirmed' then t.chain_tx end,
      failure_code = case when p.status = 'failed' then t.failure_code end, failure_reason = case when p.status = 'failed' then t.failure_reason end,
      confirmed_at = case when p.status = 'confirmed' then t.completed_at end, failed_at = case when p.status = 'failed' then coalesce(t.failed_at, p.updated_at) end
    from transactions t where t.id = p.transaction_id`.execute(db);
  await sql`alter table fractional_purchases alter column total_cents set not null, alter column payment_method_id set not null, alter column stage set not null`.execute(db);
  await sql`create index fractional_purchases_charging_idx on fractional_purchases (updated_at) where stage = 'charging'`.execute(db);
}
