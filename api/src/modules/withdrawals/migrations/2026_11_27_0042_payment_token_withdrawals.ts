import { type Kysely, sql } from "kysely";

// A custodial wallet's payment token (the proceeds of sales paid on-chain) is withdrawn too: such a
// withdrawal has no artwork and no token id, but an amount in the token's units.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table withdrawals
    alter column artwork_id drop not null,
    alter column token_id drop not null,
    add column amount_units numeric(78, 0)`.execute(db);
  await sql`alter table withdrawals drop constraint withdrawals_asset_check`.execute(db);
  await sql`alter table withdrawals add constraint withdrawals_asset_check check (case asset
    when 'certificate' then artwork_id is not null and token_id is not null and amount_units is null
    when 'payment_token' then artwork_id is null and token_id is null and amount_units > 0
    else false end)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`delete from withdrawals where asset = 'payment_token'`.execute(db);
  await sql`alter table withdrawals drop constraint withdrawals_asset_check`.execute(db);
  await sql`alter table withdrawals add constraint withdrawals_asset_check check (asset in ('certificate'))`.execute(db);
  await sql`alter table withdrawals alter column artwork_id set not null, alter column token_id set not null, drop column amount_units`.execute(db);
}
