import { type Kysely, sql } from "kysely";
import { publicDataChangedTriggers } from "../../../db/migrations/2026_11_26_0001_public_data_changed.ts";

/**
 * Wallets a user linked by signing a SIWE message with them (docs/wallets.md): the user's own
 * wallets beside the one on their row. An address belongs to one user at most: the primary key here,
 * and the linking checks the users' own wallets under the address's advisory lock. Public reads name
 * a shareholder's user through these, hence the triggers.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("user_wallets")
    .addColumn("address", "text", (c) => c.primaryKey().check(sql`address ~ '^0x[0-9a-f]{40}$'`))
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("linked_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex("user_wallets_user_idx").on("user_wallets").columns(["user_id", "linked_at"]).execute();
  // Every wallet of a user, lower-case: the one on their row and the linked ones (what maps an on-chain holder to its user).
  await sql`create view user_wallet_directory as
    select id as user_id, lower(wallet_address) as wallet from users
    union all
    select user_id, address as wallet from user_wallets`.execute(db);
  for (const statement of publicDataChangedTriggers("user_wallets")) await statement.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop view user_wallet_directory`.execute(db);
  await db.schema.dropTable("user_wallets").execute();
}
