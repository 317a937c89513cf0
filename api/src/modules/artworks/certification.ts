import { EventEmitter } from "node:events";
import type { Kysely, Transaction } from "kysely";
import type { Logger } from "pino";
import {
  type Address,
  decodeEventLog,
  getAddress,
  type Hash,
  type Hex,
  keccak256,
  type PublicClient,
  toBytes,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
} from "viem";
import { artCertificateAbi } from "../../chain/abi/ArtCertificate.ts";
import { type IndexedCertificate, type IndexedCertificates, IndexerNotReadyError } from "../../chain/certificates.ts";
import { classifyChainError, PermanentChainError } from "../../chain/errors.ts";
import type { IndexerLagState } from "../../chain/indexer-lag.ts";
import { IndexerListener } from "../../chain/indexer-listener.ts";
import { isAlreadyCertified, type Relayer } from "../../chain/relayer.ts";
import type { Config } from "../../config.ts";
import type { Artwork, Database } from "../../db/database.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import { enqueue, type Task } from "../../jobs/queue.ts";
import { iso } from "../../lib/time.ts";
import * as repo from "./artworks.repository.ts";
import { canonicalDocument, certificateDocument, certificateHashOf } from "./certificate-document.ts";
import { CertifyBatcher } from "./certify-batcher.ts";

export const CERTIFY_TASK = "certify_artwork";
/** Downloads of image_url, in a job runner of their own (image-fetch.ts); the same job key as CERTIFY_TASK. */
export const FETCH_IMAGE_TASK = "fetch_artwork_image";

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
  certificates: IndexedCertificates;
  /** The artwork's ERC-721 metadata URL (the token URI). */
  metadataUrl: (artworkId: string) => string;
}

