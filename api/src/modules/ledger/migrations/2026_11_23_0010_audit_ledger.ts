import { type Kysely, sql } from "kysely";

const HASH = sql.raw(`'^0x[0-9a-f]{64}$'`);
const ZERO_HASH = sql.lit(`0x${"0".repeat(64)}`);

// The marketplace's audit ledger (docs/auditors.md#the-marketplace-ledger): hash-chained entries the
// database itself refuses to change, and the ranges of them anchored on the AuditAnchor contract.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("audit_ledger")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("seq", "bigint", (c) => c.notNull().unique().check(sql`seq > 0`))
    .addColumn("kind", "text", (c) => c.notNull().check(sql`kind <> ''`))
    .addColumn("subject_id", "text", (c) => c.notNull())
    // No foreign keys: a ledger row never depends on (nor blocks) rows that may change.
    .addColumn("actor_id", "text")
    .addColumn("parties", sql`text[]`, (c) => c.notNull().check(sql`array_position(parties, null) is null`))
    .addColumn("data", "jsonb", (c) => c.notNull().check(sql`jsonb_typeof(data) = 'object'`))
    .addColumn("created_at", sql`timestamptz(3)`, (c) => c.notNull())
    // unique: the chain cannot fork (two entries after one).
    .addColumn("prev_hash", "text", (c) => c.notNull().unique().check(sql`prev_hash ~ ${HASH}`))
    .addColumn("entry_hash", "text", (c) => c.notNull().unique().check(sql`entry_hash ~ ${HASH}`))
    .addCheckConstraint("audit_ledger_genesis", sql`(seq = 1) = (prev_hash = ${ZERO_HASH})`)
    .execute();
  await sql`create index audit_ledger_parties_idx on audit_ledger using gin (parties)`.execute(db);
  await db.schema.createIndex("audit_ledger_subject_idx").on("audit_ledger").columns(["subject_id", "seq"]).execute();

  // Append-only, whoever asks (the API's own role included): statement triggers, so even an UPDATE
  // or DELETE matching no row is refused, and TRUNCATE (which skips row triggers) too.
  await sql`
    create function audit_ledger_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'audit_ledger is append-only: % refused', tg_op
        using hint = 'ledger entries are never changed or removed; append a correcting entry instead';
    end
    $$`.execute(db);
  await sql`create trigger audit_ledger_no_change before update or delete on audit_ledger for each statement execute function audit_ledger_append_only()`.execute(db);
  await sql`create trigger audit_ledger_no_truncate before truncate on audit_ledger for each statement execute function audit_ledger_append_only()`.execute(db);

  await db.schema
    .createTable("ledger_anchors")
    .addColumn("first_seq", "bigint", (c) => c.notNull().check(sql`first_seq > 0`))
    .addColumn("last_seq", "bigint", (c) => c.notNull())
    .addColumn("merkle_root", "text", (c) => c.notNull().check(sql`merkle_root ~ ${HASH}`))
    .addColumn("head_hash", "text", (c) => c.notNull().check(sql`head_hash ~ ${HASH}`))
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("contract_address", "text", (c) => c.notNull().check(sql`contract_address ~ '^0x[0-9a-f]{40}$'`))
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('pending', 'confirmed', 'failed')`))
    .addColumn("tx_hash", "text")
    .addColumn("block_number", "bigint")
    .addColumn("anchor_index", "bigint")
    .addColumn("last_error", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("confirmed_at", "timestamptz")
    .addPrimaryKeyConstraint("ledger_anchors_pkey", ["first_seq", "last_seq"])
    .addCheckConstraint("ledger_anchors_range", sql`last_seq >= first_seq`)
    .addCheckConstraint("ledger_anchors_confirmed", sql`(status = 'confirmed') = (confirmed_at is not null and anchor_index is not null)`)
    .execute();
  // One live anchor per starting entry: ranges never overlap.
  await sql`create unique index ledger_anchors_live_first_key on ledger_anchors (first_seq) where status <> 'failed'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("ledger_anchors").ifExists().execute();
  await db.schema.dropTable("audit_ledger").ifExists().execute();
  await sql`drop function if exists audit_ledger_append_only()`.execute(db);
}
