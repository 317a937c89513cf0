import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Database, Db } from "../../db/database.ts";
import { enqueue, type Task } from "../../jobs/queue.ts";
import type { Actor } from "../../lib/actor.ts";
import { ApiError } from "../../lib/errors.ts";
import { DERIVATIVE_NAMES, type DerivativeName, ImageRefusal, type InspectedImage, inspectImage, type MetadataBlock, type ProcessedImage, processImage } from "../../lib/image-pipeline.ts";
import type { ObjectStorage } from "../../lib/storage.ts";
import type { Artwork } from "./artworks.tables.ts";
import * as repo from "./artwork-images.repository.ts";
import type { ArtworkLinks } from "./artwork-links.ts";
import { CertificationError, type CertificationPipeline, PROCESS_IMAGE_TASK } from "./certification.service.ts";
import type { OwnershipService } from "./ownership.service.ts";

export const IMAGES_BACKFILL_TASK = "artwork_images_backfill";
/** Originals a backfill job processes before it queues the next one (a worker's stop waits for one job at most). */
const BACKFILL_BATCH = 10;

/** An original run through the pipeline and stored with its derivatives: the artwork's columns and the derivatives' rows. */
export interface StoredImage {
  columns: Pick<Artwork, "image_storage_key" | "image_sha256" | "image_content_type" | "image_bytes"> & repo.ProcessedColumns & { image_processed_at: Date | null };
  derivatives: repo.NewArtworkImage[];
  /** Every object written, to remove again if the artwork is not stored after all. */
  keys: string[];
}

/** Bytes to answer with, and their SHA-256 (the ETag). */
export interface ServedImage {
  body: Buffer;
  contentType: string;
  sha256: string;
}

/**
 * An artwork's images (docs/decisions.md#images): the original as it came, stored with its
 * derivatives (the thumbnail and the display size, WebP with no metadata) by the one pipeline
 * (lib/image-pipeline.ts), for uploads and image_url downloads alike. An upload is checked by its
 * header in its request and processed by a job before its certification; a download is processed
 * by its download job. Originals stored before the pipeline are processed by a backfill job, or at
 * the first request for one of their derivatives.
 */
export class ArtworkImages {
  private readonly log: Logger;

  constructor(
    private readonly deps: { db: Kysely<Database>; logger: Logger; storage: ObjectStorage; ownership: OwnershipService; links: ArtworkLinks; certification: CertificationPipeline },
  ) {
    this.log = deps.logger.child({ component: "artwork-images" });
  }

  /** Runs the pipeline over artwork `artworkId`'s original and writes it and its derivatives; an ImageRefusal writes nothing. */
  async store(artworkId: string, bytes: Buffer): Promise<StoredImage> {
    const processed = await processImage(bytes);
    const original = await this.putOriginal(artworkId, processed, bytes);
    const derivatives = await this.putDerivatives(artworkId, processed);
    return {
      columns: { ...original, ...columnsOf(processed), image_processed_at: new Date() },
      derivatives,
      keys: [original.image_storage_key, ...derivatives.map((d) => d.storage_key)],
    };
  }

  private async putOriginal(artworkId: string, image: InspectedImage, bytes: Buffer) {
    const key = `artworks/${artworkId}/${image.sha256}.${image.type.extension}`;
    await this.deps.storage.put(key, bytes, image.type.contentType);
    return { image_storage_key: key, image_sha256: image.sha256, image_content_type: image.type.contentType, image_bytes: bytes.length };
  }

  /**
   * An upload's original, checked by its header and stored (a refused image is its answer, 413 or
   * 415, with nothing stored); its derivatives are made by its process job before its certification
   * is asked for (`processTask`), so the request does not wait for a decode.
   */
  async storeUpload(artworkId: string, bytes: Buffer): Promise<StoredImage> {
    let inspected: InspectedImage;
    try {
      inspected = await inspectImage(bytes);
    } catch (err) {
      if (!(err instanceof ImageRefusal)) throw err;
      throw err.status === 413 ? new ApiError(413, "payload_too_large", err.message) : new ApiError(415, "unsupported_media_type", err.message);
    }
    const original = await this.putOriginal(artworkId, inspected, bytes);
    return { columns: { ...original, ...columnsOf(inspected), image_processed_at: null }, derivatives: [], keys: [original.image_storage_key] };
  }

