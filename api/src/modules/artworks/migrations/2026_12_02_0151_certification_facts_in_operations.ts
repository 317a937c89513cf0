import { type Kysely, sql } from "kysely";

// A certification's chain phase is its chain operation's (`certify:<artwork_id>` in
// chain_operations: the transaction, the attempts, the lease, the retries' errors, when it was
// confirmed and indexed); the artwork stops copying it. It keeps its status, the certificate's facts,
// `certification_requested_at` (the estimate's start), `certification_error` (why it failed, with
// `certification_failed` only) and the image download's own progress, which comes before the
// operation exists: `image_fetch_attempts`, `image_fetch_error`, `image_fetch_deadline` (the sweep's)
// beside `image_fetch_lease_until` (the artist's cap).
//
// Nothing is lost: a certified artwork, or a pending one with its image, that has no operation (rows
// older than the operations) gets one carrying its transaction, attempts and times; the attempts
// and errors the operation does not account for were the downloads'.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("artworks")
    .addColumn("image_fetch_attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("image_fetch_error", "text")
    .addColumn("image_fetch_deadline", "timestamptz")
    .execute();

  // Certified without an operation: a confirmed one, with the facts it would have recorded (`result`).
  await sql`
    insert into chain_operations (key, kind, payload, status, tx_hash, attempts, result, confirmed_from, confirmed_at, indexed_at, created_at)
    select 'certify:' || a.id, 'certify', jsonb_build_object('artwork_id', a.id), 'confirmed', a.certification_tx_hash, a.certification_attempts,
           jsonb_build_object('artworkId', a.id, 'tokenId', a.token_id::text, 'certificateHash', a.certificate_hash,
                              'certifiedAt', to_char(a.certified_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'txHash', a.certification_tx_hash),
           case when a.certification_indexed_at is null then 'chain' else 'indexer' end,
           coalesce(a.certification_confirmed_at, a.certified_at), a.certification_indexed_at, a.certification_requested_at
    from artworks a
    where a.status = 'certified' and not exists (select 1 from chain_operations o where o.key = 'certify:' || a.id)`.execute(db);
  // Pending with its image but without an operation (nothing would send it): requested, due now.
  await sql`
    insert into chain_operations (key, kind, payload, status, tx_hash, attempts, due_at, created_at)
    select 'certify:' || a.id, 'certify', jsonb_build_object('artwork_id', a.id),
           case when a.certification_tx_hash is null then 'pending' else 'sent' end, a.certification_tx_hash, a.certification_attempts,
           now(), a.certification_requested_at
    from artworks a
    where a.status = 'pending_certification' and a.image_sha256 is not null
      and not exists (select 1 from chain_operations o where o.key = 'certify:' || a.id)`.execute(db);

  // The downloads' share of the attempts and errors: what the operation does not account for.
  await sql`
    update artworks a set
      image_fetch_attempts = greatest(0, a.certification_attempts - coalesce(o.attempts, 0)),
      image_fetch_error = case when a.status <> 'certification_failed' and a.certification_error is distinct from o.last_error then a.certification_error end,
      image_fetch_deadline = case when a.status = 'pending_certification' and a.image_sha256 is null then coalesce(a.certification_lease_until, now()) end
    from artworks x left join chain_operations o on o.key = 'certify:' || x.id
    where x.id = a.id`.execute(db);
  // The reason the answer gives, for a failed certification only.
  await sql`update artworks set certification_error = null where status <> 'certification_failed' and certification_error is not null`.execute(db);
  await sql`alter table artworks add constraint artworks_error_of_failure check (status = 'certification_failed' or certification_error is null)`.execute(db);

  await db.schema
    .alterTable("artworks")
    .dropColumn("certification_tx_hash")
    .dropColumn("certification_attempts")
    .dropColumn("certification_lease_until")
    .dropColumn("certification_confirmed_at")
    .dropColumn("certification_indexed_at")
    .execute();
  // The sweep's read (only artworks waiting for their image have a deadline); the estimate's latest
  // certifications and the report's count by the certifying block's time.
  await sql`create index artworks_image_fetch_deadline_idx on artworks (image_fetch_deadline) where image_fetch_deadline is not null`.execute(db);
  await sql`create index artworks_certified_idx on artworks (certified_at desc) include (certification_requested_at) where status = 'certified'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists artworks_certified_idx`.execute(db);
  await sql`drop index if exists artworks_image_fetch_deadline_idx`.execute(db);
  await db.schema
    .alterTable("artworks")
    .addColumn("certification_tx_hash", "text")
    .addColumn("certification_attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("certification_lease_until", "timestamptz")
    .addColumn("certification_confirmed_at", "timestamptz")
    .addColumn("certification_indexed_at", "timestamptz")
    .execute();
  await sql`alter table artworks drop constraint artworks_error_of_failure`.execute(db);
  await sql`
    update artworks a set
      certification_tx_hash = coalesce(o.result->>'txHash', o.tx_hash),
      certification_attempts = a.image_fetch_attempts + coalesce(o.attempts, 0),
      certification_lease_until = coalesce(a.image_fetch_deadline, o.lease_until, o.due_at),
      certification_confirmed_at = o.confirmed_at,
      certification_indexed_at = o.indexed_at,
      certification_error = coalesce(a.certification_error, case when a.status = 'pending_certification' then coalesce(o.last_error, a.image_fetch_error) end)
    from artworks x left join chain_operations o on o.key = 'certify:' || x.id
    where x.id = a.id`.execute(db);
  await sql`create index artworks_uncertified_idx on artworks (certification_lease_until) where status <> 'certified'`.execute(db);
  await sql`create index artworks_confirmed_idx on artworks (certification_confirmed_at desc) where certification_confirmed_at is not null`.execute(db);
  await sql`create index artworks_unindexed_idx on artworks (id) where status = 'certified' and certification_indexed_at is null`.execute(db);
  await db.schema.alterTable("artworks").dropColumn("image_fetch_attempts").dropColumn("image_fetch_error").dropColumn("image_fetch_deadline").execute();
}
