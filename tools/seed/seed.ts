/**
 * Fills a platform's database and chain with a marketplace's worth of data, fast: users, certified
 * artworks with provenance, active listings, fractionalized artworks (share classes created on
 * ArtShares), platform events and community posts. Rows go in with multi-row
 * `unnest` inserts of a few thousand at a time; certificates are minted with `certifyBatch`, many
 * per transaction, through the API's own Relayer (nonces shared with running workers through the
 * database), and the artworks become `certified` with the chain's facts (token id, block time),
 * each with its chain operation `certify:<id>` confirmed with the transaction, then `indexed` once
 * the indexer shows them: chain, indexer and database agree.
 *
 * The data is what the API itself would write for the same calls (the same ids, certificate
 * documents and hashes, token URIs and provenance entries), minus the webhooks and rewards of
 * those calls: seeding is silent. Every seeded user is custodial (an address of the platform's HD
 * wallet), so seeded artists can list, sell and transfer like any other.
 *
 * An interrupted run leaves at most one chunk of artworks `pending_certification` (some perhaps
 * minted already): `POST /v1/admin/artworks/:id/verify` certifies them through the usual path
 * (the contract never mints an artwork twice).
 */
import { createHash, randomBytes } from "node:crypto";
import { sql } from "kysely";
import { type Address, decodeEventLog, getAddress, type Hex } from "viem";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import { IndexedCertificates } from "../../api/src/chain/indexer-views.ts";
import { createChainClients } from "../../api/src/chain/clients.ts";
import { CustodyWallet } from "../../api/src/chain/custody.ts";
import { Relayer } from "../../api/src/chain/relayer.ts";
import { createDb } from "../../api/src/db/connection.ts";
import type { Db } from "../../api/src/db/database.ts";
import { newId } from "../../api/src/lib/ids.ts";
import { LocalDiskStorage } from "../../api/src/lib/storage.ts";
import { insertCertifiedProvenance, markCertified, markIndexed, type CertifiedFacts } from "../../api/src/modules/artworks/artworks.repository.ts";
import { canonicalDocument, certificateDocument, certificateHashOf } from "../../api/src/modules/artworks/certificate-document.ts";
import { ArtworkLinks } from "../../api/src/modules/artworks/artwork-links.ts";

export interface SeedCounts {
  users: number;
  artworks: number;
  listings: number;
  /** Artworks fractionalized (a share class on ArtShares each), none of them listed. */
  fractional: number;
  /** Platform events, from three months ago to a year ahead. */
  events: number;
  posts: number;
}

export interface SeedTarget {
  databaseUrl: string;
  rpcUrl: string;
  chainId: number;
  /** Holds ArtCertificate's CERTIFIER_ROLE (the API's relayer). */
  relayerPrivateKey: Hex;
  custodyMnemonic: string;
  artCertificate: Address;
  /** ArtShares, whose SHARE_ISSUER_ROLE the relayer holds: needed when fractional artworks are seeded. */
  artShares?: Address | null;
  /** The API's PUBLIC_BASE_URL: token URIs point there. */
  publicBaseUrl: string;
  /** The API's STORAGE_DIR: the seeded artworks share one image stored there. */
  storageDir: string;
  /** The indexer's views schema; null = do not wait for the indexer (artworks stay "confirmed from the chain"). */
  viewsSchema: string | null;
  royaltyBps: number;
}

export interface SeedOptions {
  /** Certifications per certifyBatch transaction (default 48: about 0.26 M gas each, 20 % headroom, under the 2^24 gas cap of a transaction, EIP-7825). */
  mintBatch?: number;
  /** certifyBatch transactions on their way at once. */
  mintInFlight?: number;
  /** Rows per insert statement. */
  chunk?: number;
  log?: (line: string) => void;
}

export interface SeedReport {
  counts: SeedCounts;
  seconds: { users: number; artworks: number; indexer: number; listings: number; fractional: number; events: number; posts: number; total: number };
  transactions: number;
}

