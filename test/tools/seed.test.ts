/**
 * tools/seed on a database of its own, the run's chain and a Ponder of its own: the seeded rows,
 * the chain and the indexer agree (one certificate per artwork with the database's token id, hash
 * and transaction; each listing's seller holds its token; each fractionalized artwork's class is on
 * ArtShares with its cap), and a second run adds to the first.
 */
import { mkdtempSync } from "node:fs";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { readContract } from "viem/actions";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import { CustodyWallet } from "../../api/src/chain/custody.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { canonicalDocument, certificateDocument, certificateHashOf } from "../../api/src/modules/artworks/certificate-document.ts";
import { seedPlatform, type SeedTarget } from "../../tools/seed/seed.ts";
import { custodyMnemonic } from "../support/custody.ts";
import { createPlatformDatabase, freshRelayerKey, publicClient } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { startIndexerForTest, type TestIndexer } from "../support/indexer.ts";

let database: { databaseUrl: string; drop(): Promise<void> };
let indexer: TestIndexer;
let target: SeedTarget;
let db: ReturnType<typeof createDb>;

beforeAll(async () => {
  database = await createPlatformDatabase();
  const [started, relayerKey] = await Promise.all([startIndexerForTest({ target: { databaseUrl: database.databaseUrl } }), freshRelayerKey()]);
  indexer = started;
  const env = testEnvironment();
  target = {
    databaseUrl: database.databaseUrl,
    rpcUrl: env.rpcUrl,
    chainId: env.chainId,
    relayerPrivateKey: relayerKey,
    custodyMnemonic: custodyMnemonic(),
    artCertificate: env.artCertificateAddress,
    artShares: env.artSharesAddress,
    publicBaseUrl: "http://127.0.0.1:3999",
    storageDir: mkdtempSync(path.join(env.tempDir, "seed-storage-")),
    viewsSchema: indexer.viewsSchema,
    royaltyBps: 500,
  };
  db = createDb(database.databaseUrl, 2);
}, 120_000);

afterAll(async () => {
  await db?.destroy();
  await indexer?.stop();
  await database?.drop().catch(() => {});
}, 60_000);

