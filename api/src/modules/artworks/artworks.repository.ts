import { type Insertable, type RawBuilder, sql, type Transaction, type Updateable } from "kysely";
import { lockNamed } from "../../db/locks.ts";
import type { Database, Db } from "../../db/database.ts";
import type { Artwork, ArtworkProvenance, ArtworksTable } from "./artworks.tables.ts";
import { containsPattern, type Page, paginate } from "../../lib/pagination.ts";

export type NewArtwork = Insertable<ArtworksTable>;

/** Inserts the artworks in one statement; the rows stored, in the order given. */
export async function insertMany(db: Db, artworks: NewArtwork[]): Promise<Artwork[]> {
  if (artworks.length === 0) return [];
  const stored = new Map((await db.insertInto("artworks").values(artworks).returningAll().execute()).map((a) => [a.id, a]));
  return artworks.map((a) => stored.get(a.id)!);
}

/** The artwork, soft-deleted ones included (certificates outlive deletion). */
export function findAny(db: Db, id: string): Promise<Artwork | undefined> {
  return db.selectFrom("artworks").selectAll().where("id", "=", id).executeTakeFirst();
}

// Artists' names and wallets come from the users module's `user_directory` view (UsersViews),
// joined in the artwork's statement: a UsersService call would be a second round trip per read.
export function findActive(db: Db, id: string): Promise<(Artwork & { artist_name: string }) | undefined> {
  return db
    .selectFrom("artworks")
    .innerJoin("user_directory as u", "u.id", "artworks.artist_id")
    .selectAll("artworks")
    .select("u.display_name as artist_name")
    .where("artworks.id", "=", id)
    .where("artworks.deleted_at", "is", null)
    .executeTakeFirst();
}

/**
 * An active artwork (a removed one too with `includeRemoved`) with its artist's name, its off-chain
 * provenance (in time order) and, when `transfersOf` is given, its certificate's transfers (the
 * indexer's subquery for the artwork's token id), in one statement: the detail page's reads
 * without a round trip per part.
 */
export async function findWithProvenance<T = never>(
  db: Db,
  id: string,
  transfersOf?: (tokenId: RawBuilder<bigint | null>) => RawBuilder<T[]>,
  options: { includeRemoved?: boolean } = {},
): Promise<(Artwork & { artist_name: string; provenance: ArtworkProvenance[]; transfers: T[] }) | undefined> {
  let query = db
    .selectFrom("artworks")
    .innerJoin("user_directory as u", "u.id", "artworks.artist_id")
    .selectAll("artworks")
    .select("u.display_name as artist_name")
    .select(
      sql<ProvenanceJson[]>`(
        select coalesce(json_agg(json_build_object('id', p.id, 'artwork_id', p.artwork_id, 'event', p.event, 'actor_id', p.actor_id, 'tx_hash', p.tx_hash,
                                                   'details', p.details, 'occurred_at', p.occurred_at) order by p.occurred_at, p.id), '[]'::json)
        from artwork_provenance p where p.artwork_id = artworks.id)`.as("provenance_json"),
    )
    .select((transfersOf ? transfersOf(sql<bigint | null>`artworks.token_id`) : sql<T[]>`'[]'::json`).as("transfers"))
    .where("artworks.id", "=", id);
  if (!options.includeRemoved) query = query.where("artworks.deleted_at", "is", null);
  const row = await query.executeTakeFirst();
  if (!row) return undefined;
  const { provenance_json, ...artwork } = row;
  return { ...artwork, provenance: provenance_json.map((p) => ({ ...p, id: BigInt(p.id), occurred_at: new Date(p.occurred_at) })) } as Artwork & {
    artist_name: string;
    provenance: ArtworkProvenance[];
    transfers: T[];
  };
}

type ProvenanceJson = Omit<ArtworkProvenance, "id" | "occurred_at"> & { id: number | string; occurred_at: string };