  /**
   * The job between uploads and their certification (one for the uploads of a moment: its payload
   * their ids): each image's derivatives made (unless a request for one made them first), then, in
   * one transaction, recorded and every certification asked for; an image that does not decode
   * fails its certification for good, saying why.
   */
  readonly processTask: Task = async (payload) => {
    if (!Array.isArray(payload) || !payload.every((id) => typeof id === "string")) throw new Error(`${PROCESS_IMAGE_TASK}: the payload is not a list of artwork ids`);
    const artworks = (await repo.artworksOf(this.deps.db, payload)).filter((a) => a.status === "pending_certification" && a.image_storage_key);
    const ready: string[] = [];
    const derivatives: repo.NewArtworkImage[] = [];
    const findings: [string, repo.ProcessedColumns][] = [];
    const refused: [Artwork, string][] = [];
    const outcomes = await inTurns(artworks.filter((a) => !a.image_processed_at), DERIVE_AT_ONCE, (a) => this.derive(a));
    for (const a of artworks) {
      if (a.image_processed_at) {
        if (a.image_refusal) refused.push([a, a.image_refusal]);
        else ready.push(a.id);
        continue;
      }
      const outcome = outcomes.get(a.id)!;
      if ("refusal" in outcome) {
        findings.push([a.id, refusedColumns(outcome.refusal)]);
        refused.push([a, outcome.refusal]);
      } else {
        derivatives.push(...outcome.derivatives);
        findings.push([a.id, outcome.columns]);
        ready.push(a.id);
      }
    }
    const { certification } = this.deps;
    await this.deps.db.transaction().execute(async (trx) => {
      await repo.insertImages(trx, derivatives);
      for (const [id, columns] of findings) await repo.markProcessed(trx, id, columns);
      await certification.requestNext(trx, ready.map((id) => ({ id, image: "ready" as const })));
    });
    for (const [a, refusal] of refused) await certification.recordFailure(a, new CertificationError("permanent", refusal));
  };

  /** Removes what `store` wrote for an artwork that was not stored after all. */
  async discard(stored: StoredImage): Promise<void> {
    await Promise.all(stored.keys.map((key) => this.deps.storage.delete(key).catch(() => {})));
  }

  /** The derivatives of one artwork in an answer (null before its image is known or processed). */
  async describe(db: Db, a: Artwork) {
    if (!a.image_sha256 || !a.image_processed_at) return null;
    const rows = await repo.imagesOf(db, a.id);
    const size = (name: DerivativeName) => {
      const row = rows.find((r) => r.name === name);
      return row ? { url: this.deps.links.derivative(a.id, name), width: row.width, height: row.height, bytes: row.bytes, content_type: row.content_type } : null;
    };
    const isPublic = (a.image_metadata ?? []).length === 0;
    return {
      thumbnail: size("thumbnail"),
      display: size("display"),
      original: {
        url: this.deps.links.original(a.id),
        width: a.image_width,
        height: a.image_height,
        bytes: a.image_bytes,
        content_type: a.image_content_type,
        sha256: a.image_sha256,
        public: isPublic,
        metadata: (a.image_metadata ?? []) as MetadataBlock[],
      },
      ...(a.image_refusal ? { refusal: a.image_refusal } : {}),
    };
  }

  /** A derivative to serve; made from the original now when the backfill has not reached it yet. */
  async derivative(a: Artwork, name: DerivativeName): Promise<ServedImage> {
    if (!a.image_storage_key || !a.image_sha256) throw new ApiError(404, "not_found", "The image has not been fetched from image_url yet");
    let row = await repo.imageOf(this.deps.db, a.id, name);
    let refusal = a.image_refusal;
    if (!row && !a.image_processed_at) {
      refusal = await this.process(a);
      if (refusal === null) row = await repo.imageOf(this.deps.db, a.id, name);
    }
    if (!row) throw new ApiError(404, "not_found", `The artwork's image cannot be shown: ${refusal ?? "it has no derivatives"}`);
    return this.read(row.storage_key, row.content_type, row.sha256);
  }

  /**
   * The original as it came (its SHA-256 the certificate's `image_sha256`): public when it carries
   * no metadata, else for its artist, its certificate's holder and admins only (404 to anyone else).
   */
  async original(a: Artwork, viewer: Actor | null): Promise<ServedImage> {
    if (!a.image_storage_key || !a.image_sha256) throw new ApiError(404, "not_found", "The image has not been fetched from image_url yet");
    // Not processed yet: its metadata is unknown, so it is kept to those who may read it anyway.
    const isPublic = a.image_processed_at !== null && (a.image_metadata ?? []).length === 0;
    if (!isPublic && !(await this.mayReadOriginal(a, viewer))) throw ApiError.notFound("Original image");
    return this.read(a.image_storage_key, a.image_content_type ?? "application/octet-stream", a.image_sha256);
  }

