import type { Logger } from "pino";
import type { Address, Chain, PublicClient, Transport } from "viem";
import { artCertificateAbi } from "../../chain/abi/ArtCertificate.ts";
import { type IndexedCertificates, IndexerNotReadyError } from "../../chain/certificates.ts";
import type { Transaction } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import type { Actor } from "../../lib/actor.ts";
import { withDeadline } from "../../lib/deadline.ts";
import { ApiError } from "../../lib/errors.ts";
import type { User, UsersService } from "../users/users.service.ts";
import * as repo from "./artworks.repository.ts";
import type { Artwork } from "./artworks.tables.ts";

/**
 * Who owns an artwork, and what hangs off it (docs/ownership-and-money.md). The one place every
 * module asks: no module compares `artist_id` to grant a right.
 */

/** The moves an artwork's owner makes that something hanging off the artwork may forbid. */
export type ArtworkMove = "list" | "fractionalize" | "remove" | "dispute" | "return" | "withdraw";

/** Why a move is refused (the problem's `reason`). */
export type LockReason = "disputed" | "shares_issued" | "listed" | "withdrawing";

export interface ArtworkLock {
  reason: LockReason;
  /** A sentence for the problem's detail, naming the thing (`the sale txn_… has an open dispute`). */
  detail: string;
}

/** A module's answer to "what of yours hangs off this artwork?", asked under the artwork's row lock. */
export interface ArtworkEncumbrances {
  name: string;
  locksOf(db: Db, artworkId: string): Promise<ArtworkLock[]>;
}

/** Which locks refuse which move (the table of docs/ownership-and-money.md). */
const REFUSED_BY: Record<ArtworkMove, readonly LockReason[]> = {
  list: ["disputed", "shares_issued", "withdrawing"],
  fractionalize: ["disputed", "listed", "withdrawing"],
  remove: ["disputed", "shares_issued", "listed", "withdrawing"],
  dispute: ["listed"],
  return: ["shares_issued", "listed"],
  withdraw: ["disputed", "shares_issued", "listed", "withdrawing"],
};

export interface Holder {
  tokenId: bigint | null;
  /** The wallet holding the certificate (lower-case); the artist's before certification. */
  wallet: string | null;
  /** The user of that wallet; null for a wallet no user has. */
  user: User | null;
  /** `chain`: ownerOf read now; `indexer`: the node did not answer, the indexer's projection; `artist`: not certified yet. */
  source: "chain" | "indexer" | "artist";
}

const CHAIN_READ_TIMEOUT_MS = 3_000;

export class OwnershipService {
  private readonly encumbrances: ArtworkEncumbrances[] = [];

  constructor(
    private readonly deps: {
      db: Db;
      logger: Logger;
      users: UsersService;
      certificates: IndexedCertificates;
      publicClient: PublicClient<Transport, Chain>;
      certificateAddress: Address | null;
    },
  ) {}

  /** Modules whose records hang off artworks (listings, disputes, share classes) register here at construction. */
  registerEncumbrances(source: ArtworkEncumbrances): void {
    if (this.encumbrances.some((e) => e.name === source.name)) throw new Error(`artwork encumbrances ${source.name} registered twice`);
    this.encumbrances.push(source);
  }

  /**
   * Who holds the artwork's certificate now: `ownerOf` read from the chain (a write is never judged
   * on an indexer that lags), the indexer's projection only when the node does not answer. Before
   * certification, the artist.
   */
  async holderOf(artwork: Pick<Artwork, "id" | "artist_id" | "token_id">): Promise<Holder> {
    if (artwork.token_id === null) {
      const artist = await this.deps.users.get(artwork.artist_id);
      return { tokenId: null, wallet: artist.wallet_address.toLowerCase(), user: artist, source: "artist" };
    }
    return this.holderOfCertificate(artwork.id, artwork.token_id);
  }