const MEDIUMS = ["Oil on canvas", "Acrylic", "Watercolor", "Digital", "Photography", "Charcoal", "Bronze", "Ink on paper", "Mixed media", "Gouache"];
const TAGS = ["abstract", "portrait", "landscape", "street", "minimal", "color", "study", "nature", "city", "process", "sketch", "light"];
/** A 1×1 PNG: every seeded artwork shows it (and hashes it into its certificate). */
const PIXEL_PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");
const DAY_MS = 86_400_000;

export async function seedPlatform(target: SeedTarget, counts: SeedCounts, options: SeedOptions = {}): Promise<SeedReport> {
  const log = options.log ?? (() => {});
  const chunk = options.chunk ?? 5_000;
  const started = Date.now();
  const seconds = { users: 0, artworks: 0, indexer: 0, listings: 0, fractional: 0, events: 0, posts: 0, total: 0 };
  const lap = (from: number) => Math.round((Date.now() - from) / 100) / 10;
  const db = createDb(target.databaseUrl, 4);
  try {
    // A tag of this run keeps usernames and emails unique across runs on one database.
    const run = randomBytes(3).toString("hex");
    const chain = seedChain(db, target);
    let t = Date.now();
    const users = await seedUsers(db, target, run, counts.users, chunk);
    seconds.users = lap(t);
    log(`${users.length} users in ${seconds.users} s`);

    t = Date.now();
    const artists = users.filter((u) => u.role === "artist");
    const { artworks, transactions } = await seedArtworks(db, target, chain, artists, counts.artworks, { ...options, chunk, log });
    seconds.artworks = lap(t);
    log(`${artworks.length} artworks certified in ${transactions} transactions, ${seconds.artworks} s`);

    t = Date.now();
    if (target.viewsSchema) await waitForIndexer(db, target.viewsSchema, artworks, log);
    seconds.indexer = lap(t);

    t = Date.now();
    const listings = await seedListings(db, artworks, Math.min(counts.listings, artworks.length), chunk);
    seconds.listings = lap(t);
    log(`${listings} listings in ${seconds.listings} s`);

    t = Date.now();
    // The last artworks of the run (the first ones are listed): a listed artwork is not also fractionalized.
    const fractional = await seedFractional(db, target, chain, artworks.slice(listings).slice(-counts.fractional), { ...options, chunk });
    seconds.fractional = lap(t);
    log(`${fractional} fractionalized artworks in ${seconds.fractional} s`);

    t = Date.now();
    const events = await seedEvents(db, artists, counts.events, chunk);
    seconds.events = lap(t);
    log(`${events} events in ${seconds.events} s`);

    t = Date.now();
    const posts = await seedPosts(db, users, artworks, counts.posts, chunk);
    seconds.posts = lap(t);
    log(`${posts} posts in ${seconds.posts} s`);

    await sql`analyze`.execute(db);
    seconds.total = lap(started);
    return { counts: { users: users.length, artworks: artworks.length, listings, fractional, events, posts }, seconds, transactions };
  } finally {
    await db.destroy();
  }
}

interface SeedChain {
  publicClient: ReturnType<typeof createChainClients>["publicClient"];
  relayer: Relayer;
}

/** The chain clients and the API's Relayer every on-chain step of a run sends through (nonces shared with running workers through the database). */
function seedChain(db: Db, target: SeedTarget): SeedChain {
  const { publicClient, relayerAccount, chain } = createChainClients({ rpcUrl: target.rpcUrl, chainId: target.chainId, relayerPrivateKey: target.relayerPrivateKey, timeoutMs: 60_000 });
  return { publicClient, relayer: new Relayer({ publicClient, account: relayerAccount, chain, sharedNonces: db, receiptTimeoutMs: 300_000 }) };
}

interface SeededUser {
  id: string;
  role: "artist" | "collector";
  wallet: Address;
}

