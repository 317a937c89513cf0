import { type Kysely, sql } from "kysely";

// A cursor pass asks which kinds still have open operations (pending, sent, or confirmed from the
// chain and not yet indexed) and reads the indexer only for those: both parts answered from
// partial indexes, however many operations were ever confirmed.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index chain_operations_open_kind_idx on chain_operations (kind) where status in ('pending', 'sent')`.execute(db);
  await sql`create index chain_operations_unindexed_idx on chain_operations (kind) where status = 'confirmed' and indexed_at is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists chain_operations_unindexed_idx`.execute(db);
  await sql`drop index if exists chain_operations_open_kind_idx`.execute(db);
}
