import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Config } from "../../config.ts";
import type { Database } from "../../db/database.ts";
import type { Artwork } from "./artworks.tables.ts";
import type { Task } from "../../jobs/queue.ts";
import { MAX_IMAGE_BYTES, sniffImageType } from "../../lib/images.ts";
import { failureSeenByUser, OutboundError, outboundRequest, UnsafeUrlError } from "../../lib/outbound.ts";
import { sha256Hex } from "../../lib/secrets.ts";
import type { ObjectStorage } from "../../lib/storage.ts";
import * as repo from "./artworks.repository.ts";
import { CertificationError, type CertificationPipeline, FETCH_IMAGE_TASK } from "./certification.service.ts";

/** An artist at its cap of downloads in flight: its job looks again after about this long. */
const BUSY_RETRY_MS = 1_000;
/** A download's count against its artist's cap outlives its deadline by this much (then a crashed process's count lapses). */
const FETCH_LEASE_GRACE_MS = 5_000;

/**
 * Downloads of artworks' `image_url`, outside the certification slots: the `fetch_artwork_image`
 * job runs in a job runner of its own (IMAGE_FETCH_CONCURRENCY), so a slow URL never delays a
 * certification, and an artist has at most IMAGE_FETCH_PER_USER downloads in flight across all
 * processes (a job over the cap is rescheduled shortly without holding a slot), so one artist's
 * slow URLs cannot take every slot either. A stored image requests the certification in the same
 * transaction; failures go through the pipeline's rules (retried with backoff, or
 * `certification_failed` with its reason and event).
 */
export class ImageFetcher {
  private readonly log: Logger;

  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      config: Config;
      logger: Logger;
      storage: ObjectStorage;
      certification: CertificationPipeline;
    },
  ) {
    this.log = deps.logger.child({ component: "image-fetch" });
  }

  readonly task: Task = async (payload) => {
    const artworkId = (payload as { artwork_id?: unknown }).artwork_id;
    if (typeof artworkId !== "string") throw new Error(`${FETCH_IMAGE_TASK}: payload without artwork_id`);
    await this.fetch(artworkId);
  };

  /** One download; never throws for a failed download (it records it), only for database trouble. */
  async fetch(artworkId: string): Promise<void> {
    const { db, config, certification } = this.deps;
    const claim = await db.transaction().execute((trx) =>
      repo.claimImageFetch(trx, artworkId, {
        perUser: config.certification.imageFetchPerUser,
        fetchLeaseMs: config.certification.imageFetchTimeoutMs + FETCH_LEASE_GRACE_MS,
        leaseMs: config.certification.leaseMs,
      }),
    );
    if (claim.kind === "busy") {
      // Jittered, so that an artist's waiting downloads do not all look at once.
      await certification.request(db, artworkId, { runAt: new Date(Date.now() + BUSY_RETRY_MS * (0.5 + Math.random())) });
      return;
    }
    if (claim.kind === "not_needed") {
      // Stored by a twin job meanwhile: the certification is what comes next (request() routes).
      const artwork = await repo.findAny(db, artworkId);
      if (artwork?.status === "pending_certification" && artwork.image_sha256) await certification.request(db, artworkId);
      return;
    }
    const artwork = claim.artwork;
    try {
      const image = await this.download(artwork);
      await db.transaction().execute(async (trx) => {
        await repo.setImageOnce(trx, artwork.id, image);
        await certification.request(trx, artwork.id);
      });
    } catch (err) {
      await repo.releaseImageFetch(db, artwork.id);
      await certification.recordFailure(artwork, err);
    }
  }

  /** Fetches, checks and stores the image; the columns to record. */
  private async download(artwork: Artwork) {
    const url = artwork.image_source_url;
    if (!url) throw new CertificationError("permanent", "the artwork has no image");
    let response;
    try {
      response = await outboundRequest({
        url,
        timeoutMs: this.deps.config.certification.imageFetchTimeoutMs,
        maxResponseBytes: MAX_IMAGE_BYTES,
        onOversize: "error",
        headers: { accept: "image/jpeg, image/png, image/webp, image/gif", "user-agent": "ArtPlatform-ImageFetcher/1.0" },
        policy: this.deps.config.outboundPolicy,
      });
    } catch (err) {
      if (err instanceof UnsafeUrlError) {
        throw new CertificationError(err.reason === "unresolvable" ? "transient" : "permanent", `image_url refused: ${err.message}`, { cause: err });
      }
      if (err instanceof OutboundError && err.reason === "too_large") {
        throw new CertificationError("permanent", `image_url: the image exceeds ${MAX_IMAGE_BYTES / 1024 / 1024} MiB`, { cause: err });
      }
      throw new CertificationError("transient", `image_url could not be fetched: ${err instanceof OutboundError ? failureSeenByUser(err) : (err as Error).message}`, { cause: err });
    }
    if (response.status !== 200) {
      const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
      throw new CertificationError(retryable ? "transient" : "permanent", `image_url answered HTTP ${response.status}`);
    }
    const type = sniffImageType(response.body);
    if (!type) throw new CertificationError("permanent", "image_url did not return a JPEG, PNG, WebP or GIF image");
    const sha256 = sha256Hex(response.body);
    const key = `artworks/${artwork.id}/${sha256}.${type.extension}`;
    await this.deps.storage.put(key, response.body, type.contentType);
    this.log.debug({ artwork_id: artwork.id, bytes: response.body.length }, "image stored");
    return { image_storage_key: key, image_sha256: sha256, image_content_type: type.contentType, image_bytes: response.body.length };
  }
}