/** One in ten is an artist (at least one); custodial wallets at fresh indexes of the platform's HD wallet. */
async function seedUsers(db: Db, target: SeedTarget, run: string, count: number, chunk: number): Promise<SeededUser[]> {
  const custody = new CustodyWallet(target.custodyMnemonic);
  const users: SeededUser[] = [];
  for (let from = 0; from < count; from += chunk) {
    const n = Math.min(chunk, count - from);
    const { rows } = await sql<{ n: number }>`select nextval('custody_address_index_seq')::int as n from generate_series(1, ${n}::int)`.execute(db);
    const batch = rows.map((r, i) => {
      const k = from + i;
      return {
        id: newId("user"),
        username: `seed_${run}_${k}`,
        role: (k % 10 === 0 ? "artist" : "collector") as SeededUser["role"],
        index: r.n,
        wallet: custody.addressAt(r.n),
        created: new Date(Date.now() - ((count - k) / count) * 365 * DAY_MS),
      };
    });
    await sql`
      insert into users (id, username, display_name, email, role, status, wallet_address, wallet_kind, custody_index, created_at, updated_at)
      select id, username, username, username || '@seed.example', role, 'active', wallet, 'custodial', idx, created, created
      from unnest(${batch.map((u) => u.id)}::text[], ${batch.map((u) => u.username)}::text[], ${batch.map((u) => u.role)}::text[],
                  ${batch.map((u) => u.wallet)}::text[], ${batch.map((u) => u.index)}::int[], ${batch.map((u) => u.created)}::timestamptz[])
        as t(id, username, role, wallet, idx, created)`.execute(db);
    users.push(...batch.map(({ id, role, wallet }) => ({ id, role, wallet })));
  }
  return users;
}

interface SeededArtwork {
  id: string;
  artistId: string;
  wallet: Address;
  tokenId: bigint;
  priceCents: number;
}

/**
 * Artworks chunk by chunk: inserted `pending_certification` with their `created` provenance, minted
 * in certifyBatch transactions (several on their way at once), then `certified` with the facts of
 * the receipts, the `certified` provenance entry and the artists' counts, in one transaction.
 */
