import type { Kysely } from "kysely";

// A key in progress names the process running its request (its presence, db/presence.ts): when that
// process is gone, a retry takes the key over at once instead of after the abandonment timeout.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("idempotency_keys").addColumn("holder", "integer").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("idempotency_keys").dropColumn("holder").execute();
}