/** Row lock for a change decided on the current state; only inside a transaction the service opened. */
export function lockAny(trx: Transaction<Database>, id: string): Promise<Artwork | undefined> {
  return trx.selectFrom("artworks").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

/** Row lock that other shared locks do not wait for, only exclusive ones (a move that needs the artwork to stand still). */
export function lockShared(trx: Transaction<Database>, id: string): Promise<Artwork | undefined> {
  return trx.selectFrom("artworks").selectAll().where("id", "=", id).forShare().executeTakeFirst();
}

export function update(db: Db, id: string, changes: Updateable<ArtworksTable>): Promise<Artwork | undefined> {
  return db
    .updateTable("artworks")
    .set({ ...changes, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
}

export interface ArtworkFilter {
  medium?: string;
  priceMinCents?: bigint;
  priceMaxCents?: bigint;
  artistId?: string;
  verified?: boolean;
  forSale?: boolean;
  q?: string;
}

export async function search(db: Db, filter: ArtworkFilter, page: Page): Promise<{ rows: Artwork[]; total: number }> {
  let query = db.selectFrom("artworks").where("deleted_at", "is", null);
  if (filter.medium) query = query.where("medium", "ilike", containsPattern(filter.medium));
  if (filter.priceMinCents !== undefined) query = query.where("price_cents", ">=", filter.priceMinCents);
  if (filter.priceMaxCents !== undefined) query = query.where("price_cents", "<=", filter.priceMaxCents);
  if (filter.artistId) query = query.where("artist_id", "=", filter.artistId);
  if (filter.verified !== undefined) query = query.where("status", filter.verified ? "=" : "<>", "certified");
  if (filter.forSale !== undefined) query = query.where("for_sale", "=", filter.forSale);
  if (filter.q) {
    const pattern = containsPattern(filter.q);
    query = query.where((eb) => eb.or([eb("title", "ilike", pattern), eb("description", "ilike", pattern), eb("medium", "ilike", pattern)]));
  }
  if (filter.medium || filter.q) return paginate(query, page, (q) => q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"));
  // Every other filter is a column of artworks_listing_idx: the page is found in the index alone (a
  // deep page skips entries, not rows), then only its rows are read ("deferred join"); a price range
  // is counted in artworks_price_idx.
  const { rows: ids, total } = await paginate(query, page, (q) => q.select("id").orderBy("created_at", "desc").orderBy("id", "desc"));
  if (ids.length === 0) return { rows: [], total };
  const rows = await db.selectFrom("artworks").selectAll().where("id", "in", ids.map((r) => r.id)).orderBy("created_at", "desc").orderBy("id", "desc").execute();
  return { rows, total };
}

export interface ProvenanceEntry {
  artwork_id: string;
  event: string;
  actor_id?: string | null;
  tx_hash?: string | null;
  details?: Record<string, string | number> | null;
  occurred_at?: Date;
}

export function insertProvenance(db: Db, entry: ProvenanceEntry): Promise<void> {
  return insertProvenanceEntries(db, [entry]);
}

/** Provenance entries in one statement (`occurred_at` defaults to now). */
export async function insertProvenanceEntries(db: Db, entries: ProvenanceEntry[]): Promise<void> {
  if (entries.length === 0) return;
  await db
    .insertInto("artwork_provenance")
    .values(
      entries.map((entry) => ({
        artwork_id: entry.artwork_id,
        event: entry.event,
        actor_id: entry.actor_id ?? null,
        tx_hash: entry.tx_hash ?? null,
        details: entry.details ? JSON.stringify(entry.details) : null,
        occurred_at: entry.occurred_at ?? sql<Date>`now()`,
      })),
    )
    // `certified` is unique per artwork: a second confirmation records nothing.
    .onConflict((oc) => oc.doNothing())
    .execute();
}

// ---- certification pipeline state ----

/**
 * The pending artworks of `ids`, each with its artist's wallet (the token's recipient), in one
 * statement: undefined where not pending, in the order of `ids`.
 */
export async function findPendingWithArtistWallets(db: Db, ids: readonly string[]): Promise<((Artwork & { artist_wallet: string }) | undefined)[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom("artworks")
    .innerJoin("user_directory as u", "u.id", "artworks.artist_id")
    .selectAll("artworks")
    .select("u.wallet_address as artist_wallet")
    .where("artworks.id", "in", [...new Set(ids)])
    .where("artworks.status", "=", "pending_certification")
    .execute();
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => byId.get(id));
}

/** The artwork with its artist's wallet (the token's recipient). */
export function findWithArtistWallet(db: Db, id: string): Promise<(Artwork & { artist_wallet: string }) | undefined> {
  return db
    .selectFrom("artworks")
    .innerJoin("user_directory as u", "u.id", "artworks.artist_id")
    .selectAll("artworks")
    .select("u.wallet_address as artist_wallet")
    .where("artworks.id", "=", id)
    .executeTakeFirst();
}

/** Artworks whose certificate was minted within [from, to) (`certified_at` is the block's time); deleted ones count, their certificate stays. */
export async function countCertified(db: Db, range: { from: Date; to: Date }): Promise<number> {
  const row = await db
    .selectFrom("artworks")
    .select(sql<string>`count(*)`.as("n"))
    .where("status", "=", "certified")
    .where("certified_at", ">=", range.from)
    .where("certified_at", "<", range.to)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A failed download retried in `delayMs`: its error kept, the sweep's deadline moved past the retry. */
export async function scheduleImageRetry(db: Db, id: string, delayMs: number, error: string): Promise<void> {
  await db
    .updateTable("artworks")
    .set({ image_fetch_deadline: sql<Date>`now() + ${delayMs} * interval '1 millisecond'`, image_fetch_error: error })
    .where("id", "=", id)
    .where("status", "=", "pending_certification")
    .execute();
}

/** Marks the artwork fractionalized (its holder's ask ends: its shares are sold, not the work), or no longer. */
export async function setFractionalized(db: Db, id: string, fractionalized: boolean): Promise<void> {
  await db.updateTable("artworks").set(fractionalized ? { fractionalized_at: new Date(), for_sale: false } : { fractionalized_at: null }).where("id", "=", id).execute();
}

/** Records the fetched image unless another attempt recorded one first; the image as it then is. */
export async function setImageOnce(
  db: Db,
  id: string,
  image: { image_storage_key: string; image_sha256: string; image_content_type: string; image_bytes: number },
): Promise<Pick<Artwork, "image_storage_key" | "image_sha256" | "image_content_type" | "image_bytes">> {
  const columns = ["image_storage_key", "image_sha256", "image_content_type", "image_bytes"] as const;
  const updated = await db
    .updateTable("artworks")
    .set({ ...image, image_fetch_lease_until: null, image_fetch_deadline: null })
    .where("id", "=", id)
    .where("image_sha256", "is", null)
    .returning(columns)
    .executeTakeFirst();
  return updated ?? (await db.selectFrom("artworks").select(columns).where("id", "=", id).executeTakeFirstOrThrow());
}

/** Whether the artwork still waits for its image_url download (pending, no image stored). */
export async function needsImage(db: Db, id: string): Promise<boolean> {
  const row = await db.selectFrom("artworks").select(["status", "image_sha256"]).where("id", "=", id).executeTakeFirst();
  return row?.status === "pending_certification" && row.image_sha256 === null;
}

export type ImageFetchClaim = { kind: "claimed"; artwork: Artwork } | { kind: "busy" } | { kind: "not_needed" };

/**
 * Starts a download of the artwork's image_url when its artist has fewer than `perUser` downloads
 * in flight (any process): counts the attempt and leases it (`leaseMs` for the sweep,
 * `fetchLeaseMs` for the artist's count). `busy` at the cap; `not_needed` when the artwork is not
 * pending or has its image. Counting and claiming are serialized per artist by an advisory lock.
 */
export async function claimImageFetch(
  trx: Transaction<Database>,
  id: string,
  options: { perUser: number; fetchLeaseMs: number; leaseMs: number },
): Promise<ImageFetchClaim> {
  const row = await trx.selectFrom("artworks").select(["artist_id", "status", "image_sha256"]).where("id", "=", id).executeTakeFirst();
  if (!row || row.status !== "pending_certification" || row.image_sha256 !== null) return { kind: "not_needed" };
  await lockNamed(trx, `artwork_image_fetch:${row.artist_id}`);
  const inFlight = await trx
    .selectFrom("artworks")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .where("artist_id", "=", row.artist_id)
    .where("id", "<>", id)
    .where("image_fetch_lease_until", ">", sql<Date>`now()`)
    .executeTakeFirstOrThrow();
  if (Number(inFlight.n) >= options.perUser) return { kind: "busy" };
  const artwork = await trx
    .updateTable("artworks")
    .set({
      image_fetch_attempts: sql<number>`image_fetch_attempts + 1`,
      image_fetch_deadline: sql<Date>`now() + ${options.leaseMs} * interval '1 millisecond'`,
      image_fetch_lease_until: sql<Date>`now() + ${options.fetchLeaseMs} * interval '1 millisecond'`,
    })
    .where("id", "=", id)
    .where("status", "=", "pending_certification")
    .where("image_sha256", "is", null)
    .returningAll()
    .executeTakeFirst();
  return artwork ? { kind: "claimed", artwork } : { kind: "not_needed" };
}

/** The download ended (stored or failed): it no longer counts against the artist's cap. */
export async function releaseImageFetch(db: Db, id: string): Promise<void> {
  await db.updateTable("artworks").set({ image_fetch_lease_until: null }).where("id", "=", id).execute();
}

/** pending -> failed; undefined when it was not pending (certified meanwhile, or already failed). */
export function markFailed(db: Db, id: string, reason: string): Promise<Artwork | undefined> {
  return db
    .updateTable("artworks")
    .set({
      status: "certification_failed",
      certification_error: reason,
      failed_at: sql<Date>`now()`,
      image_fetch_deadline: null,
      updated_at: sql<Date>`now()`,
    })
    .where("id", "=", id)
    .where("status", "=", "pending_certification")
    .returningAll()
    .executeTakeFirst();
}

/** The chain's facts of one artwork's certificate (from the indexer's view, or read from the chain). */
export interface CertifiedFacts {
  id: string;
  certificate_hash: string;
  token_id: bigint;
  certified_at: Date;
  tx_hash: string;
}

/** The facts as JSON for `jsonb_to_recordset` (one statement for many rows). */
function factsJson(facts: CertifiedFacts[]): string {
  return JSON.stringify(
    facts.map((f) => ({ id: f.id, certificate_hash: f.certificate_hash, token_id: f.token_id.toString(), certified_at: f.certified_at.toISOString(), tx_hash: f.tx_hash })),
  );
}

/** -> certified with the chain's facts, in one statement; the ids changed (not those certified already). */
export async function markCertified(db: Db, facts: CertifiedFacts[]): Promise<{ id: string; artist_id: string }[]> {
  if (facts.length === 0) return [];
  const rows = factsJson(facts);
  const { rows: changed } = await sql<{ id: string; artist_id: string }>`
    update artworks as a set
      status = 'certified',
      certificate_hash = c.certificate_hash,
      token_id = c.token_id::numeric,
      certified_at = c.certified_at,
      certification_error = null,
      failed_at = null,
      updated_at = now()
    from jsonb_to_recordset(${rows}::jsonb) as c(id text, certificate_hash text, token_id text, certified_at timestamptz, tx_hash text)
    where a.id = c.id and a.status <> 'certified'
    returning a.id, a.artist_id`.execute(db);
  return changed;
}

export function insertCertifiedProvenance(db: Db, entries: { artwork_id: string; tx_hash: string }[]): Promise<void> {
  return insertProvenanceEntries(db, entries.map((e) => ({ artwork_id: e.artwork_id, event: "certified", tx_hash: e.tx_hash })));
}

/**
 * The indexer now shows these certificates: the artworks and their `certified` entries take the
 * indexer's facts (the same as the chain's, unless a reorg moved the certificate to another
 * transaction since). That they are indexed is their chain operation's fact.
 */
export async function markIndexed(db: Db, facts: CertifiedFacts[]): Promise<void> {
  if (facts.length === 0) return;
  const rows = factsJson(facts);
  await sql`
    update artworks as a set
      certificate_hash = c.certificate_hash,
      token_id = c.token_id::numeric,
      certified_at = c.certified_at
    from jsonb_to_recordset(${rows}::jsonb) as c(id text, certificate_hash text, token_id text, certified_at timestamptz)
    where a.id = c.id and a.status = 'certified'
      and (a.certificate_hash, a.token_id, a.certified_at) is distinct from (c.certificate_hash, c.token_id::numeric, c.certified_at)`.execute(db);
  await sql`
    update artwork_provenance as p set tx_hash = c.tx_hash
    from jsonb_to_recordset(${rows}::jsonb) as c(id text, tx_hash text)
    where p.artwork_id = c.id and p.event = 'certified' and p.tx_hash is distinct from c.tx_hash`.execute(db);
}

/**
 * Pending artworks still waiting for their image whose download should have moved on a while ago
 * (its process died, or its job was lost): given a new deadline `leaseMs` ahead so that only one
 * sweeper re-enqueues each. (Once the image is stored, the chain operation's own lease takes over.)
 */
export async function reclaimLostImageFetches(trx: Transaction<Database>, graceMs: number, leaseMs: number, limit: number): Promise<string[]> {
  const rows = await trx
    .updateTable("artworks")
    .set({ image_fetch_deadline: sql<Date>`now() + ${leaseMs} * interval '1 millisecond'` })
    .where("id", "in", (eb) =>
      eb
        .selectFrom("artworks")
        .select("id")
        .where("status", "=", "pending_certification")
        .where("image_sha256", "is", null)
        .where("image_fetch_deadline", "<", sql<Date>`now() - ${graceMs} * interval '1 millisecond'`)
        .orderBy("image_fetch_deadline")
        .limit(limit)
        .forUpdate()
        .skipLocked(),
    )
    .returning("id")
    .execute();
  return rows.map((r) => r.id);
}

/** The latest `n` certified artworks (by the certifying block's time), with when their certification was asked for. */
export function latestCertified(db: Db, n: number): Promise<Pick<Artwork, "id" | "certification_requested_at">[]> {
  return db
    .selectFrom("artworks")
    .select(["id", "certification_requested_at"])
    .where("status", "=", "certified")
    .orderBy("certified_at", "desc")
    .limit(n)
    .execute();
}
