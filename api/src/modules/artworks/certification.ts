import { EventEmitter } from "node:events";
import type { Kysely, Transaction } from "kysely";
import type { Logger } from "pino";
import { type Address, getAddress, type Hash, type Hex, type PublicClient, TransactionNotFoundError } from "viem";
import { artCertificateAbi } from "../../chain/abi/ArtCertificate.ts";
import { type IndexedCertificate, type IndexedCertificates, IndexerNotReadyError } from "../../chain/certificates.ts";
import { classifyChainError, PermanentChainError } from "../../chain/errors.ts";
import { IndexerListener } from "../../chain/indexer-listener.ts";
import { isAlreadyCertified, type Relayer } from "../../chain/relayer.ts";
import type { Config } from "../../config.ts";
import type { Artwork, Database } from "../../db/database.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import { enqueue, type Task } from "../../jobs/queue.ts";
import { MAX_IMAGE_BYTES, sniffImageType } from "../../lib/images.ts";
import { OutboundError, outboundRequest, UnsafeUrlError } from "../../lib/outbound.ts";
import { sha256Hex } from "../../lib/secrets.ts";
import type { ObjectStorage } from "../../lib/storage.ts";
import { iso } from "../../lib/time.ts";
import * as repo from "./artworks.repository.ts";
import { canonicalDocument, certificateDocument, certificateHashOf } from "./certificate-document.ts";
import { CertifyBatcher } from "./certify-batcher.ts";

export const CERTIFY_TASK = "certify_artwork";

type AttemptedArtwork = Artwork & { artist_wallet: string };

