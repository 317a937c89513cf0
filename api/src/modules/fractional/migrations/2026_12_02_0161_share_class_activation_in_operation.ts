import { type Kysely, sql } from "kysely";

// One row per fact (issue 39): when a share class went on-chain is its chain operation's
// confirmation (`share_class:<artwork>`, confirmed_at), no longer a copy on the class
// (`fractional_artworks.activated_at`, written beside it and read by nothing). An active class whose
// operation lacks the time, or a class activated without an operation (written outside the service),
// gives its operation the class's time first.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    update chain_operations o set confirmed_at = f.activated_at
    from fractional_artworks f
    where o.key = 'share_class:' || f.artwork_id and f.status = 'active' and f.activated_at is not null and o.confirmed_at is null`.execute(db);
  await sql`
    insert into chain_operations (key, kind, payload, status, result, confirmed_from, confirmed_at, indexed_at, created_at)
    select 'share_class:' || f.artwork_id, 'fractional_create_class',
           jsonb_build_object('artwork_id', f.artwork_id, 'token_id', f.token_id::text, 'cap', f.total_shares::text),
           'confirmed', jsonb_build_object('tokenId', f.token_id::text), 'indexer',
           coalesce(f.activated_at, f.updated_at), coalesce(f.activated_at, f.updated_at), f.created_at
    from fractional_artworks f
    where f.status = 'active' and not exists (select 1 from chain_operations o where o.key = 'share_class:' || f.artwork_id)`.execute(db);
  await sql`alter table fractional_artworks drop column activated_at`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table fractional_artworks add column activated_at timestamptz`.execute(db);
  await sql`
    update fractional_artworks f set activated_at = o.confirmed_at
    from chain_operations o where o.key = 'share_class:' || f.artwork_id and f.status = 'active'`.execute(db);
}