  /** Who holds a certified artwork's certificate now, and which user that wallet is. */
  async holderOfCertificate(artworkId: string, tokenId: bigint): Promise<Holder> {
    const { wallet, source } = await this.walletHolding(artworkId, tokenId);
    return { tokenId, wallet, user: (await this.deps.users.findByWallet(this.deps.db, wallet)) ?? null, source };
  }

  /** The wallet holding a certificate (lower-case): `ownerOf` now, the indexer's owner only when the node does not answer. */
  async walletHolding(artworkId: string, tokenId: bigint): Promise<{ wallet: string; source: "chain" | "indexer" }> {
    const onChain = await this.ownerOnChain(tokenId);
    return onChain ? { wallet: onChain, source: "chain" } : { wallet: await this.indexedOwner(artworkId), source: "indexer" };
  }

  /**
   * The holder, when `actor` has the owner's rights over the artwork (its holder, or an admin);
   * 403 otherwise, saying who has them.
   */
  async requireRights(actor: Actor, artwork: Pick<Artwork, "id" | "artist_id" | "token_id">, action: string): Promise<Holder> {
    const holder = await this.holderOf(artwork);
    if (actor.role === "admin" || holder.user?.id === actor.userId) return holder;
    throw ApiError.forbidden(
      holder.tokenId === null
        ? `Only the artist or an admin may ${action} this artwork`
        : `Only the holder of the artwork's certificate (token ${holder.tokenId}) or an admin may ${action} this artwork; your wallet does not hold it`,
    );
  }

  /**
   * Locks the artwork's row in `trx` for `move` and refuses it (409 invalid_state with the reason)
   * when something hanging off the artwork forbids it. Every move that adds or removes such a thing
   * takes this lock first, so of two moves at once each sees the other. The locked row (undefined:
   * no such artwork).
   */
  async lockFor(trx: Transaction<Database>, artworkId: string, move: ArtworkMove, hint = ""): Promise<Artwork | undefined> {
    const artwork = await repo.lockAny(trx, artworkId);
    if (!artwork) return undefined;
    const locks = await this.locksOf(trx, artworkId);
    const blocking = locks.find((lock) => REFUSED_BY[move].includes(lock.reason));
    if (blocking) throw ApiError.refused(blocking.reason, `${REFUSALS[move]}: ${blocking.detail}${hint}`);
    return artwork;
  }

  /** Everything that hangs off the artwork now, as each module answers it. */
  async locksOf(db: Db, artworkId: string): Promise<ArtworkLock[]> {
    return (await Promise.all(this.encumbrances.map((e) => e.locksOf(db, artworkId)))).flat();
  }

  private async ownerOnChain(tokenId: bigint): Promise<string | null> {
    const address = this.deps.certificateAddress;
    if (!address) return null;
    try {
      const owner = await withDeadline(this.deps.publicClient.readContract({ address, abi: artCertificateAbi, functionName: "ownerOf", args: [tokenId] }), CHAIN_READ_TIMEOUT_MS);
      return owner.toLowerCase();
    } catch (err) {
      this.deps.logger.warn({ err: (err as Error).message, token_id: tokenId.toString() }, "ownerOf could not be read from the chain; using the indexer's owner");
      return null;
    }
  }

  private async indexedOwner(artworkId: string): Promise<string> {
    try {
      const certificate = await this.deps.certificates.byArtworkId(artworkId);
      if (certificate) return certificate.owner.toLowerCase();
    } catch (err) {
      if (!(err instanceof IndexerNotReadyError)) throw err;
    }
    throw new ApiError(503, "service_unavailable", "Neither the chain nor the indexer can say who holds the artwork's certificate now; retry shortly", { headers: { "Retry-After": "5" } });
  }
}

const REFUSALS: Record<ArtworkMove, string> = {
  list: "The artwork cannot be listed",
  fractionalize: "The artwork cannot be fractionalized",
  remove: "The artwork cannot be removed from the catalogue",
  dispute: "The sale cannot be disputed",
  return: "The certificate cannot go back to the seller",
  withdraw: "The certificate cannot be withdrawn",
};
