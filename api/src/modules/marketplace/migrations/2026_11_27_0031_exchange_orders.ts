import { type Kysely, sql } from "kysely";

// On-chain purchases (docs/integrators/onchain-purchases.md). A sale filled on-chain by a wallet has
// no card and may have no account behind its buyer, and names the order it filled (once: unique).
// `exchange_orders` are the EIP-712 orders the platform signed for its listings: open until filled,
// cancelled or expired; the listing's open orders are cancelled on-chain when it closes otherwise.
// `expires_at` is the signed expiry, in the chain's time (block timestamps); `fillable_until` is a
// wall-clock time by which the chain has certainly passed it (the chain's clock may run ahead of or
// behind ours, never slower): until then a closing listing cancels the order on-chain.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table sales
    alter column buyer_id drop not null,
    alter column payment_method_id drop not null,
    add column payment_method text not null default 'card' check (payment_method in ('card', 'onchain')),
    add column order_hash text unique`.execute(db);
  // A card sale is charged once paid; an on-chain one was paid by its fill, with no card and no charge.
  await sql`alter table sales drop constraint sales_paid`.execute(db);
  await sql`alter table sales add constraint sales_paid check (case payment_method
    when 'card' then payment_method_id is not null and buyer_id is not null and (status in ('paid', 'completed', 'settlement_failed', 'refunded')) = (charge_id is not null)
    else payment_method_id is null and charge_id is null and order_hash is not null end)`.execute(db);
  await sql`create table exchange_orders (
    order_hash text primary key,
    listing_id text not null references listings (id),
    seller_wallet text not null,
    token_id numeric(78) not null,
    price_units numeric(78) not null,
    currency text not null,
    fee_bps integer not null,
    expires_at timestamptz not null,
    fillable_until timestamptz not null,
    signature text not null,
    status text not null default 'open' check (status in ('open', 'filled', 'cancelled')),
    sale_id text,
    created_at timestamptz not null default now(),
    closed_at timestamptz
  )`.execute(db);
  await sql`create index exchange_orders_open_listing_idx on exchange_orders (listing_id, expires_at desc) where status = 'open'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table exchange_orders`.execute(db);
  await sql`delete from sales where payment_method = 'onchain'`.execute(db);
  await sql`alter table sales drop constraint sales_paid`.execute(db);
  await sql`alter table sales add constraint sales_paid check ((status in ('paid', 'completed', 'settlement_failed', 'refunded')) = (charge_id is not null))`.execute(db);
  await sql`alter table sales drop column payment_method, drop column order_hash,
    alter column buyer_id set not null, alter column payment_method_id set not null`.execute(db);
}
