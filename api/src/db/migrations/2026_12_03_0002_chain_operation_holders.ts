import type { Kysely } from "kysely";

// A leased chain operation names the process whose attempt holds it (its presence, db/presence.ts):
// when that process is gone, the sweep takes the operation up at once instead of when the lease ends.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("chain_operations").addColumn("holder", "integer").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("chain_operations").dropColumn("holder").execute();
}
