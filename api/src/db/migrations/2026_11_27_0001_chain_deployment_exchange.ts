import type { Kysely } from "kysely";

// ArtExchange and the stablecoin it is paid in joined the platform after it was first deployed: a
// database recorded before keeps nulls until the stack deploys the exchange on its chain (or the
// operator configures one) and records it.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("chain_deployment")
    .addColumn("art_exchange_address", "text")
    .addColumn("payment_token_address", "text")
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("chain_deployment").dropColumn("art_exchange_address").dropColumn("payment_token_address").execute();
}