async function seedArtworks(
  db: Db,
  target: SeedTarget,
  { publicClient, relayer }: SeedChain,
  artists: SeededUser[],
  count: number,
  options: SeedOptions & { chunk: number; log: (line: string) => void },
): Promise<{ artworks: SeededArtwork[]; transactions: number }> {
  if (count > 0 && artists.length === 0) throw new Error("artworks need at least one artist: seed users too");
  const mintBatch = options.mintBatch ?? 48;
  const inFlight = options.mintInFlight ?? 4;
  const sha256 = createHash("sha256").update(PIXEL_PNG).digest("hex");
  const imageKey = `artworks/seed/${sha256}.png`;
  await new LocalDiskStorage(target.storageDir).put(imageKey, PIXEL_PNG, "image/png");
  const links = new ArtworkLinks(() => target.publicBaseUrl.replace(/\/$/, ""));
  const artworks: SeededArtwork[] = [];
  let transactions = 0;
  const started = Date.now();

  for (let from = 0; from < count; from += options.chunk) {
    const n = Math.min(options.chunk, count - from);
    const batch = Array.from({ length: n }, (_, i) => {
      const k = from + i;
      const artist = artists[k % artists.length]!;
      const dimensions = { width: 200 + (k % 1800), height: 150 + ((k * 7) % 1500), unit: "mm" as const };
      const row = {
        id: newId("artwork"),
        artist_id: artist.id,
        title: `Study no. ${k + 1}`,
        year: 1950 + (k % 76),
        medium: MEDIUMS[k % MEDIUMS.length]!,
        dimensions,
      };
      const hash = certificateHashOf(canonicalDocument(certificateDocument(row, sha256)));
      return { ...row, artist, hash, priceCents: 5_000 + ((k * 7_919) % 2_000_000), created: new Date(Date.now() - ((count - k) / count) * 300 * DAY_MS) };
    });
    await db.transaction().execute(async (trx) => {
      await sql`
        insert into artworks (id, artist_id, title, year, medium, dimensions, description, price_cents, for_sale, status,
                              image_storage_key, image_sha256, image_content_type, image_bytes, certification_requested_at, created_at, updated_at)
        select id, artist_id, title, year, medium, dimensions, null, price, false, 'pending_certification',
               ${imageKey}, ${sha256}, 'image/png', ${PIXEL_PNG.length}, created, created, created
        from unnest(${batch.map((a) => a.id)}::text[], ${batch.map((a) => a.artist_id)}::text[], ${batch.map((a) => a.title)}::text[],
                    ${batch.map((a) => a.year)}::int[], ${batch.map((a) => a.medium)}::text[], ${batch.map((a) => JSON.stringify(a.dimensions))}::jsonb[],
                    ${batch.map((a) => a.priceCents)}::bigint[], ${batch.map((a) => a.created)}::timestamptz[])
          as t(id, artist_id, title, year, medium, dimensions, price, created)`.execute(trx);
      await sql`
        insert into artwork_provenance (artwork_id, event, actor_id, occurred_at)
        select id, 'created', artist_id, created
        from unnest(${batch.map((a) => a.id)}::text[], ${batch.map((a) => a.artist_id)}::text[], ${batch.map((a) => a.created)}::timestamptz[]) as t(id, artist_id, created)`.execute(trx);
    });

    const facts: CertifiedFacts[] = [];
    const groups: (typeof batch)[] = [];
    for (let i = 0; i < batch.length; i += mintBatch) groups.push(batch.slice(i, i + mintBatch));
    let next = 0;
    const sender = async () => {
      while (next < groups.length) {
        const group = groups[next++]!;
        const { receipt } = await relayer.write({
          address: target.artCertificate,
          abi: artCertificateAbi,
          functionName: "certifyBatch",
          args: [
            group.map((a) => ({
              to: a.artist.wallet,
              artworkId: a.id,
              certificateHash: a.hash,
              tokenURI: links.metadata(a.id),
              royaltyReceiver: a.artist.wallet,
              royaltyBps: BigInt(target.royaltyBps),
            })),
          ],
          label: `seed certifyBatch of ${group.length}`,
        });
        transactions++;
        const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber });
        for (const entry of receipt.logs) {
          if (getAddress(entry.address) !== getAddress(target.artCertificate)) continue;
          const decoded = decodeEventLog({ abi: artCertificateAbi, data: entry.data, topics: entry.topics, strict: false });
          if (decoded.eventName !== "ArtworkCertified") continue;
          const args = decoded.args as { tokenId: bigint; artworkId: string; certificateHash: Hex };
          facts.push({ id: args.artworkId, certificate_hash: args.certificateHash, token_id: args.tokenId, certified_at: new Date(Number(block.timestamp) * 1000), tx_hash: receipt.transactionHash });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, groups.length) }, sender));
    if (facts.length !== batch.length) throw new Error(`minted ${facts.length} certificates for ${batch.length} artworks: some were certified before (not a fresh run?)`);

    await db.transaction().execute(async (trx) => {
      await markCertified(trx, facts);
      await insertCertifiedProvenance(trx, facts.map((f) => ({ artwork_id: f.id, tx_hash: f.tx_hash })));
      await insertConfirmedOperations(trx, facts);
    });
    const tokenOf = new Map(facts.map((f) => [f.id, f.token_id]));
    artworks.push(...batch.map((a) => ({ id: a.id, artistId: a.artist_id, wallet: a.artist.wallet, tokenId: tokenOf.get(a.id)!, priceCents: a.priceCents })));
    const rate = Math.round(artworks.length / ((Date.now() - started) / 1000));
    options.log(`  ${artworks.length}/${count} artworks certified (${rate}/s, ${transactions} transactions)`);
  }
  return { artworks, transactions };
}

/**
 * The chain operations `certify:<artwork_id>` of certificates just minted, confirmed from the chain
 * (their receipts), with the facts and the transaction the API's own confirmation records.
 */
async function insertConfirmedOperations(db: Db, facts: CertifiedFacts[]): Promise<void> {
  const rows = facts.map((f) => ({
    key: `certify:${f.id}`,
    payload: { artwork_id: f.id },
    tx_hash: f.tx_hash,
    result: { artworkId: f.id, tokenId: f.token_id.toString(), certificateHash: f.certificate_hash, certifiedAt: f.certified_at.toISOString(), txHash: f.tx_hash },
  }));
  await sql`
    insert into chain_operations (key, kind, payload, status, tx_hash, attempts, result, confirmed_from, confirmed_at)
    select r.key, 'certify', r.payload, 'confirmed', r.tx_hash, 1, r.result, 'chain', now()
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(key text, payload jsonb, tx_hash text, result jsonb)`.execute(db);
}

