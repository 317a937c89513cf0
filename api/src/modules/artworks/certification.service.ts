import type { Kysely, Transaction } from "kysely";
import type { Logger } from "pino";
import { type Address, decodeEventLog, getAddress, type Hash, type Hex, keccak256, type PublicClient, toBytes, TransactionReceiptNotFoundError } from "viem";
import { artCertificateAbi } from "../../../../contracts/abi/ArtCertificate.ts";
import type { IndexedCertificate, IndexedCertificates } from "../../chain/indexer-views.ts";
import { PermanentChainError } from "../../chain/errors.ts";
import { ChainOperationFailure, type ChainOperationKind, type ChainOperations, type KeyedFacts, type SendContext } from "../../chain/operations.ts";
import { isAlreadyCertified, type Relayer } from "../../chain/relayer.ts";
import type { Config } from "../../config.ts";
import type { ChainOperation, Database, Db } from "../../db/database.ts";
import type { Artwork } from "./artworks.tables.ts";
import { GroupedWrites } from "../../db/grouped-writes.ts";
import { recordEvent, recordEvents } from "../../jobs/outbox.ts";
import { enqueue } from "../../jobs/queue.ts";
import { iso } from "../../lib/time.ts";
import * as repo from "./artworks.repository.ts";
import { canonicalDocument, certificateDocument, certificateHashOf } from "./certificate-document.ts";
import { CertifyBatcher } from "./certify-batcher.ts";

/** Downloads of image_url, in a job runner of their own (image-fetch.ts); the same job key as the certification's operation. */
export const FETCH_IMAGE_TASK = "fetch_artwork_image";
/** The chain operation kind of a certification; its key is `certify:<artwork_id>`. */
export const CERTIFY_OPERATION = "certify";

/** A pipeline step that failed: `permanent` ends the certification, `transient` is retried with backoff. */
export class CertificationError extends ChainOperationFailure {
  override name = "CertificationError";
}

/** certifyBatch transactions on their way at once; requests arriving meanwhile form the next batch. */
const BATCHES_IN_FLIGHT = 2;

/**
 * Certification attempts a worker runs at once: enough to fill the batches on their way and the next
 * one (with `CERTIFICATION_CONCURRENCY`'s default 32, a burst's transactions alternated between a
 * batch of about 30 and a lone `certify` of the 2 or 3 attempts left, in three times as many blocks).
 */
export function certificationAttemptsAtOnce(certification: { concurrency: number; batchSize: number }): number {
  return Math.max(certification.concurrency, (BATCHES_IN_FLIGHT + 1) * certification.batchSize);
}
/** An image download past its deadline counts as lost only after this much more. */
const LEASE_GRACE_MS = 2_000;
const MAX_RETRY_DELAY_MS = 3_600_000;

export interface CertificationDeps {
  db: Kysely<Database>;
  config: Config;
  logger: Logger;
  relayer: Relayer;
  publicClient: PublicClient;
  certificates: IndexedCertificates;
  /** The chain writes' component (the artworks module registers this kind there). */
  operations: ChainOperations;
  /** The artwork's ERC-721 metadata URL (the token URI). */
  metadataUrl: (artworkId: string) => string;
}

/** What confirming a certification needs of the chain's facts (the indexer's view has more). */
type ChainCertificate = Pick<IndexedCertificate, "artworkId" | "tokenId" | "certificateHash" | "certifiedAt" | "txHash">;

/**
 * Certification of artworks on-chain, as a kind of chain operation (api/src/chain/operations.ts),
 * durable and exactly-once in effect:
 *
 * 1. `request()` enqueues, in the caller's transaction, a `fetch_artwork_image` job while the image
 *    given by URL is not stored yet (image-fetch.ts: a runner of its own with a per-artist cap),
 *    which requests the certification once the image is stored; else it requests the chain
 *    operation `certify:<artwork_id>`.
 * 2. The component sends it (`send`): attempts running at the same time share `certifyBatch`
 *    transactions (CertifyBatcher). The contract mints one token per artwork id and skips an
 *    artwork that has one, so an operation sent twice, concurrently or after a crash, never mints
 *    twice. Its hash is stored on the operation when sent; a later attempt waits for it. RPC
 *    failures are retried with backoff; a permanent failure or the last attempt makes the artwork
 *    `certification_failed` with an event (`onFailed`). The chain phase's facts (transaction,
 *    attempts, lease, errors, confirmation and indexing times) are the operation's only: the
 *    artwork keeps its status, the certificate's facts and the image phase's own progress.
 * 3. The artwork becomes `certified` when the component's cursor reads its ArtworkCertified from the
 *    indexer (`readIndexed`), with its provenance entry and the `artwork.certified` event, in one
 *    transaction (`onConfirmed`). While the indexer lags, the chain itself confirms it
 *    (`readFromChain`: the receipt, else the contract), reconciled when the cursor reaches it (`onIndexed`).
 * 4. The component's sweep resumes operations whose process died; this pipeline's own sweep
 *    re-enqueues lost image downloads.
 */
