import type { Kysely } from "kysely";

// The market and the audit anchor belong to a deployment as much as the certificate and shares do: a
// database recorded before they existed keeps nulls until its next start records them.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("chain_deployment")
    .addColumn("art_market_address", "text")
    .addColumn("audit_anchor_address", "text")
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("chain_deployment").dropColumn("art_market_address").dropColumn("audit_anchor_address").execute();
}