  readonly backfillTask: Task = async () => {
    const batch = await repo.unprocessed(this.deps.db, BACKFILL_BATCH);
    for (const a of batch) await this.process(a);
    if (batch.length === BACKFILL_BATCH) await this.startBackfill(`${IMAGES_BACKFILL_TASK}:${batch.at(-1)!.id}`);
    else if (batch.length > 0) this.log.info({ processed: batch.length }, "image backfill done");
  };

  /** Queues the backfill of originals stored before the pipeline (a worker's start); one job at a time per key. */
  async startBackfill(jobKey = IMAGES_BACKFILL_TASK): Promise<void> {
    await enqueue(this.deps.db, IMAGES_BACKFILL_TASK, {}, { jobKey, maxAttempts: 5 });
  }

  /** An original stored before the pipeline, processed now: its derivatives, or why it has none (a refused image is recorded, not retried). */
  /**
   * An original processed now (its upload's job, the backfill, a request for a size): its
   * derivatives stored and recorded, with `alongside` in that transaction; why it has none, if so
   * (a refused image is recorded, not retried).
   */
  private async process(a: Pick<Artwork, "id" | "image_storage_key">): Promise<string | null> {
    const outcome = await this.derive(a);
    if ("refusal" in outcome) {
      await repo.markProcessed(this.deps.db, a.id, refusedColumns(outcome.refusal));
      return outcome.refusal;
    }
    await this.deps.db.transaction().execute(async (trx) => {
      await repo.insertImages(trx, outcome.derivatives);
      await repo.markProcessed(trx, a.id, outcome.columns);
    });
    return null;
  }

  /** A stored original's derivatives, written to storage, and its findings to record; or why it has none. */
  private async derive(a: Pick<Artwork, "id" | "image_storage_key">): Promise<{ derivatives: repo.NewArtworkImage[]; columns: repo.ProcessedColumns } | { refusal: string }> {
    const object = a.image_storage_key ? await this.deps.storage.get(a.image_storage_key) : null;
    if (!object) {
      // Lost from storage: said once, and the others go on.
      this.log.error({ artwork_id: a.id, key: a.image_storage_key }, "stored image missing from storage");
      return { refusal: "its original is missing from storage" };
    }
    let processed: ProcessedImage;
    try {
      processed = await processImage(object.body);
    } catch (err) {
      if (!(err instanceof ImageRefusal)) throw err;
      this.log.warn({ artwork_id: a.id, reason: err.message }, "stored image refused by the pipeline: no derivatives");
      return { refusal: err.message };
    }
    return { derivatives: await this.putDerivatives(a.id, processed), columns: columnsOf(processed) };
  }

  private async putDerivatives(artworkId: string, processed: ProcessedImage): Promise<repo.NewArtworkImage[]> {
    return Promise.all(
      DERIVATIVE_NAMES.map(async (name) => {
        const d = processed.derivatives.find((x) => x.name === name)!;
        const key = `artworks/${artworkId}/${processed.sha256}-${name}.webp`;
        await this.deps.storage.put(key, d.body, d.contentType);
        return { artwork_id: artworkId, name, storage_key: key, content_type: d.contentType, width: d.width, height: d.height, bytes: d.body.length, sha256: d.sha256 };
      }),
    );
  }

  private async mayReadOriginal(a: Artwork, viewer: Actor | null): Promise<boolean> {
    if (!viewer) return false;
    if (viewer.role === "admin" || viewer.userId === a.artist_id) return true;
    return (await this.deps.ownership.holderOf(a)).user?.id === viewer.userId;
  }

  private async read(key: string, contentType: string, sha256: string): Promise<ServedImage> {
    const object = await this.deps.storage.get(key);
    if (!object) throw new Error(`image object ${key} is missing from storage`);
    return { body: object.body, contentType, sha256 };
  }
}

/** Images a process job decodes at once (libvips spreads a large one over the cores itself). */
const DERIVE_AT_ONCE = 2;

/** `work` over `items`, `atOnce` at a time; each result by its item's id. */
async function inTurns<T extends { id: string }, R>(items: T[], atOnce: number, work: (item: T) => Promise<R>): Promise<Map<string, R>> {
  const results = new Map<string, R>();
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      results.set(item.id, await work(item));
    }
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, items.length) }, lane));
  return results;
}

const refusedColumns = (refusal: string): repo.ProcessedColumns => ({ image_width: null, image_height: null, image_metadata: null, image_refusal: refusal });

function columnsOf(processed: InspectedImage): repo.ProcessedColumns {
  return { image_width: processed.width, image_height: processed.height, image_metadata: processed.metadata, image_refusal: null };
}

