/**
 * The move of a certification's chain facts off `artworks` into its chain operation (migration
 * 2026_12_02_0151), on a real Postgres holding rows written by the code before it: an artwork older
 * than the operations gets one with its transaction, attempts and times; what the operation does
 * not account for (attempts, errors) was the image download's and stays on the artwork; the failure
 * reason is kept for failed certifications only; `artworks` no longer has the copies.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { migrateToLatest } from "../../api/src/db/migrate.ts";
import { moduleMigrations } from "../../api/src/modules/index.ts";
import { reclaimLostImageFetches } from "../../api/src/modules/artworks/artworks.repository.ts";
import { useDatabaseMigratedUpTo } from "../support/migration-database.ts";

const database = useDatabaseMigratedUpTo("cert_facts_mig", "2026_11_29_0048_withdrawal_after_block");
const hash = () => `0x${randomBytes(32).toString("hex")}`;
const at = (iso: string) => new Date(iso);

interface Before {
  id: string;
  status: "pending_certification" | "certified" | "certification_failed";
  /** Stored image (else waiting for its image_url download). */
  image?: boolean;
  tokenId?: number;
  txHash?: string | null;
  attempts?: number;
  leaseUntil?: Date | null;
  error?: string | null;
  confirmedAt?: Date | null;
  indexedAt?: Date | null;
}

/** An artwork row as the code before the migration wrote it. */
async function artwork(a: Before): Promise<void> {
  const certified = a.status === "certified";
  await sql`insert into artworks (id, artist_id, title, year, medium, dimensions, status, image_source_url, image_storage_key, image_sha256,
      certificate_hash, token_id, certified_at, certification_tx_hash, certification_requested_at, certification_confirmed_at, certification_indexed_at,
      certification_attempts, certification_lease_until, certification_error, failed_at)
    values (${a.id}, 'usr_artist', ${a.id}, 2020, 'oil', '{"width":1,"height":1,"unit":"cm"}', ${a.status}, 'https://example.test/a.png',
      ${a.image ? `artworks/${a.id}.png` : null}, ${a.image ? "ab".repeat(32) : null},
      ${certified ? "0x" + "cd".repeat(32) : null}, ${certified ? a.tokenId! : null}, ${certified ? at("2026-11-20T10:00:05Z") : null},
      ${a.txHash ?? null}, ${at("2026-11-20T10:00:00Z")}, ${a.confirmedAt ?? null}, ${a.indexedAt ?? null},
      ${a.attempts ?? 0}, ${a.leaseUntil ?? null}, ${a.error ?? null}, ${a.status === "certification_failed" ? at("2026-11-20T10:01:00Z") : null})`.execute(database.db);
}

/** The operation `certify:<id>` as the chain operations component wrote it. */
async function operation(id: string, op: { status: string; txHash?: string | null; attempts: number; lastError?: string | null; confirmedAt?: Date; indexedAt?: Date }) {
  await sql`insert into chain_operations (key, kind, payload, status, tx_hash, attempts, last_error, confirmed_from, confirmed_at, indexed_at)
    values (${`certify:${id}`}, 'certify', ${JSON.stringify({ artwork_id: id })}::jsonb, ${op.status}, ${op.txHash ?? null}, ${op.attempts}, ${op.lastError ?? null},
      ${op.confirmedAt ? "indexer" : null}, ${op.confirmedAt ?? null}, ${op.indexedAt ?? null})`.execute(database.db);
}