/** Until the indexer's view holds every seeded certificate, then the artworks record it (as the API's cursor would). */
async function waitForIndexer(db: Db, viewsSchema: string, artworks: SeededArtwork[], log: (line: string) => void): Promise<void> {
  const certificates = new IndexedCertificates(db, viewsSchema);
  const deadline = Date.now() + Math.max(120_000, artworks.length * 10);
  const pending = new Set(artworks.map((a) => a.id));
  let lastReport = 0;
  while (pending.size > 0) {
    const ids = [...pending].slice(0, 5_000);
    const seen = await certificates.byArtworkIds(ids).catch(() => []);
    if (seen.length > 0) {
      await db.transaction().execute(async (trx) => {
        await markIndexed(
          trx,
          seen.map((c) => ({ id: c.artworkId, certificate_hash: c.certificateHash, token_id: c.tokenId, certified_at: c.certifiedAt, tx_hash: c.txHash })),
        );
        await sql`update chain_operations set indexed_at = now(), updated_at = now()
          where key = any(${seen.map((c) => `certify:${c.artworkId}`)}::text[]) and indexed_at is null`.execute(trx);
      });
      for (const c of seen) pending.delete(c.artworkId);
    }
    if (pending.size === 0) break;
    if (Date.now() > deadline) throw new Error(`the indexer has not shown ${pending.size} of the seeded certificates yet (views schema ${viewsSchema})`);
    if (Date.now() - lastReport > 5_000) {
      log(`  waiting for the indexer: ${artworks.length - pending.size}/${artworks.length} certificates indexed`);
      lastReport = Date.now();
    }
    if (seen.length === 0) await new Promise((r) => setTimeout(r, 500));
  }
}

/** Active listings of the first `count` artworks (every other one accepts offers), each with its `listed` provenance. */
async function seedListings(db: Db, artworks: SeededArtwork[], count: number, chunk: number): Promise<number> {
  for (let from = 0; from < count; from += chunk) {
    const batch = artworks.slice(from, Math.min(count, from + chunk)).map((a, i) => ({ ...a, listingId: newId("listing"), acceptsOffers: (from + i) % 2 === 0 }));
    await db.transaction().execute(async (trx) => {
      await sql`
        insert into listings (id, artwork_id, seller_id, seller_wallet, token_id, price_cents, currency, accepts_offers, status, created_at, updated_at)
        select id, artwork_id, seller_id, lower(wallet), token_id, price, 'USD', accepts, 'active', now(), now()
        from unnest(${batch.map((a) => a.listingId)}::text[], ${batch.map((a) => a.id)}::text[], ${batch.map((a) => a.artistId)}::text[],
                    ${batch.map((a) => a.wallet)}::text[], ${batch.map((a) => a.tokenId.toString())}::numeric[], ${batch.map((a) => a.priceCents)}::bigint[],
                    ${batch.map((a) => a.acceptsOffers)}::boolean[])
          as t(id, artwork_id, seller_id, wallet, token_id, price, accepts)`.execute(trx);
      await sql`
        insert into artwork_provenance (artwork_id, event, actor_id, details, occurred_at)
        select artwork_id, 'listed', seller_id, jsonb_build_object('listing_id', id, 'price_usd', price / 100.0), now()
        from unnest(${batch.map((a) => a.listingId)}::text[], ${batch.map((a) => a.id)}::text[], ${batch.map((a) => a.artistId)}::text[], ${batch.map((a) => a.priceCents)}::bigint[])
          as t(id, artwork_id, seller_id, price)`.execute(trx);
    });
  }
  return count;
}

/**
 * Share classes of `artworks` on ArtShares (createShareClass, several on their way at once, through
 * the API's Relayer), then their `fractional_artworks` rows `active`, their `share_class:` chain
 * operations confirmed with the class's transaction, and the artworks marked fractionalized: what
 * ShareClasses writes once a class is on-chain. The
 * artist holds each certificate, so it is the proceeds' recipient.
 */
