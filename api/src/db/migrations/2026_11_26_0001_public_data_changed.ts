import { type Kysely, sql } from "kysely";

/**
 * Tables whose rows public reads show (anonymous GETs of public routes). A committed change to any
 * of them NOTIFYs `public_data_changed` with the table's name (one per table and transaction: Postgres
 * folds identical notifications), and every HTTP process forgets the public reads it keeps
 * (api/src/http/public-read-cache.ts). A new table that public reads show gets the trigger in its
 * own migration (`publicDataChangedTriggers`); test/api/public-read-cache.test.ts fails on a table
 * that is neither here nor in its list of internal tables.
 */
export const PUBLIC_DATA_TABLES = [
  "artworks",
  "artwork_provenance",
  "listings",
  "offers",
  "sales",
  "transactions",
  "fractional_artworks",
  "fractional_purchases",
  "community_posts",
  "community_post_likes",
  "community_comments",
  "community_discussions",
  "community_discussion_activity",
  "community_replies",
  "community_challenges",
  "community_submissions",
  "platform_events",
  "event_artists",
  "tickets",
  "ticket_orders",
  "rewards",
] as const;

/**
 * The triggers of one table: per row (a statement that changes no row, such as a sweep that finds
 * nothing to do, notifies nothing), and per TRUNCATE.
 */
export function publicDataChangedTriggers(table: string) {
  return [
    sql`create trigger ${sql.id(`${table}_public_data_changed`)}
      after insert or update or delete on ${sql.id(table)}
      for each row execute function notify_public_data_changed()`,
    sql`create trigger ${sql.id(`${table}_public_data_truncated`)}
      after truncate on ${sql.id(table)}
      for each statement execute function notify_public_data_changed()`,
  ];
}

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function notify_public_data_changed() returns trigger language plpgsql as $$
    begin
      perform pg_notify('public_data_changed', tg_table_name);
      return null;
    end $$`.execute(db);
  for (const table of PUBLIC_DATA_TABLES) for (const trigger of publicDataChangedTriggers(table)) await trigger.execute(db);
  // Users: a token exchange records the login time, which no public read shows; any other change
  // (profile, role, tier, counts, status) notifies.
  await sql`
    create trigger users_public_data_changed after update on users for each row
    when ((to_jsonb(old) - 'last_login_at' - 'updated_at') is distinct from (to_jsonb(new) - 'last_login_at' - 'updated_at'))
    execute function notify_public_data_changed()`.execute(db);
  await sql`
    create trigger users_public_data_added after insert or delete on users
    for each row execute function notify_public_data_changed()`.execute(db);
  await sql`
    create trigger users_public_data_truncated after truncate on users
    for each statement execute function notify_public_data_changed()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const name of ["users_public_data_truncated", "users_public_data_added", "users_public_data_changed"]) await sql`drop trigger ${sql.id(name)} on users`.execute(db);
  for (const table of PUBLIC_DATA_TABLES) {
    for (const name of [`${table}_public_data_changed`, `${table}_public_data_truncated`]) await sql`drop trigger ${sql.id(name)} on ${sql.id(table)}`.execute(db);
  }
  await sql`drop function notify_public_data_changed()`.execute(db);
}
