import { type Kysely, sql } from "kysely";

// The business record a transaction pays for, when it is not a sale (a fractional purchase `frac_…`,
// later a ticket order): the record's id.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("transactions").addColumn("reference_id", "text").execute();
  await sql`create index transactions_reference_idx on transactions (reference_id) where reference_id is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("transactions").dropColumn("reference_id").execute();
}
