import { type Kysely, sql } from "kysely";

// A certificate withdrawal whose transaction hash was lost (a crash between the send and its record)
// is recognised by the transfer it asked for (its token, from its custodial wallet to its linked
// one) mined after it was asked for. "After" is the chain's head block when it was asked for: a
// block's timestamp cannot tell, since a chain's clock may run ahead of ours (a local node mining
// more than a block a second). Withdrawals asked for before this column fall back to the timestamp.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table withdrawals add column after_block numeric(78)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table withdrawals drop column after_block`.execute(db);
}