async function seedFractional(db: Db, target: SeedTarget, { relayer }: SeedChain, artworks: SeededArtwork[], options: SeedOptions & { chunk: number }): Promise<number> {
  if (artworks.length === 0) return 0;
  const artShares = target.artShares;
  if (!artShares) throw new Error("fractional artworks need the ArtShares address (SeedTarget.artShares)");
  const classes: { artwork: SeededArtwork; totalShares: number; priceCents: number; txHash: string }[] = [];
  let next = 0;
  const sender = async () => {
    while (next < artworks.length) {
      const k = next++;
      const artwork = artworks[k]!;
      const totalShares = [100, 250, 1_000, 10_000][k % 4]!;
      const { receipt } = await relayer.write({
        address: artShares,
        abi: artSharesAbi,
        functionName: "createShareClass",
        args: [artwork.tokenId, BigInt(totalShares)],
        label: `seed createShareClass of ${artwork.id}`,
      });
      classes.push({ artwork, totalShares, priceCents: Math.max(100, Math.round(artwork.priceCents / totalShares)), txHash: receipt.transactionHash });
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.mintInFlight ?? 4, artworks.length) }, sender));
  for (let from = 0; from < classes.length; from += options.chunk) {
    const batch = classes.slice(from, from + options.chunk);
    await db.transaction().execute(async (trx) => {
      await sql`
        insert into fractional_artworks (artwork_id, token_id, owner_id, created_by, total_shares, price_per_share_cents, status, created_at, updated_at)
        select id, token_id, artist, artist, total, price, 'active', now(), now()
        from unnest(${batch.map((c) => c.artwork.id)}::text[], ${batch.map((c) => c.artwork.tokenId.toString())}::numeric[], ${batch.map((c) => c.artwork.artistId)}::text[],
                    ${batch.map((c) => c.totalShares)}::int[], ${batch.map((c) => c.priceCents)}::bigint[])
          as t(id, token_id, artist, total, price)`.execute(trx);
      // The class's transaction is its chain operation's, confirmed from its receipt (the indexer's cursor reconciles it).
      await sql`
        insert into chain_operations (key, kind, payload, status, tx_hash, result, confirmed_from, confirmed_at)
        select 'share_class:' || id, 'fractional_create_class', jsonb_build_object('artwork_id', id, 'token_id', token_id, 'cap', total::text),
               'confirmed', tx, jsonb_build_object('tokenId', token_id, 'txHash', tx), 'chain', now()
        from unnest(${batch.map((c) => c.artwork.id)}::text[], ${batch.map((c) => c.artwork.tokenId.toString())}::text[], ${batch.map((c) => c.totalShares)}::int[], ${batch.map((c) => c.txHash)}::text[])
          as t(id, token_id, total, tx)`.execute(trx);
      await sql`update artworks set fractionalized_at = now() where id = any(${batch.map((c) => c.artwork.id)}::text[])`.execute(trx);
    });
  }
  return classes.length;
}

const EVENT_TYPES = ["exhibition", "talk", "workshop", "auction", "fair"] as const;
const CITIES = ["Berlin", "Lisbon", "New York", "Seoul", "Mexico City", "Lagos", "Paris", "Melbourne"];

/**
 * Platform events by the artists, starting from three months ago to a year ahead (so most have not
 * ended), of every type and format, with one to three of the artists each.
 */