it("seeds users, certified artworks, listings, share classes, events and posts on which the database, the chain and the indexer agree", async () => {
  const first = await seedPlatform(target, { users: 12, artworks: 70, listings: 20, fractional: 6, events: 9, posts: 30 }, { chunk: 40, mintBatch: 16 });
  expect(first.counts).toEqual({ users: 12, artworks: 70, listings: 20, fractional: 6, events: 9, posts: 30 });
  expect(first.transactions).toBe(5); // chunks of 40 and 30 in batches of at most 16: 16 + 16 + 8, 16 + 14
  const second = await seedPlatform(target, { users: 3, artworks: 10, listings: 5, fractional: 2, events: 1, posts: 5 }, { chunk: 40, mintBatch: 16 });
  expect(second.counts.artworks).toBe(10);

  // Each with its certification's chain operation, confirmed and indexed, as the API's own would be.
  const artworks = await db.selectFrom("artworks").innerJoin("users", "users.id", "artworks.artist_id")
    .innerJoin("chain_operations as o", (join) => join.on("o.key", "=", sql<string>`'certify:' || artworks.id`)).select([
    "artworks.id", "artworks.artist_id", "artworks.title", "artworks.year", "artworks.medium", "artworks.dimensions", "artworks.image_sha256",
    "artworks.status", "artworks.token_id", "artworks.certificate_hash", "o.status as operation_status", "o.tx_hash", "o.indexed_at",
    "users.wallet_address", "users.custody_index", "users.role",
  ]).execute();
  expect(artworks).toHaveLength(80);
  expect(artworks.every((a) => a.status === "certified" && a.operation_status === "confirmed" && a.indexed_at !== null && a.role === "artist")).toBe(true);
  const custody = new CustodyWallet(custodyMnemonic());
  expect(artworks.every((a) => custody.addressAt(a.custody_index!) === a.wallet_address)).toBe(true);

  // The indexer's view: one certificate each, with the database's token, hash and transaction.
  const { rows: indexed } = await sql<{ artwork_id: string; token_id: string; certificate_hash: string; owner: string; tx_hash: string }>`
    select artwork_id, token_id::text, certificate_hash, owner, tx_hash from ${sql.id(indexer.viewsSchema, "certificate")}
    where artwork_id in (${sql.join(artworks.map((a) => a.id))})`.execute(db);
  expect(indexed).toHaveLength(80);
  const byId = new Map(indexed.map((c) => [c.artwork_id, c]));
  for (const a of artworks) {
    const c = byId.get(a.id)!;
    expect(c.token_id).toBe(a.token_id!.toString());
    expect(c.certificate_hash).toBe(a.certificate_hash);
    expect(c.tx_hash).toBe(a.tx_hash);
    expect(c.owner).toBe(a.wallet_address.toLowerCase());
    // The hash is the one the API computes from the artwork's public record.
    expect(a.certificate_hash).toBe(certificateHashOf(canonicalDocument(certificateDocument(a, a.image_sha256!))));
  }
  // The chain itself, for a sample.
  for (const a of artworks.slice(0, 3)) {
    const owner = await readContract(publicClient(), { address: target.artCertificate, abi: artCertificateAbi, functionName: "ownerOf", args: [a.token_id!] });
    expect(owner).toBe(a.wallet_address);
  }

  // Listings: active, one per artwork, held by their seller on-chain; provenance records them.
  const listings = await db.selectFrom("listings").selectAll().execute();
  expect(listings).toHaveLength(25);
  expect(new Set(listings.map((l) => l.artwork_id)).size).toBe(25);
  for (const l of listings) expect(byId.get(l.artwork_id)!.owner).toBe(l.seller_wallet);
  const provenance = await db.selectFrom("artwork_provenance").select(["event", (eb) => eb.fn.countAll<string>().as("n")]).groupBy("event").execute();
  expect(Object.fromEntries(provenance.map((p) => [p.event, Number(p.n)]))).toEqual({ created: 80, certified: 80, listed: 25 });

  // Share classes: on ArtShares with their cap, of artworks that are not listed, marked fractionalized.
  const classes = await db.selectFrom("fractional_artworks").selectAll().execute();
  expect(classes).toHaveLength(8);
  const listed = new Set(listings.map((l) => l.artwork_id));
  for (const c of classes) {
    expect(c).toMatchObject({ status: "active", shares_sold: 0 });
    const op = await db.selectFrom("chain_operations").select(["status", "result"]).where("key", "=", `share_class:${c.artwork_id}`).executeTakeFirstOrThrow();
    expect(op).toMatchObject({ status: "confirmed", result: { tokenId: String(c.token_id), txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) } });
    expect(listed.has(c.artwork_id)).toBe(false);
    expect(String(c.token_id)).toBe(byId.get(c.artwork_id)!.token_id);
    expect(c.owner_id).toBe(artworks.find((a) => a.id === c.artwork_id)!.artist_id);
    expect(await readContract(publicClient(), { address: target.artShares!, abi: artSharesAbi, functionName: "shareCap", args: [BigInt(c.token_id)] })).toBe(BigInt(c.total_shares));
  }
  const fractionalized = await db.selectFrom("artworks").select("id").where("fractionalized_at", "is not", null).execute();
  expect(fractionalized.map((a) => a.id).sort()).toEqual(classes.map((c) => c.artwork_id).sort());
  // Events: each with one to three artists, in order.
  const events = await db.selectFrom("platform_events").selectAll().execute();
  expect(events).toHaveLength(10);
  const eventArtists = await db.selectFrom("event_artists").selectAll().execute();
  for (const e of events) {
    const mine = eventArtists.filter((a) => a.event_id === e.id).sort((a, b) => a.position - b.position);
    expect(mine.length).toBeGreaterThanOrEqual(1);
    expect(mine.map((a) => a.position)).toEqual(mine.map((_, i) => i));
    expect(mine[0]!.artist_id).toBe(e.created_by);
  }

  expect(Number((await db.selectFrom("community_posts").select((eb) => eb.fn.countAll<string>().as("n")).executeTakeFirstOrThrow()).n)).toBe(35);
}, 180_000);
