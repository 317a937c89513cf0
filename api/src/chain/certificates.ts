import type { Expression, Kysely, RawBuilder } from "kysely";
import * as repo from "./certificates.repository.ts";
import type { IndexerViews } from "./indexer-schema.ts";

export type { TransferJson } from "./certificates.repository.ts";

/** A certificate as the indexer projected it from `ArtworkCertified` (and later transfers). */
export interface IndexedCertificate {
  tokenId: bigint;
  artworkKey: `0x${string}`;
  artworkId: string;
  certificateHash: `0x${string}`;
  /** Current owner (follows transfers), lower-case. */
  owner: `0x${string}`;
  tokenUri: string;
  royaltyReceiver: `0x${string}`;
  royaltyBps: number;
  /** Timestamp of the certifying block. */
  certifiedAt: Date;
  blockNumber: bigint;
  txHash: `0x${string}`;
}

export interface IndexedTransfer {
  tokenId: bigint;
  from: `0x${string}`;
  to: `0x${string}`;
  blockNumber: bigint;
  at: Date;
  txHash: `0x${string}`;
  logIndex: number;
}

/** The indexer has not published its views yet (first backfill still running). */
export class IndexerNotReadyError extends Error {
  override name = "IndexerNotReadyError";
}

/**
 * Reads of certificates from the indexer's views (the chain, as projected by Ponder): the source of
 * truth for which artwork holds which token, with which hash, owned by whom.
 */
export class IndexedCertificates {
  private readonly views: Kysely<IndexerViews>;

  constructor(
    db: Kysely<any>,
    private readonly viewsSchema: string,
  ) {
    this.views = db.withTables<IndexerViews>().withSchema(viewsSchema) as unknown as Kysely<IndexerViews>;
  }

  async byArtworkId(artworkId: string): Promise<IndexedCertificate | undefined> {
    return (await this.byArtworkIds([artworkId]))[0];
  }

  /** One per artwork (the contract mints at most one), lowest token id first. */
  async byArtworkIds(artworkIds: readonly string[]): Promise<IndexedCertificate[]> {
    if (artworkIds.length === 0) return [];
    const rows = await this.read(() => repo.byArtworkIds(this.views, artworkIds));
    return rows.map(toCertificate);
  }

  /** The certificates minted in blocks (fromBlock, toBlock], in chain order. */
  async inBlocks(fromBlock: bigint, toBlock: bigint): Promise<IndexedCertificate[]> {
    const rows = await this.read(() => repo.inBlocks(this.views, fromBlock, toBlock));
    return rows.map(toCertificate);
  }

  async byHash(certificateHash: string): Promise<IndexedCertificate | undefined> {
    const row = await this.read(() => repo.byHash(this.views, certificateHash.toLowerCase() as `0x${string}`));
    return row ? toCertificate(row) : undefined;
  }

  /**
   * The token's transfers as a subquery of a caller's statement (a JSON array, the mint included, in
   * chain order; `transfersFromJson` reads it): a detail page reads them without a round trip of
   * their own. A statement that embeds it fails as a read of the views does before they are published.
   */
  transfersJson(tokenId: Expression<bigint | null>): RawBuilder<repo.TransferJson[]> {
    return repo.transfersJson(this.viewsSchema, tokenId);
  }

  private read<T>(query: () => Promise<T>): Promise<T> {
    return readViews(query);
  }
}

export function transfersFromJson(tokenId: bigint, rows: repo.TransferJson[]): IndexedTransfer[] {
  return rows.map((r) => ({
    tokenId,
    from: r.from,
    to: r.to,
    blockNumber: BigInt(r.block_number),
    at: new Date(Number(r.block_timestamp) * 1000),
    txHash: r.tx_hash,
    logIndex: r.log_index,
  }));
}

/** Runs a read of the indexer's views; a missing view or schema (not published yet) is IndexerNotReadyError. */
export async function readViews<T>(query: () => Promise<T>): Promise<T> {
  try {
    return await query();
  } catch (err) {
    if ((err as { code?: string }).code === "42P01" || (err as { code?: string }).code === "3F000") {
      throw new IndexerNotReadyError("the indexer has not published its views yet");
    }
    throw err;
  }
}

function toCertificate(r: repo.CertificateRow): IndexedCertificate {
  return {
    tokenId: r.token_id,
    artworkKey: r.artwork_key,
    artworkId: r.artwork_id,
    certificateHash: r.certificate_hash,
    owner: r.owner,
    tokenUri: r.token_uri,
    royaltyReceiver: r.royalty_receiver,
    royaltyBps: Number(r.royalty_bps),
    certifiedAt: new Date(Number(r.certified_at) * 1000),
    blockNumber: r.block_number,
    txHash: r.tx_hash,
  };
}
