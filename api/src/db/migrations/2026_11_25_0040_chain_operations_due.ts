import { type Kysely, sql } from "kysely";

// Chain operations are claimed from their own table instead of through a job per operation: an
// operation waiting for its next attempt has `due_at` (now, or when its backoff ends) and a
// `priority` (lower first); a worker claims due ones with FOR UPDATE SKIP LOCKED, and each row that
// becomes due NOTIFYs the workers on chain_operations_due (identical notifications of one transaction are delivered once).
// An attempt under way has no due_at and holds its lease_until; the sweep makes an attempt whose
// lease ran out due again. Operations on their way now become due at once (a job of the old kind
// that still runs one is harmless: each kind's send is idempotent on the chain).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("chain_operations").addColumn("due_at", "timestamptz").addColumn("priority", "integer", (c) => c.notNull().defaultTo(0)).execute();
  await sql`update chain_operations set due_at = now(), lease_until = null where status in ('pending', 'sent')`.execute(db);
  await sql`create index chain_operations_due_idx on chain_operations (priority, due_at, id) where due_at is not null and status in ('pending', 'sent')`.execute(db);
  await sql`
    create function chain_operations_notify_due() returns trigger language plpgsql as $$
    begin
      perform pg_notify('chain_operations_due', '');
      return null;
    end $$`.execute(db);
  await sql`
    create trigger chain_operations_due after insert or update of due_at on chain_operations
    for each row when (new.due_at is not null and new.status in ('pending', 'sent'))
    execute function chain_operations_notify_due()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists chain_operations_due on chain_operations`.execute(db);
  await sql`drop function if exists chain_operations_notify_due()`.execute(db);
  await sql`drop index if exists chain_operations_due_idx`.execute(db);
  await db.schema.alterTable("chain_operations").dropColumn("due_at").dropColumn("priority").execute();
}