/** A pipeline step that failed: `permanent` ends the certification, `transient` is retried with backoff. */
export class CertificationError extends Error {
  override name = "CertificationError";
  constructor(
    readonly kind: "permanent" | "transient",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * An expired lease counts as lost only after this much more. Re-enqueueing an attempt that is not
 * lost is harmless: a scheduled retry is just moved to now (same job key), and a running one gets
 * a concurrent twin, which the contract keeps from minting twice.
 */
const LEASE_GRACE_MS = 2_000;
const MAX_RETRY_DELAY_MS = 3_600_000;
const CONFIRM_PAUSE_MS = 15;
/** certifyBatch transactions on their way at once; requests arriving meanwhile form the next batch. */
const BATCHES_IN_FLIGHT = 2;
/** Artworks looked up, and confirmed, per query and transaction. */
const CONFIRM_BATCH = 200;

export interface CertificationDeps {
  db: Kysely<Database>;
  config: Config;
  logger: Logger;
  relayer: Relayer;
  publicClient: PublicClient;
  storage: ObjectStorage;
  certificates: IndexedCertificates;
  /** The artwork's ERC-721 metadata URL (the token URI). */
  metadataUrl: (artworkId: string) => string;
}

/**
 * Certification of artworks on-chain, durable and exactly-once in effect:
 *
 * 1. `request()` enqueues a `certify_artwork` job in the caller's transaction.
 * 2. The job (`task`) fetches the image when it was given by URL, builds the certificate document,
 *    and has it certified on-chain: attempts running at the same time share `certifyBatch`
 *    transactions (CertifyBatcher). The contract mints one token per artwork id and skips an
 *    artwork that has one, so a job that runs twice, concurrently or after a crash, never mints
 *    twice. The transaction hash is stored as soon as it is sent; a later attempt waits for that
 *    transaction instead of sending another. RPC failures are retried with exponential backoff; a
 *    permanent failure (a revert, an unusable image) or the last failed attempt makes the artwork
 *    `certification_failed` with an event.
 * 3. The artwork becomes `certified` only when the indexer has the chain's ArtworkCertified
 *    (`confirm`): on each indexed block (LISTEN on the indexer's channel) the artworks not yet
 *    certified are matched against the certificate view, and each match is recorded, with its
 *    provenance entry and the `artwork.certified` event, in one transaction.
 * 4. A periodic sweep is the safety net: it confirms what a lost notification missed and
 *    re-enqueues attempts whose lease expired (their process died between send and receipt).
 */
export class CertificationPipeline {
  private readonly log: Logger;
  private readonly certified = new EventEmitter();
  private listener: IndexerListener | null = null;
  private batcher: CertifyBatcher | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> | null = null;
  private confirming: Promise<void> | null = null;
  private confirmAgain = false;
  private stopped = false;

  constructor(private readonly deps: CertificationDeps) {
    this.log = deps.logger.child({ component: "certification" });
    this.certified.setMaxListeners(0);
  }

  /** Enqueues an attempt now, in the caller's transaction (one pending job per artwork). */
  async request(trx: Kysely<Database> | Transaction<Database>, artworkId: string, options: { priority?: number } = {}): Promise<void> {
    await enqueue(trx, CERTIFY_TASK, { artwork_id: artworkId }, { jobKey: jobKeyOf(artworkId), priority: options.priority });
  }

  /** Starts listening to the indexer and sweeping; jobs arrive through `task`. */
  start(): void {
    this.stopped = false;
    this.listener = new IndexerListener({
      databaseUrl: this.deps.config.database.url,
      viewsSchema: this.deps.config.indexer.viewsSchema,
      onNotify: () => this.poke(),
      onReady: () => this.poke(),
      logger: this.log,
    });
    this.listener.start();
    const sweep = () => {
      this.sweepTimer = setTimeout(() => {
        this.sweeping = this.sweep().finally(() => {
          this.sweeping = null;
          if (!this.stopped) sweep();
        });
      }, this.deps.config.certification.sweepIntervalMs);
    };
    sweep();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    await this.listener?.stop();
    await Promise.all([this.confirming, this.sweeping]);
  }

  /** Resolves true once `artworkId` is certified, false after `timeoutMs`. */
  async waitForCertified(artworkId: string, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const row = await repo.findAny(this.deps.db, artworkId);
      if (row?.status === "certified") return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      // Woken by this process's confirmation, or re-read (another instance may confirm it).
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.certified.off(artworkId, done);
          resolve();
        };
        const timer = setTimeout(done, Math.min(left, 250));
        this.certified.once(artworkId, done);
      });
    }
  }

  // ---- the job ----

  readonly task: Task = async (payload) => {
    const artworkId = (payload as { artwork_id?: unknown }).artwork_id;
    if (typeof artworkId !== "string") throw new Error(`${CERTIFY_TASK}: payload without artwork_id`);
    await this.attempt(artworkId);
  };

  /** One attempt; never throws for a pipeline failure (it records it), only for database trouble. */
  async attempt(artworkId: string): Promise<void> {
    const { config, db } = this.deps;
    const artwork = await repo.startAttempt(db, artworkId, config.certification.leaseMs);
    if (!artwork) return; // certified, failed, or unknown: nothing to do
    try {
      const withImage = await this.ensureImage(artwork);
      const document = certificateDocument(withImage, withImage.image_sha256!);
      const certificateHash = certificateHashOf(canonicalDocument(document));
      // Sent and mined: the indexer's notification of its block confirms it. Should it never come
      // (the indexer is down), the sweep looks again once this attempt's lease has run out.
      await this.sendCertify(withImage, certificateHash);
    } catch (err) {
      await this.recordFailure(artwork, err);
    }
  }

  private async sendCertify(artwork: AttemptedArtwork, certificateHash: Hex): Promise<void> {
    const { config, relayer } = this.deps;
    const address = config.chain.artCertificateAddress;
    if (!address) throw new CertificationError("transient", "no ArtCertificate address is configured (ART_CERTIFICATE_ADDRESS)");
    const label = `certify ${artwork.id}`;

    // A transaction of an earlier attempt: wait for it rather than send another.
    if (artwork.certification_tx_hash) {
      const hash = artwork.certification_tx_hash as Hash;
      if (await this.transactionKnown(hash)) {
        try {
          await relayer.waitForReceipt(hash, { abi: artCertificateAbi, label });
          return;
        } catch (err) {
          if (isAlreadyCertified(err)) return;
          throw err;
        }
      }
      this.log.warn({ artwork_id: artwork.id, hash }, "the earlier certify transaction is unknown to the node; sending again");
    }

    const wallet: Address = getAddress(artwork.artist_wallet);
    // Already certified (by a concurrent or an earlier attempt): certifyBatch skips it and certify
    // reverts with AlreadyCertified, which the batcher takes as done; nothing is minted either way.
    await this.batcherFor(address).certify({
      to: wallet,
      artworkId: artwork.id,
      certificateHash,
      tokenURI: this.deps.metadataUrl(artwork.id),
      royaltyReceiver: wallet,
      royaltyBps: BigInt(config.certification.royaltyBps),
    });
  }

  private batcherFor(address: Address): CertifyBatcher {
    const { config, relayer, db } = this.deps;
    this.batcher ??= new CertifyBatcher({
      relayer,
      address,
      maxBatch: config.certification.batchSize,
      maxInFlight: BATCHES_IN_FLIGHT,
      logger: this.log,
      onSubmitted: async (artworkIds, { hash }) => {
        await repo.setTxHash(db, artworkIds, hash);
        if (config.certification.crashAfterSubmit) {
          this.log.warn({ artwork_ids: artworkIds, hash }, "CERTIFICATION_CRASH_AFTER_SUBMIT: killing the process");
          process.kill(process.pid, "SIGKILL");
        }
      },
    });
    return this.batcher;
  }

  private async transactionKnown(hash: Hash): Promise<boolean> {
    try {
      await this.deps.publicClient.getTransaction({ hash });
      return true;
    } catch (err) {
      if (err instanceof TransactionNotFoundError) return false;
      throw classifyChainError(err, artCertificateAbi, { hash });
    }
  }

  /** The artwork with its image stored: fetched from `image_source_url` the first time. */
  private async ensureImage(artwork: AttemptedArtwork): Promise<AttemptedArtwork> {
    if (artwork.image_sha256 && artwork.image_storage_key) return artwork;
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
        policy: { allowPrivate: this.deps.config.allowPrivateWebhookUrls },
      });
    } catch (err) {
      if (err instanceof UnsafeUrlError) {
        throw new CertificationError(err.reason === "unresolvable" ? "transient" : "permanent", `image_url refused: ${err.message}`, { cause: err });
      }
      if (err instanceof OutboundError && err.reason === "too_large") {
        throw new CertificationError("permanent", `image_url: the image exceeds ${MAX_IMAGE_BYTES / 1024 / 1024} MiB`, { cause: err });
      }
      throw new CertificationError("transient", `image_url could not be fetched: ${(err as Error).message}`, { cause: err });
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
    const image = await repo.setImageOnce(this.deps.db, artwork.id, {
      image_storage_key: key,
      image_sha256: sha256,
      image_content_type: type.contentType,
      image_bytes: response.body.length,
    });
    return { ...artwork, ...image };
  }

  private async recordFailure(artwork: Artwork, err: unknown): Promise<void> {
    const { config, db } = this.deps;
    const permanent =
      (err instanceof CertificationError && err.kind === "permanent") || (err instanceof PermanentChainError && !isAlreadyCertified(err));
    const reason = describe(err);
    const attempts = artwork.certification_attempts;
    if (permanent || attempts >= config.certification.maxAttempts) {
      const final = permanent ? reason : `${reason} (gave up after ${attempts} attempts)`;
      this.log.warn({ artwork_id: artwork.id, attempts, err: final }, "certification failed");
      await this.fail(artwork.id, final);
      return;
    }
    const base = Math.min(config.certification.retryBaseMs * 2 ** (attempts - 1), MAX_RETRY_DELAY_MS);
    const delayMs = Math.round(base * (0.8 + Math.random() * 0.4));
    this.log.info({ artwork_id: artwork.id, attempts, retry_in_ms: delayMs, err: reason }, "certification attempt failed; retrying");
    await db.transaction().execute(async (trx) => {
      await repo.setLease(trx, artwork.id, delayMs, reason);
      await enqueue(trx, CERTIFY_TASK, { artwork_id: artwork.id }, { jobKey: jobKeyOf(artwork.id), runAt: new Date(Date.now() + delayMs) });
    });
  }

  private async fail(artworkId: string, reason: string): Promise<void> {
    await this.deps.db.transaction().execute(async (trx) => {
      const failed = await repo.markFailed(trx, artworkId, reason);
      if (!failed) return;
      await recordEvent(trx, "artwork.certification_failed", { artwork_id: artworkId, reason, failed_at: iso(failed.failed_at!) });
    });
  }

  // ---- confirmation from the indexer ----

  /** Asks for a confirmation pass; passes never overlap, and a request during one runs another after it. */
  poke(): void {
    if (this.stopped) return;
    if (this.confirming) {
      this.confirmAgain = true;
      return;
    }
    this.confirming = (async () => {
      do {
        // Blocks come in bursts (one per transaction on a local chain): a short pause lets one
        // pass take several blocks' certificates.
        await new Promise((resolve) => setTimeout(resolve, CONFIRM_PAUSE_MS));
        this.confirmAgain = false;
        await this.confirmPending().catch((err: Error) => {
          if (err instanceof IndexerNotReadyError) this.log.debug("indexer views not published yet");
          else this.log.error({ err }, "confirmation pass failed");
        });
      } while (this.confirmAgain && !this.stopped);
    })().finally(() => {
      this.confirming = null;
    });
  }

  /** Records every artwork not yet certified that the indexer shows certified; returns how many. */
  async confirmPending(): Promise<number> {
    let confirmed = 0;
    let after: string | null = null;
    for (;;) {
      const ids = await repo.uncertifiedIds(this.deps.db, after, CONFIRM_BATCH);
      if (ids.length === 0) return confirmed;
      confirmed += await this.confirm(await this.deps.certificates.byArtworkIds(ids));
      if (ids.length < CONFIRM_BATCH) return confirmed;
      after = ids.at(-1)!;
    }
  }

  /**
   * Marks the artworks of `certificates` certified, each with its provenance entry and its
   * `artwork.certified` event, in one transaction. An artwork already certified (by another
   * instance's pass) is skipped, so each is recorded exactly once.
   */
  private async confirm(certificates: IndexedCertificate[]): Promise<number> {
    if (certificates.length === 0) return 0;
    const { db, config } = this.deps;
    const byId = new Map(certificates.map((c) => [c.artworkId, c]));
    const confirmed = await db.transaction().execute(async (trx) => {
      const ids = await repo.markCertified(
        trx,
        certificates.map((c) => ({
          id: c.artworkId,
          certificate_hash: c.certificateHash,
          token_id: c.tokenId,
          certified_at: c.certifiedAt,
          tx_hash: c.txHash,
        })),
      );
      // Recorded now, not at the block's timestamp: a local chain's clock runs ahead of the wall clock.
      await repo.insertCertifiedProvenance(trx, ids.map((id) => ({ artwork_id: id, tx_hash: byId.get(id)!.txHash })));
      for (const id of ids) {
        const c = byId.get(id)!;
        await recordEvent(trx, "artwork.certified", {
          artwork_id: id,
          certificate_hash: c.certificateHash,
          certified_at: iso(c.certifiedAt),
          token_id: Number(c.tokenId),
          contract_address: config.chain.artCertificateAddress?.toLowerCase() ?? null,
          chain_id: config.chain.id,
          tx_hash: c.txHash,
        });
      }
      return ids;
    });
    for (const id of confirmed) {
      const c = byId.get(id)!;
      this.log.info({ artwork_id: id, token_id: Number(c.tokenId), tx: c.txHash }, "artwork certified");
      this.certified.emit(id);
    }
    return confirmed.length;
  }

  /** The safety net: confirm what notifications missed, re-enqueue attempts whose process died. */
  async sweep(): Promise<void> {
    this.poke();
    const { db, config } = this.deps;
    try {
      const reclaimed = await db.transaction().execute(async (trx) => {
        const ids = await repo.reclaimExpiredLeases(trx, LEASE_GRACE_MS, config.certification.leaseMs, 100);
        for (const id of ids) await this.request(trx, id);
        return ids;
      });
      if (reclaimed.length > 0) this.log.warn({ artwork_ids: reclaimed }, "re-enqueued certifications whose attempt was lost");
    } catch (err) {
      this.log.error({ err }, "certification sweep failed");
    }
  }
}

function jobKeyOf(artworkId: string): string {
  return `certify:${artworkId}`;
}

function describe(err: unknown): string {
  if (err instanceof PermanentChainError) return `the certify transaction was refused: ${err.message}`;
  if (err instanceof Error) return err.message;
  return String(err);
}
