import { type Kysely, sql } from "kysely";

// A projection of indexed facts that cannot record a fact retries it on every pass and holds the
// facts after it (a sale is never skipped); its cursor says so, for /readyz.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table chain_cursors add column failing_since timestamptz, add column last_error text`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table chain_cursors drop column failing_since, drop column last_error`.execute(db);
}
