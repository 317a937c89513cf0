import { type Kysely, sql } from "kysely";

// Shares (ERC-1155) leave a custodial wallet in a transaction that wallet signs itself (ArtShares
// trusts no forwarder): the withdrawal keeps that transaction, signed once with the wallet's nonce,
// so that a retry sends the same one again and the transfer happens at most once.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table withdrawals add column sender_nonce integer, add column signed_tx text`.execute(db);
  await sql`alter table withdrawals drop constraint withdrawals_asset_check`.execute(db);
  await sql`alter table withdrawals add constraint withdrawals_asset_check check (case asset
    when 'certificate' then artwork_id is not null and token_id is not null and amount_units is null and quantity = 1
    when 'shares' then artwork_id is not null and token_id is not null and amount_units is null
    when 'payment_token' then artwork_id is null and token_id is null and amount_units > 0
    else false end)`.execute(db);
  await sql`alter table withdrawals add constraint withdrawals_signed_check check ((signed_tx is null) = (sender_nonce is null) and (signed_tx is null or asset = 'shares'))`.execute(db);
  // One signed, unsettled transaction per custodial wallet at a time (WithdrawalsService.signShares).
  await sql`create unique index withdrawals_signing_wallet_key on withdrawals (from_wallet) where signed_tx is not null and status = 'pending'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`delete from withdrawals where asset = 'shares'`.execute(db);
  await sql`drop index withdrawals_signing_wallet_key`.execute(db);
  await sql`alter table withdrawals drop constraint withdrawals_signed_check`.execute(db);
  await sql`alter table withdrawals drop constraint withdrawals_asset_check`.execute(db);
  await sql`alter table withdrawals add constraint withdrawals_asset_check check (case asset
    when 'certificate' then artwork_id is not null and token_id is not null and amount_units is null
    when 'payment_token' then artwork_id is null and token_id is null and amount_units > 0
    else false end)`.execute(db);
  await sql`alter table withdrawals drop column sender_nonce, drop column signed_tx`.execute(db);
}