async function seedEvents(db: Db, artists: SeededUser[], count: number, chunk: number): Promise<number> {
  if (count > 0 && artists.length === 0) throw new Error("events need at least one artist: seed users too");
  for (let from = 0; from < count; from += chunk) {
    const n = Math.min(chunk, count - from);
    const batch = Array.from({ length: n }, (_, i) => {
      const k = from + i;
      const format = (["virtual", "in_person", "hybrid"] as const)[k % 3]!;
      const startsAt = new Date(Date.now() + ((k / Math.max(1, count)) * 455 - 90) * DAY_MS);
      return {
        id: newId("event"),
        title: `${EVENT_TYPES[k % EVENT_TYPES.length]!} no. ${k + 1}`,
        type: EVENT_TYPES[k % EVENT_TYPES.length]!,
        format,
        location: format === "virtual" ? "Online" : CITIES[k % CITIES.length]!,
        startsAt,
        endsAt: new Date(startsAt.getTime() + (1 + (k % 5)) * 3_600_000),
        virtualPrice: format === "in_person" ? null : (k % 4) * 1_000,
        inPersonPrice: format === "virtual" ? null : 2_500 + (k % 7) * 500,
        inPersonCapacity: format === "virtual" ? null : 50 + (k % 10) * 25,
        artists: [...new Set([0, 1, 2].slice(0, 1 + (k % 3)).map((j) => artists[(k * 7 + j * 13) % artists.length]!.id))],
      };
    });
    await db.transaction().execute(async (trx) => {
      await sql`
        insert into platform_events (id, title, type, format, location, description, starts_at, ends_at, featured,
                                     virtual_price_cents, virtual_capacity, in_person_price_cents, in_person_capacity, created_by)
        select id, title, type, format, location, 'A seeded event.', starts_at, ends_at, featured, vprice, null, pprice, pcap, created_by
        from unnest(${batch.map((e) => e.id)}::text[], ${batch.map((e) => e.title)}::text[], ${batch.map((e) => e.type)}::text[], ${batch.map((e) => e.format)}::text[],
                    ${batch.map((e) => e.location)}::text[], ${batch.map((e) => e.startsAt)}::timestamptz[], ${batch.map((e) => e.endsAt)}::timestamptz[],
                    ${batch.map((_, i) => (from + i) % 25 === 0)}::boolean[], ${batch.map((e) => e.virtualPrice)}::bigint[], ${batch.map((e) => e.inPersonPrice)}::bigint[],
                    ${batch.map((e) => e.inPersonCapacity)}::int[], ${batch.map((e) => e.artists[0]!)}::text[])
          as t(id, title, type, format, location, starts_at, ends_at, featured, vprice, pprice, pcap, created_by)`.execute(trx);
      const pairs = batch.flatMap((e) => e.artists.map((artist, position) => ({ event: e.id, artist, position })));
      await sql`
        insert into event_artists (event_id, artist_id, position)
        select * from unnest(${pairs.map((p) => p.event)}::text[], ${pairs.map((p) => p.artist)}::text[], ${pairs.map((p) => p.position)}::int[])`.execute(trx);
    });
  }
  return count;
}

/** Artwork shares by any user, one to three tags each, spread over the last year. */
async function seedPosts(db: Db, users: SeededUser[], artworks: SeededArtwork[], count: number, chunk: number): Promise<number> {
  if (count > 0 && (users.length === 0 || artworks.length === 0)) throw new Error("posts need users and artworks");
  for (let from = 0; from < count; from += chunk) {
    const n = Math.min(chunk, count - from);
    const batch = Array.from({ length: n }, (_, i) => {
      const k = from + i;
      const tags = [TAGS[k % TAGS.length]!, ...(k % 3 === 0 ? [TAGS[(k * 5 + 1) % TAGS.length]!] : [])];
      return {
        id: newId("post"),
        author: users[(k * 31) % users.length]!.id,
        artwork: artworks[(k * 17) % artworks.length]!.id,
        content: `Notes on a work I keep coming back to (${k + 1}).`,
        tags: `{${[...new Set(tags)].join(",")}}`,
        created: new Date(Date.now() - ((count - k) / count) * 365 * DAY_MS),
      };
    });
    await sql`
      insert into community_posts (id, type, author_id, content, artwork_id, tags, images, created_at, updated_at)
      select id, 'artwork_share', author, content, artwork, tags::text[], '[]'::jsonb, created, created
      from unnest(${batch.map((p) => p.id)}::text[], ${batch.map((p) => p.author)}::text[], ${batch.map((p) => p.artwork)}::text[],
                  ${batch.map((p) => p.content)}::text[], ${batch.map((p) => p.tags)}::text[], ${batch.map((p) => p.created)}::timestamptz[])
        as t(id, author, artwork, content, tags, created)`.execute(db);
  }
  return count;
}
