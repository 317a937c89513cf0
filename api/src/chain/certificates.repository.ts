/** The queries of the certificates in the indexer's views (`certificate`, `certificate_transfer`), each run through readViews. */
import { type Expression, type Kysely, type RawBuilder, type Selectable, sql } from "kysely";
import type { CertificateView, IndexerViews } from "./indexer-schema.ts";

export type CertificateRow = Selectable<CertificateView>;

/** A transfer as `transfersJson` gives it (bigints as text). */
export interface TransferJson {
  from: `0x${string}`;
  to: `0x${string}`;
  block_number: string;
  block_timestamp: string;
  tx_hash: `0x${string}`;
  log_index: number;
}

/** The certificates of these artworks, lowest token id first. */
export function byArtworkIds(views: Kysely<IndexerViews>, artworkIds: readonly string[]): Promise<CertificateRow[]> {
  return views.selectFrom("certificate").selectAll().where("artwork_id", "in", [...artworkIds]).orderBy("token_id").execute();
}

/** The certificates minted in blocks (fromBlock, toBlock], in chain order. */
export function inBlocks(views: Kysely<IndexerViews>, fromBlock: bigint, toBlock: bigint): Promise<CertificateRow[]> {
  return views
    .selectFrom("certificate")
    .selectAll()
    .where("block_number", ">", fromBlock)
    .where("block_number", "<=", toBlock)
    .orderBy("block_number")
    .orderBy("log_index")
    .execute();
}

/** The certificate of this hash (lower-case), the lowest token id if several. */
export function byHash(views: Kysely<IndexerViews>, certificateHash: `0x${string}`): Promise<CertificateRow | undefined> {
  return views.selectFrom("certificate").selectAll().where("certificate_hash", "=", certificateHash).orderBy("token_id").limit(1).executeTakeFirst();
}

/** The token's transfers (the mint included) as a JSON array in chain order, a subquery of a caller's statement. */
export function transfersJson(viewsSchema: string, tokenId: Expression<bigint | null>): RawBuilder<TransferJson[]> {
  return sql<TransferJson[]>`(
    select coalesce(json_agg(json_build_object('from', t."from", 'to', t."to", 'block_number', t.block_number::text,
                                               'block_timestamp', t.block_timestamp::text, 'tx_hash', t.tx_hash, 'log_index', t.log_index)
                             order by t.block_number, t.log_index), '[]'::json)
    from ${sql.table(`${viewsSchema}.certificate_transfer`)} t where t.token_id = ${tokenId})`;
}
