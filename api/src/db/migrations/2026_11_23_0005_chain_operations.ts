import { type Kysely, sql } from "kysely";

// Chain writes as durable operations (api/src/chain/operations.ts): one row per business key, sent
// by the relayer, confirmed from the indexer by a cursor per consumer. Certifications in flight
// are carried over.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("chain_operations")
    .addColumn("id", "bigserial", (c) => c.primaryKey())
    .addColumn("key", "text", (c) => c.notNull().unique())
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("payload", "jsonb", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('pending', 'sent', 'confirmed', 'failed')`))
    .addColumn("tx_hash", "text")
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("lease_until", "timestamptz")
    .addColumn("last_error", "text")
    .addColumn("result", "jsonb")
    // 'indexer', or 'chain' (the indexer lagged): then indexed_at stays null until the cursor sees it.
    .addColumn("confirmed_from", "text", (c) => c.check(sql`confirmed_from in ('indexer', 'chain')`))
    .addColumn("confirmed_at", "timestamptz")
    .addColumn("indexed_at", "timestamptz")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  // The sweep's and the lagging indexer's reads: only operations still on their way.
  await sql`create index chain_operations_open_idx on chain_operations (lease_until) where status in ('pending', 'sent')`.execute(db);

  await db.schema
    .createTable("chain_cursors")
    .addColumn("consumer", "text", (c) => c.primaryKey())
    .addColumn("block_number", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  // Certifications under way become operations; the indexer's certificates before now are already recorded.
  await sql`
    insert into chain_operations (key, kind, payload, status, tx_hash, attempts, lease_until, last_error)
    select 'certify:' || id, 'certify', jsonb_build_object('artwork_id', id),
           case when certification_tx_hash is null then 'pending' else 'sent' end,
           certification_tx_hash, certification_attempts, coalesce(certification_lease_until, now()), certification_error
    from artworks where status = 'pending_certification' and image_sha256 is not null`.execute(db);
  // Confirmed from the chain while the indexer lagged: the cursor reconciles them once it sees them.
  await sql`
    insert into chain_operations (key, kind, payload, status, tx_hash, attempts, confirmed_from, confirmed_at)
    select 'certify:' || id, 'certify', jsonb_build_object('artwork_id', id), 'confirmed', certification_tx_hash,
           certification_attempts, 'chain', certification_confirmed_at
    from artworks where status = 'certified' and certification_indexed_at is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("chain_cursors").ifExists().execute();
  await db.schema.dropTable("chain_operations").ifExists().execute();
}
