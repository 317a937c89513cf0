import type { Kysely } from "kysely";
import type { Logger } from "pino";
import { type IndexedCertificates, IndexerNotReadyError, readViews, type TransferJson, transfersFromJson } from "../../chain/indexer-views.ts";
import type { Config } from "../../config.ts";
import type { Database, Db } from "../../db/database.ts";
import type { Artwork } from "./artworks.tables.ts";
import type { Actor } from "../../lib/actor.ts";
import { GroupedWrites } from "../../db/grouped-writes.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import type { UploadedFile } from "../../http/multipart.ts";
import { ApiError, type FieldError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { checkedImage } from "../../lib/images.ts";
import { centsToUsd, usdToCents } from "../../lib/money.ts";
import { checkUrl, type OutboundPolicy, UnsafeUrlError } from "../../lib/outbound.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import type { ObjectStorage } from "../../lib/storage.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import type { UsersService } from "../users/users.service.ts";
import * as repo from "./artworks.repository.ts";
import { type ArtworkCreate, type ArtworkPatch, IMMUTABLE_FIELDS } from "./artworks.schemas.ts";
import { type CertificateDocument, canonicalDocument, certificateDocument, certificateHashOf } from "./certificate-document.ts";
import type { CertificationPipeline } from "./certification.service.ts";
import type { OwnershipService } from "./ownership.service.ts";
import type { ArtworkLinks } from "./artwork-links.ts";
import { provenanceOf } from "./artwork-provenance.ts";
import { askEntry } from "./artwork-asks.service.ts";

/** How many recent certifications the estimate looks at, and what it says before there are any. */
const ESTIMATE_SAMPLE = 50;
const DEFAULT_ESTIMATE = "5-30 seconds";
export const ADMIN_VERIFY_WAIT_MS = 10_000;
/** The estimate is recomputed at most this often (a burst of uploads asks for it each time). */
const ESTIMATE_CACHE_MS = 1_000;

/** An artwork to create, as `create` built it. */
export interface NewCreation {
  artwork: repo.NewArtwork & { id: string };
  actorId: string;
  imageStored: boolean;
}

export class ArtworksService {
  private estimate: { text: Promise<string>; until: number } | null = null;
  /**
   * Creations under way without an Idempotency-Key, written together: each group in one
   * transaction of three statements (artworks, provenance, certification requests), so a burst of
   * uploads costs a few transactions rather than one each. A group that fails is written again one
   * creation at a time, so a bad one fails alone.
   */
  readonly creations = new GroupedWrites((rows: NewCreation[]) => this.deps.db.transaction().execute((trx) => this.insertCreations(trx, rows)));

  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      config: Config;
      logger: Logger;
      storage: ObjectStorage;
      users: UsersService;
      ownership: OwnershipService;
      certificates: IndexedCertificates;
      certification: CertificationPipeline;
      links: ArtworkLinks;
    },
  ) {}

  get links(): ArtworkLinks {
    return this.deps.links;
  }

  // ---- create ----

  async create(actor: Actor, input: ArtworkCreate, file: UploadedFile | undefined, transact: Transact = transactOn(this.deps.db)) {
    const { config, storage } = this.deps;
    const artistId = await this.artistFor(actor, input.artist_id);

    if (file && input.image_url !== undefined) {
      throw ApiError.validation([{ field: "image_url", code: "invalid_union", message: "send either the image file or image_url, not both" }]);
    }
    if (!file && input.image_url === undefined) {
      throw ApiError.validation([{ field: "image", code: "required", message: "send the image: image_url (JSON) or an image file (multipart/form-data)" }]);
    }
    let image: { key: string; sha256: string; contentType: string; bytes: number; body: Buffer } | null = null;
    const id = newId("artwork");
    if (file) {
      const type = checkedImage(file);
      image = { key: `artworks/${id}/${file.sha256}.${type.extension}`, sha256: file.sha256, contentType: type.contentType, bytes: file.bytes.length, body: file.bytes };
    } else {
      checkImageUrl(input.image_url!, config.outboundPolicy);
    }

    // The answer is built inside the transaction (it may be stored there for Idempotency-Key replays).
    const estimate = await this.estimatedCertificationTime();
    // The file first, outside the transaction: objects are immutable and named by this request's
    // artwork id and the file's SHA-256, so a retry (a new request after a crash before the commit)
    // stores its own copy harmlessly; only an object whose request died before committing is left
    // unreferenced. If the transaction fails, the object is removed again.
    if (image) await storage.put(image.key, image.body, image.contentType);
    const creation: NewCreation = {
      actorId: actor.userId,
      imageStored: image !== null,
      artwork: {
        id,
        artist_id: artistId,
        title: input.title,
        year: input.year,
        medium: input.medium,
        dimensions: JSON.stringify(input.dimensions),
        description: input.description ?? null,
        price_cents: input.price_usd === undefined || input.price_usd === null ? null : usdToCents(input.price_usd),
        for_sale: input.for_sale ?? false,
        status: "pending_certification",
        image_source_url: image ? null : input.image_url!,
        image_storage_key: image?.key ?? null,
        image_sha256: image?.sha256 ?? null,
        image_content_type: image?.contentType ?? null,
        image_bytes: image?.bytes ?? null,
        certificate_hash: null,
        token_id: null,
        certified_at: null,
        certified_by: null,
        certification_error: null,
        failed_at: null,
        // A download to come: the sweep's deadline for its job.
        image_fetch_deadline: image ? null : new Date(Date.now() + config.certification.leaseMs),
        deleted_at: null,
      },
    };
    const answerOf = (created: Artwork) => ({
      id: created.id,
      title: created.title,
      artist_id: created.artist_id,
      status: created.status,
      certificate_hash: null,
      estimated_certification_time: estimate,
      created_at: iso(created.created_at),
    });
    try {
      // Alone (no Idempotency-Key answer to store with it): with the other creations under way.
      if (transact.selfCommitting) {
        return await transact.selfCommitting(async (db, { alone }) => answerOf(alone ? await this.creations.add(creation) : (await this.insertCreations(db, [creation]))[0]!));
      }
      return await transact(async (trx) => answerOf((await this.insertCreations(trx, [creation]))[0]!));
    } catch (err) {
      if (image) await storage.delete(image.key).catch(() => {});
      throw err;
    }
  }

  /** Stores new artworks, each with its `created` (and `for_sale`) provenance, and requests their certification, in `trx`. */
  private async insertCreations(trx: Db, creations: NewCreation[]): Promise<Artwork[]> {
    const created = await repo.insertMany(trx, creations.map((c) => c.artwork));
    await repo.insertProvenanceEntries(
      trx,
      created.flatMap((artwork, i) => {
        const entry = { artwork_id: artwork.id, actor_id: creations[i]!.actorId, occurred_at: artwork.created_at };
        return artwork.for_sale ? [{ ...entry, event: "created" }, { ...entry, ...askEntry(true, artwork.price_cents) }] : [{ ...entry, event: "created" }];
      }),
    );
    await this.deps.certification.requestNext(trx, creations.map((c) => ({ id: c.artwork.id, imageStored: c.imageStored })));
    return created;
  }

  /** Whose artwork a new one is: the caller's own, or, for an admin, the artist named. */
  private async artistFor(actor: Actor, requested: string | undefined): Promise<string> {
    if (requested === undefined || requested === actor.userId) return actor.userId;
    if (actor.role !== "admin") throw ApiError.forbidden("Artists register their own artworks; only admins may name another artist_id");
    const artist = isId("user", requested) ? await this.deps.users.get(requested).catch(() => undefined) : undefined;
    if (!artist) throw ApiError.validation([{ field: "artist_id", code: "not_found", message: "no such user" }]);
    if (artist.role === "collector") throw ApiError.validation([{ field: "artist_id", code: "invalid_role", message: "the user is not an artist" }]);
    if (artist.status !== "active") throw ApiError.validation([{ field: "artist_id", code: "invalid_state", message: "the artist is suspended" }]);
    return artist.id;
  }

  /**
   * An honest range from the latest certifications (request to confirmation, as recorded): their
   * 10th to 90th percentile, e.g. "2-5 seconds"; a default before there are any. Creations arriving
   * together share one reading.
   */
  estimatedCertificationTime(): Promise<string> {
    if (this.estimate && this.estimate.until > Date.now()) return this.estimate.text;
    const text = this.deps.certification.recentDurations(ESTIMATE_SAMPLE).then((seconds) => formatEstimate(seconds.sort((a, b) => a - b)));
    const estimate = { text, until: Date.now() + ESTIMATE_CACHE_MS };
    this.estimate = estimate;
    text.catch(() => {
      if (this.estimate === estimate) this.estimate = null; // read again by the next creation
    });
    return text;
  }

  // ---- read ----

  async list(filter: { medium?: string; price_min?: number; price_max?: number; artist_id?: string; verified?: boolean; for_sale?: boolean; q?: string }, page: Page) {
    const { rows, total } = await repo.search(
      this.deps.db,
      {
        medium: filter.medium,
        // Filters in dollars match cents inclusively at both ends.
        priceMinCents: filter.price_min === undefined ? undefined : BigInt(Math.ceil(filter.price_min * 100 - 1e-6)),
        priceMaxCents: filter.price_max === undefined ? undefined : BigInt(Math.floor(filter.price_max * 100 + 1e-6)),
        artistId: filter.artist_id,
        verified: filter.verified,
        forSale: filter.for_sale,
        q: filter.q,
      },
      page,
    );
    return paginated(rows.map((a) => this.toListItem(a)), page, total);
  }

  private toListItem(a: Artwork) {
    return {
      id: a.id,
      title: a.title,
      artist_id: a.artist_id,
      year: a.year,
      medium: a.medium,
      price_usd: a.price_cents === null ? null : centsToUsd(a.price_cents),
      for_sale: a.for_sale,
      verified: a.status === "certified",
      fractional_available: a.fractionalized_at !== null,
      thumbnail_url: this.deps.links.image(a.id),
      status: a.status,
      created_at: iso(a.created_at),
    };
  }

  /** An artwork as anyone sees it; its holder and admins (`viewer`) also see a failing image download. */
  async detail(id: string, viewer: Actor | null = null) {
    const a = found(isId("artwork", id) ? await this.findWithProvenance(id) : undefined, "Artwork");
    const links = this.deps.links;
    const { thumbnail_url, ...item } = this.toListItem(a);
    const download = await this.failingDownload(a, viewer);
    return {
      ...item,
      artist: { id: a.artist_id, name: a.artist_name },
      dimensions: a.dimensions,
      description: a.description,
      certificate_hash: a.certificate_hash,
      token_id: a.token_id === null ? null : Number(a.token_id),
      certified_at: isoOrNull(a.certified_at),
      certification_error: a.certification_error, // set with certification_failed only
      image_url: links.image(a.id),
      thumbnail_url,
      image_sha256: a.image_sha256,
      media: {
        image_url: links.image(a.id),
        thumbnail_url,
        metadata_url: links.metadata(a.id),
        certificate_url: links.certificate(a.id),
        certificate_document_url: links.document(a.id),
        verify_url: links.verify(a.id),
      },
      provenance: provenanceOf(a.provenance, a.token_id === null ? [] : transfersFromJson(a.token_id, a.transfers)),
      ...(download ? { image_download: download } : {}),
      created_at: iso(a.created_at),
      updated_at: iso(a.updated_at),
    };
  }

  /**
   * The provenance of an artwork, a removed one too (its certificate and history outlive the
   * catalogue's record): the off-chain entries and the chain's transfers, in time order. Unknown: undefined.
   */
  async provenance(id: string) {
    const a = isId("artwork", id) ? await this.findWithProvenance(id, { includeRemoved: true }) : undefined;
    return a && provenanceOf(a.provenance, a.token_id === null ? [] : transfersFromJson(a.token_id, a.transfers));
  }

  /** The artwork, its off-chain provenance and its certificate's transfers in one statement; before the indexer publishes its views, without transfers. */
  /**
   * While its image_url is being downloaded and an attempt failed: why, and how many attempts are
   * left before the certification fails (artwork.certification_failed). For the holder (the artist
   * before certification) and admins only: the reason can name the URL's host.
   */
  private async failingDownload(a: Artwork, viewer: Actor | null) {
    if (a.status !== "pending_certification" || a.image_fetch_error === null || a.image_sha256 !== null || !viewer) return null;
    if (viewer.role !== "admin" && (await this.deps.ownership.holderOf(a)).user?.id !== viewer.userId) return null;
    return { attempts: a.image_fetch_attempts, max_attempts: this.deps.config.certification.maxAttempts, last_error: a.image_fetch_error };
  }

  private async findWithProvenance(id: string, options: { includeRemoved?: boolean } = {}) {
    try {
      return await readViews(() => repo.findWithProvenance(this.deps.db, id, (tokenId) => this.deps.certificates.transfersJson(tokenId), options));
    } catch (err) {
      if (!(err instanceof IndexerNotReadyError)) throw err;
      return repo.findWithProvenance<TransferJson>(this.deps.db, id, undefined, options);
    }
  }

  /** The stored image of an artwork (deleted ones too: the certificate still points at it). */
  async image(id: string): Promise<{ body: Buffer; contentType: string; sha256: string }> {
    const a = found(isId("artwork", id) ? await repo.findAny(this.deps.db, id) : undefined, "Artwork");
    if (!a.image_storage_key || !a.image_sha256) throw new ApiError(404, "not_found", "The image has not been fetched from image_url yet");
    const object = await this.deps.storage.get(a.image_storage_key);
    if (!object) throw new Error(`image object ${a.image_storage_key} of ${a.id} is missing from storage`);
    return { body: object.body, contentType: a.image_content_type ?? object.contentType, sha256: a.image_sha256 };
  }

  /**
   * The certificate document as the artwork's record gives it now, with its canonical text and
   * hash; null before the image is known. Deleted artworks included.
   */
  async certificateDocumentOf(id: string): Promise<{ artwork: Artwork; document: CertificateDocument; canonical: string; hash: `0x${string}` } | null> {
    const a = found(isId("artwork", id) ? await repo.findAny(this.deps.db, id) : undefined, "Artwork");
    if (!a.image_sha256) return null;
    const document = certificateDocument(a, a.image_sha256);
    const canonical = canonicalDocument(document);
    return { artwork: a, document, canonical, hash: certificateHashOf(canonical) };
  }

  /** Whether the artwork exists (deleted ones included), and its state. */
  async findAny(id: string): Promise<Artwork | undefined> {
    return isId("artwork", id) ? repo.findAny(this.deps.db, id) : undefined;
  }

  /** ERC-721 metadata JSON: the token URI of the artwork's certificate. */
  async tokenMetadata(id: string) {
    const doc = await this.certificateDocumentOf(id);
    if (!doc) throw new ApiError(404, "not_found", "The artwork's image has not been fetched yet, so its certificate document does not exist");
    const { artwork: a, hash } = doc;
    const artist = await this.deps.users.get(a.artist_id);
    const d = a.dimensions;
    return {
      name: a.title,
      description: a.description ?? "",
      image: this.deps.links.image(a.id),
      external_url: this.deps.links.verify(a.id),
      attributes: [
        { trait_type: "Artist", value: artist.display_name },
        { trait_type: "Artist ID", value: a.artist_id },
        { trait_type: "Year", value: a.year },
        { trait_type: "Medium", value: a.medium },
        { trait_type: "Dimensions", value: `${d.width} x ${d.height} ${d.unit}` },
        { trait_type: "Certificate hash", value: hash },
      ],
      certificate_hash: hash,
      certificate_document: this.deps.links.document(a.id),
      image_sha256: a.image_sha256,
    };
  }

  // ---- change ----

  /** The owner's change of price, sale flag or description (docs/ownership-and-money.md: the certificate's holder, or an admin). */
  async update(actor: Actor, id: string, patch: ArtworkPatch) {
    const immutable = IMMUTABLE_FIELDS.filter((f) => f in patch);
    const { db, ownership } = this.deps;
    if (!isId("artwork", id)) throw ApiError.notFound("Artwork");
    return db.transaction().execute(async (trx) => {
      // The ask (price_usd, for_sale) is a move of its own: a listing or shares refuse it (artwork-asks.service.ts).
      const asks = patch.price_usd !== undefined || patch.for_sale !== undefined;
      const { artwork: a, holder } = found(await ownership.decide(trx, id, asks ? "ask" : "edit", actor), "Artwork");
      if (immutable.length > 0) {
        const errors: FieldError[] = immutable.map((field) => ({ field, code: "immutable_field", message: "is part of the certificate and cannot change" }));
        throw new ApiError(409, "immutable_field", `${immutable.join(", ")} ${immutable.length > 1 ? "are" : "is"} part of the artwork's certificate and cannot change`, { errors });
      }
      const priceCents = patch.price_usd === undefined ? a.price_cents : patch.price_usd === null ? null : usdToCents(patch.price_usd);
      const forSale = patch.for_sale ?? a.for_sale;
      if (forSale && priceCents === null) {
        throw ApiError.validation([{ field: patch.for_sale !== undefined ? "for_sale" : "price_usd", code: "invalid_state", message: "an artwork for sale needs a price_usd" }]);
      }
      // The ask is the holder's: their wallet is written with it.
      const updated = (await repo.update(trx, a.id, {
        ...(patch.price_usd !== undefined ? { price_cents: priceCents } : {}),
        ...(patch.description !== undefined ? { description: patch.description } : {}),
        ...(patch.for_sale !== undefined ? { for_sale: patch.for_sale } : {}),
        ...(asks ? { for_sale_wallet: a.token_id === null ? null : holder.wallet } : {}),
      }))!;
      if (patch.for_sale !== undefined && patch.for_sale !== a.for_sale) {
        await repo.insertProvenance(trx, { artwork_id: a.id, ...askEntry(updated.for_sale, updated.price_cents), actor_id: actor.userId, occurred_at: updated.updated_at });
      }
      return {
        id: updated.id,
        ...(patch.price_usd !== undefined ? { price_usd: updated.price_cents === null ? null : centsToUsd(updated.price_cents) } : {}),
        ...(patch.description !== undefined ? { description: updated.description } : {}),
        ...(patch.for_sale !== undefined ? { for_sale: updated.for_sale } : {}),
        updated_at: iso(updated.updated_at),
      };
    });
  }

  /**
   * Soft delete by the owner or an admin (the move `remove`): the record leaves the catalogue; its
   * certificate stays withdrawable and its provenance readable. Refused while anything hangs off it
   * (a listing, a sale or an order under way, a dispute, shares, a withdrawal).
   */
  async remove(actor: Actor, id: string) {
    const { db, ownership } = this.deps;
    if (!isId("artwork", id)) throw ApiError.notFound("Artwork");
    return db.transaction().execute(async (trx) => {
      const a = found(await ownership.decide(trx, id, "remove", actor), "Artwork").artwork;
      const deleted = (await repo.update(trx, a.id, { deleted_at: new Date(), for_sale: false }))!;
      await repo.insertProvenance(trx, { artwork_id: a.id, event: "deleted", actor_id: actor.userId, occurred_at: deleted.deleted_at! });
      return { deleted: true as const, id: a.id, certificate_preserved: true as const, deleted_at: iso(deleted.deleted_at!) };
    });
  }

  /**
   * A marketplace step in the artwork's provenance: `listed`, `delisted`, `sold` (price, parties and
   * the transfer's transaction) or `returned` (a refunded sale's certificate back to its seller), in
   * the caller's transaction (`db`): other modules record provenance through here, never in the table.
   */
  async recordMarketplaceProvenance(
    db: Db,
    entry: { artworkId: string; event: "listed" | "delisted" | "sold" | "returned"; actorId: string | null; details: Record<string, string | number>; txHash?: string | null; at: Date },
  ): Promise<void> {
    await repo.insertProvenance(db, {
      artwork_id: entry.artworkId,
      event: entry.event,
      actor_id: entry.actorId,
      tx_hash: entry.txHash ?? null,
      details: entry.details,
      occurred_at: entry.at,
    });
  }

  /**
   * Marks the artwork fractionalized (its shares are sold, never the whole work), or no longer (its
   * share class could not be created), in the caller's transaction.
   */
  async markFractionalized(trx: Db, artworkId: string, fractionalized = true): Promise<void> {
    // Its shares are sold, not the work: the holder's ask ends with it (artwork-asks.service.ts).
    await repo.setFractionalized(trx, artworkId, fractionalized);
  }

  /**
   * Admin override: certifies a pending or failed artwork through the same pipeline, recording who
   * and why; answers once the chain has it (`certified`) or, after a bounded wait, with the pending
   * state (the route answers 200 or 202 from the status).
   */
  async adminVerify(adminId: string, id: string, input: { override_reason: string; inspector_id?: string | undefined }, transact: Transact = transactOn(this.deps.db)) {
    const { db, config, certification } = this.deps;
    // The transaction's answer (202, pending) is what a crash during the wait leaves to replay.
    await transact(async (trx) => {
      const a = found(isId("artwork", id) ? await repo.lockAny(trx, id) : undefined, "Artwork");
      if (a.deleted_at) throw ApiError.conflict("invalid_state", "The artwork is deleted");
      if (a.status === "certified") throw ApiError.conflict("invalid_state", "The artwork is already certified");
      await repo.update(trx, a.id, {
        status: "pending_certification",
        certified_by: adminId,
        certification_error: null,
        failed_at: null,
        // A download still to make starts over (a failed chain operation starts over when requested).
        ...(a.image_sha256 === null ? { image_fetch_attempts: 0, image_fetch_deadline: new Date(Date.now() + config.certification.leaseMs) } : {}),
        // A retry of a failed certification is a new request; a pending one keeps its start.
        ...(a.status === "certification_failed" ? { certification_requested_at: new Date() } : {}),
      });
      await repo.insertProvenance(trx, {
        artwork_id: a.id,
        event: "verification_override",
        actor_id: adminId,
        details: { reason: input.override_reason, ...(input.inspector_id ? { inspector_id: input.inspector_id } : {}) },
      });
      await certification.request(trx, a.id, { priority: -10 });
      return { artwork_id: a.id, status: "pending_certification" as const, certificate_hash: a.certificate_hash, certified_at: isoOrNull(a.certified_at), certified_by: adminId };
    });
    await certification.waitForCertified(id, ADMIN_VERIFY_WAIT_MS);
    const a = (await repo.findAny(db, id))!;
    return {
      artwork_id: a.id,
      status: a.status,
      certificate_hash: a.certificate_hash,
      certified_at: isoOrNull(a.certified_at),
      certified_by: adminId,
    };
  }
}

/** Refuses at once what the fetch would refuse for sure; names are resolved (and checked) by the pipeline. */
function checkImageUrl(raw: string, policy: OutboundPolicy): void {
  try {
    checkUrl(raw, policy);
  } catch (err) {
    if (err instanceof UnsafeUrlError) throw ApiError.validation([{ field: "image_url", code: "invalid_url", message: err.message }]);
    throw err;
  }
}

export function formatEstimate(sortedSeconds: number[]): string {
  if (sortedSeconds.length === 0) return DEFAULT_ESTIMATE;
  const at = (p: number) => sortedSeconds[Math.min(sortedSeconds.length - 1, Math.max(0, Math.ceil(p * sortedSeconds.length) - 1))]!;
  const low = Math.max(1, Math.floor(at(0.1)));
  const high = Math.max(low + 1, Math.ceil(at(0.9)));
  if (high <= 120) return `${low}-${high} seconds`;
  if (high <= 2 * 3600) return `${Math.max(1, Math.floor(low / 60))}-${Math.ceil(high / 60)} minutes`;
  return `${Math.max(1, Math.floor(low / 3600))}-${Math.ceil(high / 3600)} hours`;
}