export class CertificationPipeline implements ChainOperationKind<ChainCertificate> {
  readonly kind = CERTIFY_OPERATION;
  readonly abi = artCertificateAbi;
  readonly maxAttempts: number;
  readonly retryBaseMs: number;
  /** certificationAttemptsAtOnce. */
  readonly concurrency: number;
  private readonly log: Logger;
  private batcher: CertifyBatcher | null = null;
  /** Attempts starting together (a claim hands over many at once) read their artworks in one statement. */
  private readonly attemptStarts: GroupedWrites<string, (Artwork & { artist_wallet: string }) | undefined>;
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly deps: CertificationDeps) {
    this.log = deps.logger.child({ component: "certification" });
    this.maxAttempts = deps.config.certification.maxAttempts;
    this.retryBaseMs = deps.config.certification.retryBaseMs;
    this.concurrency = certificationAttemptsAtOnce(deps.config.certification);
    this.attemptStarts = new GroupedWrites((ids) => repo.findPendingWithArtistWallets(deps.db, ids));
  }

  /**
   * Enqueues the next step in the caller's transaction: the image download while the image_url is
   * not stored yet, else the chain operation. One pending job per artwork (one key for both).
   */
  async request(trx: Db, artworkId: string, options: { priority?: number; runAt?: Date } = {}): Promise<void> {
    await this.requestNext(trx, [{ id: artworkId, imageStored: !(await repo.needsImage(trx, artworkId)) }], options);
  }

  /**
   * `request` for artworks whose image state the caller knows (e.g. created in its transaction, no
   * read): a download for each image not stored yet, the chain operations of the others in one statement.
   */
  async requestNext(trx: Db, artworks: readonly { id: string; imageStored: boolean }[], options: { priority?: number; runAt?: Date } = {}): Promise<void> {
    for (const { id } of artworks.filter((a) => !a.imageStored)) {
      await enqueue(trx, FETCH_IMAGE_TASK, { artwork_id: id }, { jobKey: keyOf(id), priority: options.priority, runAt: options.runAt });
    }
    const stored = artworks.filter((a) => a.imageStored);
    await this.deps.operations.requestMany(
      trx,
      stored.map(({ id }) => ({ key: keyOf(id), kind: CERTIFY_OPERATION, payload: { artwork_id: id } })),
      { priority: options.priority, runAt: options.runAt },
    );
  }

  /** Starts the sweep of lost image downloads; the chain operations' component confirms and resumes the rest. */
  start(): void {
    this.stopped = false;
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
    await this.sweeping;
  }

  /** Resolves true once `artworkId` is certified, false after `timeoutMs` (woken by this process's confirmation, else re-read). */
  waitForCertified(artworkId: string, timeoutMs: number): Promise<boolean> {
    return this.deps.operations.waitFor(keyOf(artworkId), async () => (await repo.findAny(this.deps.db, artworkId))?.status === "certified", timeoutMs);
  }

  /** Artworks certified within [from, to) (the certifying block's time), deleted ones included: the admin report's figure. */
  countCertified(range: { from: Date; to: Date }): Promise<number> {
    return repo.countCertified(this.deps.db, range);
  }

  /**
   * Seconds from request to confirmation of the latest `n` certifications: the request is the
   * artwork's, the confirmation its chain operation's (one read each, by key).
   */
  async recentDurations(n: number): Promise<number[]> {
    const { db, operations } = this.deps;
    const latest = await repo.latestCertified(db, n);
    const confirmed = await Promise.all(latest.map(async ({ id }) => (await operations.find(db, keyOf(id)))?.confirmed_at));
    return latest.flatMap(({ certification_requested_at: requested }, i) => {
      const at = confirmed[i];
      return at ? [(at.getTime() - requested.getTime()) / 1000] : [];
    });
  }

  // ---- the operation kind ----

  /** The artwork (with its artist's wallet) goes on to `send`, undefined unless pending. */
  onAttempt(_db: Db, op: ChainOperation): Promise<(Artwork & { artist_wallet: string }) | undefined> {
    return this.attemptStarts.add(artworkIdOf(op));
  }

  async send(op: ChainOperation, ctx: SendContext): Promise<void> {
    const { config } = this.deps;
    const address = config.chain.artCertificateAddress;
    if (!address) throw new CertificationError("transient", "no ArtCertificate address is configured (ART_CERTIFICATE_ADDRESS)");
    // Pending: as the attempt's start returned it; anything else (certified meanwhile, deleted) is read again.
    const artwork = (ctx.started as (Artwork & { artist_wallet: string }) | undefined) ?? (await repo.findWithArtistWallet(this.deps.db, artworkIdOf(op)));
    if (!artwork) throw new CertificationError("permanent", "the artwork does not exist");
    if (artwork.status === "certified") return;
    if (!artwork.image_sha256) throw new CertificationError("permanent", "the artwork has no image");
    const certificateHash = certificateHashOf(canonicalDocument(certificateDocument(artwork, artwork.image_sha256)));
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

  settled(err: unknown): boolean {
    return isAlreadyCertified(err);
  }

  private batcherFor(address: Address): CertifyBatcher {
    const { config, relayer, operations } = this.deps;
    this.batcher ??= new CertifyBatcher({
      relayer,
      address,
      maxBatch: config.certification.batchSize,
      maxInFlight: BATCHES_IN_FLIGHT,
      logger: this.log,
      onSubmitted: async (artworkIds, { hash }) => {
        await operations.recordSent(artworkIds.map(keyOf), hash);
        if (config.certification.crashAfterSubmit) {
          this.log.warn({ artwork_ids: artworkIds, hash }, "CERTIFICATION_CRASH_AFTER_SUBMIT: killing the process");
          process.kill(process.pid, "SIGKILL");
        }
      },
    });
    return this.batcher;
  }

  async onFailed(trx: Transaction<Database>, op: ChainOperation, reason: string): Promise<void> {
    await this.markFailed(trx, artworkIdOf(op), reason);
  }

  async readIndexed(fromBlock: bigint, toBlock: bigint): Promise<KeyedFacts<ChainCertificate>[]> {
    return (await this.deps.certificates.inBlocks(fromBlock, toBlock)).map(keyed);
  }

  async lookupIndexed(ops: ChainOperation[]): Promise<KeyedFacts<ChainCertificate>[]> {
    return (await this.deps.certificates.byArtworkIds(ops.map(artworkIdOf))).map(keyed);
  }

  async readFromChain(ops: ChainOperation[]): Promise<KeyedFacts<ChainCertificate>[]> {
    const address = this.deps.config.chain.artCertificateAddress;
    if (!address) return [];
    const rows = ops.filter((op) => op.tx_hash).map((op) => ({ id: artworkIdOf(op), tx_hash: op.tx_hash! }));
    return (await this.readCertificatesFromChain(address, rows)).map(keyed);
  }

  /**
   * Marks the artworks certified, each with its provenance entry and its `artwork.certified` event,
   * in the component's transaction. An artwork already certified is skipped, so each is recorded once.
   */
  async onConfirmed(trx: Transaction<Database>, confirmed: { op: ChainOperation; facts: ChainCertificate; source: "indexer" | "chain" }[]): Promise<void> {
    const { config } = this.deps;
    for (const source of ["indexer", "chain"] as const) {
      const certificates = confirmed.filter((c) => c.source === source).map((c) => c.facts);
      if (certificates.length === 0) continue;
      const byId = new Map(certificates.map((c) => [c.artworkId, c]));
      const certified = await repo.markCertified(trx, certificates.map(factsOf));
      // Recorded now, not at the block's timestamp: a local chain's clock runs ahead of the wall clock.
      await repo.insertCertifiedProvenance(trx, certified.map(({ id }) => ({ artwork_id: id, tx_hash: byId.get(id)!.txHash })));
      // The artist is each event's audience (webhooks: only their subscriptions).
      await recordEvents(
        trx,
        certified.map(({ id, artist_id }) => {
          const c = byId.get(id)!;
          return {
            type: "artwork.certified",
            payload: {
              artwork_id: id,
              certificate_hash: c.certificateHash,
              certified_at: iso(c.certifiedAt),
              token_id: Number(c.tokenId),
              contract_address: config.chain.artCertificateAddress?.toLowerCase() ?? null,
              chain_id: config.chain.id,
              tx_hash: c.txHash,
            },
            audience: [artist_id],
          };
        }),
      );
      for (const { id } of certified) this.log.info({ artwork_id: id, token_id: Number(byId.get(id)!.tokenId), tx: byId.get(id)!.txHash, source }, "artwork certified");
    }
  }

  /**
   * Artworks confirmed from the chain that the indexer now shows: recorded as indexed, with the
   * indexer's facts (the same, unless a reorg moved the certificate to another transaction since,
   * which is logged). Their provenance entry and event were recorded once, at confirmation.
   */
  async onIndexed(trx: Transaction<Database>, indexed: { op: ChainOperation; facts: ChainCertificate }[]): Promise<void> {
    for (const { op, facts } of indexed) {
      if (op.tx_hash !== null && op.tx_hash !== facts.txHash) {
        this.log.warn(
          { artwork_id: facts.artworkId, chain: { tx: op.tx_hash }, indexer: { token_id: facts.tokenId.toString(), tx: facts.txHash } },
          "the indexer's certificate differs from the one confirmed from the chain (a reorg?); taking the indexer's",
        );
      }
    }
    await repo.markIndexed(trx, indexed.map((i) => factsOf(i.facts)));
  }

  // ---- image downloads (before the operation exists) ----

  /**
   * Records a failed image download: a permanent failure or the last attempt fails the
   * certification with its event; anything else is retried with backoff.
   */
  async recordFailure(artwork: Artwork, err: unknown): Promise<void> {
    const { config, db } = this.deps;
    const permanent = (err instanceof ChainOperationFailure && err.kind === "permanent") || (err instanceof PermanentChainError && !isAlreadyCertified(err));
    const reason = err instanceof Error ? err.message : String(err);
    const attempts = artwork.image_fetch_attempts;
    if (permanent || attempts >= config.certification.maxAttempts) {
      const final = permanent ? reason : `${reason} (gave up after ${attempts} attempts)`;
      this.log.warn({ artwork_id: artwork.id, attempts, err: final }, "certification failed");
      await db.transaction().execute((trx) => this.markFailed(trx, artwork.id, final));
      return;
    }
    const base = Math.min(config.certification.retryBaseMs * 2 ** (attempts - 1), MAX_RETRY_DELAY_MS);
    const delayMs = Math.round(base * (0.8 + Math.random() * 0.4));
    this.log.info({ artwork_id: artwork.id, attempts, retry_in_ms: delayMs, err: reason }, "certification attempt failed; retrying");
    await db.transaction().execute(async (trx) => {
      await repo.scheduleImageRetry(trx, artwork.id, delayMs, reason);
      await this.request(trx, artwork.id, { runAt: new Date(Date.now() + delayMs) });
    });
  }

  private async markFailed(trx: Transaction<Database>, artworkId: string, reason: string): Promise<void> {
    const failed = await repo.markFailed(trx, artworkId, reason);
    if (!failed) return;
    await recordEvent(trx, "artwork.certification_failed", { artwork_id: artworkId, reason, failed_at: iso(failed.failed_at!) }, [failed.artist_id]);
  }

  /** Re-enqueues image downloads whose process died (the chain operations' sweep covers the rest). */
  async sweep(): Promise<void> {
    const { db, config } = this.deps;
    try {
      const reclaimed = await db.transaction().execute(async (trx) => {
        const ids = await repo.reclaimLostImageFetches(trx, LEASE_GRACE_MS, config.certification.leaseMs, 100);
        for (const id of ids) await this.request(trx, id);
        return ids;
      });
      if (reclaimed.length > 0) this.log.warn({ artwork_ids: reclaimed }, "re-enqueued image downloads that were lost");
    } catch (err) {
      this.log.error({ err }, "certification sweep failed");
    }
  }

  // ---- facts from the chain while the indexer lags ----

  /**
    * The ArtworkCertified logs of the stored transactions' receipts or, when another transaction
    * minted the token (a concurrent attempt's batch), the contract's `tokenIdOfArtwork` and that
    * token's event: the same facts the indexer would record.
    */
  private async readCertificatesFromChain(address: Address, rows: { id: string; tx_hash: string }[]): Promise<ChainCertificate[]> {
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
    for (const hash of new Set(rows.map((r) => r.tx_hash))) {
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
      if (found.has(row.id) || !mined.has(row.tx_hash)) continue;
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
}

function keyOf(artworkId: string): string {
  return `certify:${artworkId}`;
}

function artworkIdOf(op: ChainOperation): string {
  return (op.payload as { artwork_id: string }).artwork_id;
}

function keyed(c: ChainCertificate): KeyedFacts<ChainCertificate> {
  return { key: keyOf(c.artworkId), facts: { artworkId: c.artworkId, tokenId: c.tokenId, certificateHash: c.certificateHash, certifiedAt: c.certifiedAt, txHash: c.txHash } };
}

function factsOf(c: ChainCertificate): repo.CertifiedFacts {
  return { id: c.artworkId, certificate_hash: c.certificateHash, token_id: c.tokenId, certified_at: c.certifiedAt, tx_hash: c.txHash };
}

function decodeArtworkCertified(log: { data: Hex; topics: Hex[] }): Pick<ChainCertificate, "artworkId" | "tokenId" | "certificateHash"> | null {
  try {
    const event = decodeEventLog({ abi: artCertificateAbi, data: log.data, topics: log.topics as [Hex, ...Hex[]] });
    if (event.eventName !== "ArtworkCertified") return null;
    return { artworkId: event.args.artworkId, tokenId: event.args.tokenId, certificateHash: event.args.certificateHash };
  } catch {
    return null; // another event of the contract (Transfer, MetadataUpdate, ...)
  }
}