/**
 * Certification of artworks on-chain, durable and exactly-once in effect:
 *
 * 1. `request()` enqueues a `certify_artwork` job in the caller's transaction, or, while the image
 *    given by URL is not stored yet, a `fetch_artwork_image` job (image-fetch.ts: a runner of its
 *    own with a per-artist cap, so slow URLs never hold a certification slot), which requests the
 *    certification once the image is stored.
 * 2. The job (`task`) builds the certificate document and has it certified on-chain: attempts
 *    running at the same time share `certifyBatch` transactions (CertifyBatcher). The contract mints one token per artwork id and skips an
 *    artwork that has one, so a job that runs twice, concurrently or after a crash, never mints
 *    twice. The transaction hash is stored as soon as it is sent; a later attempt waits for that
 *    transaction instead of sending another. RPC failures are retried with exponential backoff; a
 *    permanent failure (a revert, an unusable image) or the last failed attempt makes the artwork
 *    `certification_failed` with an event.
 * 3. The artwork becomes `certified` when the indexer has the chain's ArtworkCertified
 *    (`confirm`): on each indexed block (LISTEN on the indexer's channel) the artworks not yet
 *    certified are matched against the certificate view, and each match is recorded, with its
 *    provenance entry and the `artwork.certified` event, in one transaction. While the indexer
 *    lags (`onIndexerLag`), the same record is made from the chain itself (`confirmFromChain`:
 *    the stored transaction's receipt, else the contract), and reconciled with the indexer's view
 *    once it catches up (`reconcileIndexed`).
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
  private chainConfirming: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly deps: CertificationDeps) {
    this.log = deps.logger.child({ component: "certification" });
    this.certified.setMaxListeners(0);
  }

  /**
   * Enqueues the next step in the caller's transaction: the image download while the image_url is
   * not stored yet, else a certification attempt. One pending job per artwork (one key for both).
   */
  async request(trx: Kysely<Database> | Transaction<Database>, artworkId: string, options: { priority?: number; runAt?: Date } = {}): Promise<void> {
    const task = (await repo.needsImage(trx, artworkId)) ? FETCH_IMAGE_TASK : CERTIFY_TASK;
    await enqueue(trx, task, { artwork_id: artworkId }, { jobKey: jobKeyOf(artworkId), priority: options.priority, runAt: options.runAt });
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
    await Promise.all([this.confirming, this.sweeping, this.chainConfirming]);
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
    // A certification job for an artwork still without its image (queued by an older deployment): the download comes first.
    if (await repo.needsImage(db, artworkId)) return this.request(db, artworkId);
    const artwork = await repo.startAttempt(db, artworkId, config.certification.leaseMs);
    if (!artwork) return; // certified, failed, or unknown: nothing to do
    try {
      if (!artwork.image_sha256) throw new CertificationError("permanent", "the artwork has no image");
      const document = certificateDocument(artwork, artwork.image_sha256);
      const certificateHash = certificateHashOf(canonicalDocument(document));
      // Sent and mined: the indexer's notification of its block confirms it. Should it never come
      // (the indexer is down), the sweep looks again once this attempt's lease has run out, and a
      // lagging indexer makes the chain itself the confirmation (confirmFromChain).
      await this.sendCertify(artwork, certificateHash);
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

  /**
   * Records a failed step (a certification attempt, or an image download): a permanent failure or
   * the last attempt fails the certification with its event; anything else is retried with backoff.
   */
  async recordFailure(artwork: Artwork, err: unknown): Promise<void> {
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
      await this.request(trx, artwork.id, { runAt: new Date(Date.now() + delayMs) });
    });
  }

  private async fail(artworkId: string, reason: string): Promise<void> {
    await this.deps.db.transaction().execute(async (trx) => {
      const failed = await repo.markFailed(trx, artworkId, reason);
      if (!failed) return;
      await recordEvent(trx, "artwork.certification_failed", { artwork_id: artworkId, reason, failed_at: iso(failed.failed_at!) }, [failed.artist_id]);
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
        // Then whatever was confirmed from the chain meanwhile and is now indexed too.
        await this.confirmPending()
          .then(() => this.reconcileIndexed())
          .catch((err: Error) => {
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
    return sumOverPages(
      (after) => repo.uncertifiedIds(this.deps.db, after, CONFIRM_BATCH),
      (id) => id,
      async (ids) => this.confirm(await this.deps.certificates.byArtworkIds(ids)),
    );
  }

  /**
   * Marks the artworks of `certificates` certified, each with its provenance entry and its
   * `artwork.certified` event, in one transaction. An artwork already certified (by another
   * instance's pass, or the other source) is skipped, so each is recorded exactly once.
   */
  private async confirm(certificates: ChainCertificate[], source: "indexer" | "chain" = "indexer"): Promise<number> {
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
        source,
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
        }, [(await repo.findAny(trx, id))!.artist_id]); // the artist is the audience (webhooks: only their subscriptions)
      }
      return ids;
    });
    for (const id of confirmed) {
      const c = byId.get(id)!;
      this.log.info({ artwork_id: id, token_id: Number(c.tokenId), tx: c.txHash, source }, "artwork certified");
      this.certified.emit(id);
    }
    return confirmed.length;
  }

  // ---- confirmation from the chain while the indexer lags ----

  /** Each verdict of the IndexerLagMonitor: while the indexer lags, the chain confirms (one pass at a time). */
  onIndexerLag(state: IndexerLagState): void {
    if (!state.lagging || this.stopped || this.chainConfirming) return;
    this.chainConfirming = this.confirmFromChain()
      .then(() => undefined)
      .catch((err: Error) => this.log.warn({ err: err.message }, "confirmation from the chain failed; trying again at the next sample"))
      .finally(() => {
        this.chainConfirming = null;
      });
  }

  /**
   * Confirms the artworks not yet certified whose certify transaction was sent, from the chain
   * itself: the ArtworkCertified logs of the stored transaction's receipt or, when another
   * transaction minted the token (a concurrent attempt's batch), the contract's `tokenIdOfArtwork`
   * and that token's event. Recorded exactly as the indexer's confirmation would (same facts, one provenance entry,
   * one event), marked not yet indexed until `reconcileIndexed` sees it in the indexer's view.
   */
  async confirmFromChain(): Promise<number> {
    const address = this.deps.config.chain.artCertificateAddress;
    if (!address) return 0;
    return sumOverPages(
      (after) => repo.sentUncertified(this.deps.db, after, CONFIRM_BATCH),
      (row) => row.id,
      async (rows) => this.confirm(await this.readCertificatesFromChain(address, rows), "chain"),
    );
  }

  private async readCertificatesFromChain(address: Address, rows: { id: string; certification_tx_hash: string }[]): Promise<ChainCertificate[]> {
    const client = this.deps.publicClient;
    const wanted = new Set(rows.map((r) => r.id));
    const found = new Map<string, ChainCertificate>();
    const blockTimes = new Map<bigint, Promise<Date>>();
    // The indexer's certified_at is the block's timestamp: the same here.
    const timeOf = (blockNumber: bigint) => {
      if (!blockTimes.has(blockNumber)) blockTimes.set(blockNumber, client.getBlock({ blockNumber }).then((b) => new Date(Number(b.timestamp) * 1000)));
      return blockTimes.get(blockNumber)!;
    };
    const mined = new Set<string>();
    for (const hash of new Set(rows.map((r) => r.certification_tx_hash))) {
      const receipt = await client.getTransactionReceipt({ hash: hash as Hash }).catch((err: unknown) => {
        if (err instanceof TransactionReceiptNotFoundError) return null;
        throw err;
      });
      if (!receipt) continue; // not mined yet: nothing to confirm
      mined.add(hash);
      if (receipt.status !== "success") continue;
      for (const log of receipt.logs) {
        if (log.address.toLowerCase() !== address.toLowerCase()) continue;
        const event = decodeArtworkCertified(log);
        if (!event || !wanted.has(event.artworkId) || found.has(event.artworkId)) continue;
        found.set(event.artworkId, { ...event, txHash: receipt.transactionHash, certifiedAt: await timeOf(receipt.blockNumber) });
      }
    }
    for (const row of rows) {
      if (found.has(row.id) || !mined.has(row.certification_tx_hash)) continue;
      const tokenId = await client.readContract({ address, abi: artCertificateAbi, functionName: "tokenIdOfArtwork", args: [keccak256(toBytes(row.id))] });
      if (tokenId === 0n) continue;
      const [log] = await client.getContractEvents({
        address,
        abi: artCertificateAbi,
        eventName: "ArtworkCertified",
        args: { tokenId },
        fromBlock: BigInt(this.deps.config.chain.startBlock),
        strict: true,
      });
      if (!log) continue;
      found.set(row.id, {
        artworkId: row.id,
        tokenId,
        certificateHash: log.args.certificateHash,
        txHash: log.transactionHash,
        certifiedAt: await timeOf(log.blockNumber),
      });
    }
    return [...found.values()];
  }

  /**
   * Artworks confirmed from the chain that the indexer now shows: recorded as indexed, with the
   * indexer's facts (the same, unless a reorg moved the certificate to another transaction since,
   * which is logged). Their provenance entry and event were recorded once, at confirmation.
   */
  async reconcileIndexed(): Promise<number> {
    return sumOverPages(
      (after) => repo.certifiedUnindexed(this.deps.db, after, CONFIRM_BATCH),
      (row) => row.id,
      (confirmed) => this.reconcile(confirmed),
    );
  }

  private async reconcile(confirmed: repo.CertifiedFacts[]): Promise<number> {
    const recorded = new Map(confirmed.map((c) => [c.id, c]));
    const indexed = (await this.deps.certificates.byArtworkIds(confirmed.map((c) => c.id))).map((c) => ({
      id: c.artworkId,
      certificate_hash: c.certificateHash,
      token_id: c.tokenId,
      certified_at: c.certifiedAt,
      tx_hash: c.txHash,
    }));
    for (const c of indexed) {
      const r = recorded.get(c.id)!;
      if (r.token_id !== c.token_id || r.tx_hash !== c.tx_hash || r.certificate_hash !== c.certificate_hash) {
        this.log.warn(
          { artwork_id: c.id, chain: { token_id: r.token_id.toString(), tx: r.tx_hash }, indexer: { token_id: c.token_id.toString(), tx: c.tx_hash } },
          "the indexer's certificate differs from the one confirmed from the chain (a reorg?); taking the indexer's",
        );
      }
    }
    await this.deps.db.transaction().execute((trx) => repo.markIndexed(trx, indexed));
    return indexed.length;
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

/** Runs `handle` over the pages of `page` (CONFIRM_BATCH rows, by id) until a short one; sums what it returns. */
async function sumOverPages<T>(page: (after: string | null) => Promise<T[]>, idOf: (row: T) => string, handle: (rows: T[]) => Promise<number>): Promise<number> {
  let total = 0;
  let after: string | null = null;
  for (;;) {
    const rows = await page(after);
    if (rows.length > 0) total += await handle(rows);
    if (rows.length < CONFIRM_BATCH) return total;
    after = idOf(rows.at(-1)!);
  }
}

/** What confirming a certification needs of the chain's facts (the indexer's view has more). */
type ChainCertificate = Pick<IndexedCertificate, "artworkId" | "tokenId" | "certificateHash" | "certifiedAt" | "txHash">;

function decodeArtworkCertified(log: { data: Hex; topics: Hex[] }): Pick<ChainCertificate, "artworkId" | "tokenId" | "certificateHash"> | null {
  try {
    const event = decodeEventLog({ abi: artCertificateAbi, data: log.data, topics: log.topics as [Hex, ...Hex[]] });
    if (event.eventName !== "ArtworkCertified") return null;
    return { artworkId: event.args.artworkId, tokenId: event.args.tokenId, certificateHash: event.args.certificateHash };
  } catch {
    return null; // another event of the contract (Transfer, MetadataUpdate, ...)
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