describe("certification facts migration", () => {
  it("keeps each chain fact in the operation (creating the ones older rows lack), the download's own progress and the failure reason on the artwork, and drops the copies", async () => {
    const { db } = database;
    await sql`insert into users (id, username, display_name, email, role, status, wallet_address, wallet_kind)
      values ('usr_artist', 'artist', 'Artist', 'artist@example.test', 'artist', 'active', ${`0x${randomBytes(20).toString("hex")}`}, 'siwe')`.execute(db);
    const confirmed = at("2026-11-20T10:00:06Z");
    const indexed = at("2026-11-20T10:00:07Z");
    const lease = at("2026-11-20T10:05:00Z");
    const h = { indexed: hash(), old: hash(), oldUnindexed: hash(), sent: hash(), noOperation: hash(), failed: hash() };

    // 1. Certified through its operation: the artwork copies the operation's hash, attempt and times.
    await artwork({ id: "art_indexed", status: "certified", image: true, tokenId: 1, txHash: h.indexed, attempts: 1, confirmedAt: confirmed, indexedAt: indexed });
    await operation("art_indexed", { status: "confirmed", txHash: h.indexed, attempts: 1, confirmedAt: confirmed, indexedAt: indexed });
    // 2. Certified before there were operations (indexed), and 3. one confirmed from the chain, not yet indexed.
    await artwork({ id: "art_old", status: "certified", image: true, tokenId: 2, txHash: h.old, attempts: 2, confirmedAt: confirmed, indexedAt: indexed });
    await artwork({ id: "art_old_unindexed", status: "certified", image: true, tokenId: 3, txHash: h.oldUnindexed, attempts: 1, confirmedAt: confirmed });
    // 4. Pending on the chain after one download: three attempts counted on the artwork, two of them the operation's.
    await artwork({ id: "art_sent", status: "pending_certification", image: true, txHash: h.sent, attempts: 3, leaseUntil: lease, error: "RPC unavailable" });
    await operation("art_sent", { status: "sent", txHash: h.sent, attempts: 2, lastError: "RPC unavailable" });
    // 5. Waiting for its image, its download retried twice.
    await artwork({ id: "art_downloading", status: "pending_certification", attempts: 2, leaseUntil: at("2026-11-20T10:02:00Z"), error: "image_url answered HTTP 503" });
    // 6. A download's earlier failure left on an artwork whose image then came, its operation not yet attempted.
    await artwork({ id: "art_downloaded", status: "pending_certification", image: true, attempts: 1, leaseUntil: lease, error: "image_url answered HTTP 503" });
    await operation("art_downloaded", { status: "pending", attempts: 0 });
    // 7. Failed on its image (no operation), and 8. failed on the chain.
    await artwork({ id: "art_bad_image", status: "certification_failed", attempts: 1, error: "image_url did not return a JPEG, PNG, WebP or GIF image" });
    await artwork({ id: "art_reverted", status: "certification_failed", image: true, txHash: h.failed, attempts: 5, error: "reverted (gave up after 5 attempts)" });
    await operation("art_reverted", { status: "failed", txHash: h.failed, attempts: 5, lastError: "reverted (gave up after 5 attempts)" });
    // 9. Pending with its image but no operation (nothing would ever send it), its transaction sent once.
    await artwork({ id: "art_no_operation", status: "pending_certification", image: true, txHash: h.noOperation, attempts: 1, leaseUntil: lease });

    await migrateToLatest(db, moduleMigrations);

    const artworks = (await sql<Record<string, unknown>>`select id, status, certification_error, image_fetch_attempts, image_fetch_error, image_fetch_deadline
      from artworks order by id`.execute(db)).rows;
    const row = (id: string, status: string, image_fetch_attempts: number, rest: { certification_error?: string; image_fetch_error?: string; image_fetch_deadline?: Date } = {}) => ({
      id, status, image_fetch_attempts, certification_error: null, image_fetch_error: null, image_fetch_deadline: null, ...rest,
    });
    expect(artworks).toEqual([
      row("art_bad_image", "certification_failed", 1, { certification_error: "image_url did not return a JPEG, PNG, WebP or GIF image" }),
      row("art_downloaded", "pending_certification", 1, { image_fetch_error: "image_url answered HTTP 503" }),
      row("art_downloading", "pending_certification", 2, { image_fetch_error: "image_url answered HTTP 503", image_fetch_deadline: at("2026-11-20T10:02:00Z") }),
      row("art_indexed", "certified", 0),
      row("art_no_operation", "pending_certification", 0),
      row("art_old", "certified", 0),
      row("art_old_unindexed", "certified", 0),
      row("art_reverted", "certification_failed", 0, { certification_error: "reverted (gave up after 5 attempts)" }),
      row("art_sent", "pending_certification", 1),
    ]);

    const operations = (await sql<Record<string, unknown>>`select key, status, tx_hash, attempts, last_error, confirmed_from, confirmed_at, indexed_at, result, due_at is not null as due
      from chain_operations order by key`.execute(db)).rows;
    const op = (key: string, status: string, tx_hash: string | null, attempts: number, rest: Record<string, unknown> = {}) => ({
      key: `certify:${key}`, status, tx_hash, attempts, last_error: null, confirmed_from: null, confirmed_at: null, indexed_at: null, result: null, due: false, ...rest,
    });
    const facts = (id: string, tokenId: number, txHash: string) => ({ artworkId: id, tokenId: String(tokenId), certificateHash: "0x" + "cd".repeat(32), certifiedAt: "2026-11-20T10:00:05.000Z", txHash });
    expect(operations).toEqual([
      op("art_downloaded", "pending", null, 0),
      op("art_indexed", "confirmed", h.indexed, 1, { confirmed_from: "indexer", confirmed_at: confirmed, indexed_at: indexed }),
      op("art_no_operation", "sent", h.noOperation, 1, { due: true }),
      op("art_old", "confirmed", h.old, 2, { confirmed_from: "indexer", confirmed_at: confirmed, indexed_at: indexed, result: facts("art_old", 2, h.old) }),
      op("art_old_unindexed", "confirmed", h.oldUnindexed, 1, { confirmed_from: "chain", confirmed_at: confirmed, result: facts("art_old_unindexed", 3, h.oldUnindexed) }),
      op("art_reverted", "failed", h.failed, 5, { last_error: "reverted (gave up after 5 attempts)" }),
      op("art_sent", "sent", h.sent, 2, { last_error: "RPC unavailable" }),
    ]);

    const columns = (await sql<{ column_name: string }>`select column_name from information_schema.columns where table_name = 'artworks' and column_name like 'certification%' order by column_name`.execute(db)).rows;
    expect(columns.map((c) => c.column_name)).toEqual(["certification_error", "certification_requested_at"]);
    // A failure reason belongs to a failed certification only.
    await expect(sql`update artworks set certification_error = 'x' where id = 'art_indexed'`.execute(db)).rejects.toThrow(/artworks_error_of_failure/);
    // The sweep finds the download whose deadline has passed, and only it.
    expect(await db.transaction().execute((trx) => reclaimLostImageFetches(trx, 0, 60_000, 10))).toEqual(["art_downloading"]);
  });
});
