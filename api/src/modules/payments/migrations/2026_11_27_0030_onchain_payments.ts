import { type Kysely, sql } from "kysely";

// A sale can be paid by a wallet on-chain (ArtExchange, in the payment token) instead of a card: the
// transaction says how it was paid; its buyer may be a wallet with no account (buyer_id null), named
// by `buyer_wallet`.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table transactions
    add column payment_method text not null default 'card' check (payment_method in ('card', 'onchain')),
    add column buyer_wallet text`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table transactions drop column payment_method, drop column buyer_wallet`.execute(db);
}
