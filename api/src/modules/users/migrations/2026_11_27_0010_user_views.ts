import { type Kysely, sql } from "kysely";

/**
 * What other modules may read of a user, as views (UsersViews in users.tables.ts): simple views,
 * which the planner folds into the reader's query (a join stays one statement on `users`' indexes).
 * `user_access` is also updatable: a token exchange records the login in the statement that writes the token.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create view user_directory as select id, display_name, wallet_address from users`.execute(db);
  await sql`create view user_access as select id, role, status, last_login_at from users`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop view user_access`.execute(db);
  await sql`drop view user_directory`.execute(db);
}
