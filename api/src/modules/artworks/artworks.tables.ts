import type { ColumnType, Generated, Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";

export type ArtworkStatus = "pending_certification" | "certified" | "certification_failed";
export type DimensionUnit = "mm" | "cm" | "m" | "in" | "ft" | "px";
export interface ArtworkDimensions {
  width: number;
  height: number;
  unit: DimensionUnit;
}

export interface ArtworksTable {
  id: string;
  artist_id: string;
  title: string;
  year: number;
  medium: string;
  /** jsonb: written as JSON text. */
  dimensions: ColumnType<ArtworkDimensions, string, string>;
  description: string | null;
  price_cents: ColumnType<bigint | null, bigint | number | null | undefined, bigint | number | null>;
  for_sale: Generated<boolean>;
  /**
   * Whose ask `for_sale` and `price_cents` are: the wallet that held the certificate when the holder
   * set them (null: set before the certificate was minted, the artist's). A move of the certificate
   * out of that wallet ends the ask (docs/decisions.md#for-sale).
   */
  for_sale_wallet: ColumnType<string | null, string | null | undefined, string | null>;
  status: ArtworkStatus;
  image_source_url: string | null;
  image_storage_key: string | null;
  image_sha256: string | null;
  image_content_type: string | null;
  image_bytes: number | null;
  certificate_hash: string | null;
  token_id: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  certified_at: NullableTimestamp;
  certified_by: string | null;
  // The chain phase (the transaction, its attempts, lease and retries' errors, when it was confirmed
  // and indexed) is the chain operation's `certify:<id>` (chain_operations), never copied here.
  /** When the certification was asked for (the creation, or an admin's retry of a failed one): the start of the estimate's durations. */
  certification_requested_at: Timestamp;
  /** Why the certification failed: set with `certification_failed` only (the answer's `certification_error`). */
  certification_error: string | null;
  failed_at: NullableTimestamp;
  // The image phase, before the chain operation exists: the download of image_source_url.
  /** Downloads of image_source_url attempted: the retries' backoff and their limit (CERTIFICATION_MAX_ATTEMPTS). */
  image_fetch_attempts: Generated<number>;
  /** Why the last download that is retried failed (one that ends the certification says so in certification_error). */
  image_fetch_error: string | null;
  /**
   * While the artwork waits for its image: by when its download job should have run or been
   * rescheduled; after it (and a grace), the sweep takes the job for lost and enqueues it again.
   */
  image_fetch_deadline: NullableTimestamp;
  /** Set while a download of image_source_url runs: counts against the artist's cap of downloads in flight. */
  image_fetch_lease_until: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
  /** Set once its shares are sold instead of the whole work (fractional module); never listed whole then. */
  fractionalized_at: NullableTimestamp;
}

export interface ArtworkProvenanceTable {
  id: Generated<bigint>;
  artwork_id: string;
  event: string;
  actor_id: string | null;
  tx_hash: string | null;
  /** jsonb: written as JSON text. */
  details: ColumnType<Record<string, string | number> | null, string | null | undefined, string | null>;
  occurred_at: Timestamp;
}

export interface ArtworksTables {
  artworks: ArtworksTable;
  artwork_provenance: ArtworkProvenanceTable;
}

/** Views of `artworks` that other modules read (created in this module's migrations). */
export interface ArtworksViews {
  /** Each artist's artworks not deleted (a profile's `artworks_count`); an artist with none has no row. */
  artworks_per_artist: { artist_id: string; artworks_count: number };
  /** What a listing or a share class shows and filters of its artwork. */
  artwork_summaries: Pick<ArtworksTable, "id" | "artist_id" | "title" | "medium" | "deleted_at">;
}

export type Artwork = Selectable<ArtworksTable>;
export type ArtworkProvenance = Selectable<ArtworkProvenanceTable>;
