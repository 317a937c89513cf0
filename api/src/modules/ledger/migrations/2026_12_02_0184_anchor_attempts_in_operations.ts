import { type Kysely, sql } from "kysely";

// One row per fact (issue 39): an anchoring's failure and the time of its confirmation are its
// chain operation's (`last_error`, `confirmed_at`), which ChainOperations writes as the attempt
// fails or the confirmation lands; `ledger_anchors` kept copies that nothing read. An operation
// that lacks what its anchor kept gets it first; then the copies go. The anchor keeps the range,
// its root and head, where it is sent, its state and the chain's answer (anchor_index, block_number),
// which the ledger's entries are joined with.

const KEY = sql`'ledger_anchor:' || a.first_seq || '-' || a.last_seq`;

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    update chain_operations o set confirmed_at = a.confirmed_at
    from ledger_anchors a
    where o.key = ${KEY} and o.status = 'confirmed' and o.confirmed_at is null and a.confirmed_at is not null`.execute(db);
  await sql`
    update chain_operations o set last_error = a.last_error
    from ledger_anchors a
    where o.key = ${KEY} and o.status = 'failed' and o.last_error is null and a.last_error is not null`.execute(db);
  await sql`alter table ledger_anchors drop column last_error, drop column confirmed_at`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table ledger_anchors add column last_error text, add column confirmed_at timestamptz`.execute(db);
  await sql`
    update ledger_anchors a set
      confirmed_at = case when a.status = 'confirmed' then o.confirmed_at end,
      last_error = case when a.status = 'failed' then o.last_error end
    from chain_operations o where o.key = ${KEY}`.execute(db);
}
