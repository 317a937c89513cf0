import { type Kysely, sql } from "kysely";

/**
 * API keys get a cap (the scopes of the token that made them) and their lineage (the key of that
 * token), so that a key never grants more than its maker and dies with it. Existing keys keep
 * what they had: no cap beyond the user's role, no parent.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("api_keys")
    .addColumn("scopes", sql`text[]`)
    .addColumn("parent_api_key_id", "text", (c) => c.references("api_keys.id"))
    .execute();
  await sql`create index api_keys_parent_idx on api_keys (parent_api_key_id) where parent_api_key_id is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("api_keys").dropColumn("parent_api_key_id").dropColumn("scopes").execute();
}
