import { type Kysely, sql } from "kysely";

/**
 * Every change that can end a credential's validity NOTIFYs `credentials_changed` with the user's id
 * when it commits: a token or an API key revoked (or its scopes or expiry changed), a user suspended,
 * reactivated or given another role. (Rows are deleted only once expired, which a cached credential
 * checks by itself.) The API's processes keep resolved credentials for a few seconds and forget them
 * on this signal, whichever process or statement made the change.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function notify_credentials_changed_of_user() returns trigger language plpgsql as $$
    begin
      perform pg_notify('credentials_changed', new.user_id);
      return null;
    end $$`.execute(db);
  await sql`
    create function notify_credentials_changed_of_self() returns trigger language plpgsql as $$
    begin
      perform pg_notify('credentials_changed', new.id);
      return null;
    end $$`.execute(db);
  await sql`
    create trigger access_tokens_credentials_changed after update on access_tokens for each row
    when (old.revoked_at is distinct from new.revoked_at or old.scopes is distinct from new.scopes or old.expires_at is distinct from new.expires_at)
    execute function notify_credentials_changed_of_user()`.execute(db);
  await sql`
    create trigger api_keys_credentials_changed after update on api_keys for each row
    when (old.revoked_at is distinct from new.revoked_at or old.scopes is distinct from new.scopes)
    execute function notify_credentials_changed_of_user()`.execute(db);
  await sql`
    create trigger users_credentials_changed after update on users for each row
    when (old.status is distinct from new.status or old.role is distinct from new.role)
    execute function notify_credentials_changed_of_self()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger users_credentials_changed on users`.execute(db);
  await sql`drop trigger api_keys_credentials_changed on api_keys`.execute(db);
  await sql`drop trigger access_tokens_credentials_changed on access_tokens`.execute(db);
  await sql`drop function notify_credentials_changed_of_self()`.execute(db);
  await sql`drop function notify_credentials_changed_of_user()`.execute(db);
}
