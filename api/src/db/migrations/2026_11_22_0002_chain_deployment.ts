import { type Kysely, sql } from "kysely";

// The identity of the chain and contracts this database's data belongs to: a single row, written
// by the stack on first start and compared on every later start, so a database never mixes the
// certificates and shares of two chains (a reset Hardhat node keeps chain id 31337, hence the
// genesis hash).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("chain_deployment")
    .addColumn("id", "smallint", (c) => c.primaryKey().defaultTo(1).check(sql`id = 1`))
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("genesis_hash", "text", (c) => c.notNull())
    .addColumn("art_certificate_address", "text")
    .addColumn("art_shares_address", "text")
    .addColumn("start_block", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("recorded_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("chain_deployment").execute();
}
