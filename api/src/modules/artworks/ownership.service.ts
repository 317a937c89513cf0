import type { Transaction } from "kysely";
import type { Logger } from "pino";
import type { Address, Chain, PublicClient, Transport } from "viem";
import { artCertificateAbi } from "../../../../contracts/abi/ArtCertificate.ts";
import { type IndexedCertificates, IndexerNotReadyError } from "../../chain/indexer-views.ts";
import type { Database, Db } from "../../db/database.ts";
import type { Actor } from "../../lib/actor.ts";
import { withDeadline } from "../../lib/deadline.ts";
import { ApiError } from "../../lib/errors.ts";
import { iso } from "../../lib/time.ts";
import type { User, UsersService } from "../users/users.service.ts";
import { ARTWORK_MOVES, type ArtworkMove, decideMove, type Refused, type StateFact } from "./artwork-moves.ts";
import * as repo from "./artworks.repository.ts";
import type { Artwork } from "./artworks.tables.ts";

/**
 * Who owns an artwork, and whether a move on it may happen now (docs/ownership-and-money.md). The
 * one place every module asks: no module compares `artist_id` to grant a right, and no module
 * checks a move's preconditions of its own (the table is artwork-moves.ts).
 */

/**
 * A module whose records hang off artworks (listings, orders, sales and disputes; share classes;
 * withdrawals) reports their states here, registered at construction.
 */
/** The moves' table's types, for the modules that register states and name moves (the table itself is this module's). */
export type { ArtworkMove, StateFact } from "./artwork-moves.ts";

export interface ArtworkStateSource {
  name: string;
  /**
   * The states this module keeps of the artwork, read in the move's transaction under the artwork's
   * row lock and before the certificate's holder is read: a chain effect whose pending state has
   * ended is then on the chain when the holder is asked.
   */
  statesOf(trx: Transaction<Database>, artworkId: string): Promise<StateFact[]>;
}

/** What a move names besides the artwork: its listing, the sale it refunds, or the wallet making it (an on-chain purchase is asked for with no account). */
export interface MoveSubject {
  listing?: { id: string; status: string; seller_id: string; seller_wallet: string };
  sale?: { id: string; buyer_id: string | null };
  wallet?: string;
}

/** A move allowed: the artwork's row (locked until the transaction ends), who holds its certificate now, and its states. */
export interface Decided {
  artwork: Artwork;
  holder: Holder;
  states: StateFact[];
}

export interface Holder {
  tokenId: bigint | null;
  /** The wallet holding the certificate (lower-case); the artist's before certification. */
  wallet: string;
  /** The user of that wallet (any of the user's wallets: custodial, signed in with, linked); null for a wallet no user has. */
  user: User | null;
  /** `chain`: ownerOf read now; `indexer`: the node did not answer, the indexer's projection; `artist`: not certified yet. */
  source: "chain" | "indexer" | "artist";
}

const CHAIN_READ_TIMEOUT_MS = 3_000;
/** What a refusal by a pending state tells the client to wait: a chain effect is mined and indexed within seconds. */
const PENDING_RETRY_AFTER_S = 5;

export class OwnershipService {
  private readonly sources: ArtworkStateSource[] = [];

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

  /** Modules whose records hang off artworks register their states here at construction. */
  registerStates(source: ArtworkStateSource): void {
    if (this.sources.some((e) => e.name === source.name)) throw new Error(`artwork states ${source.name} registered twice`);
    this.sources.push(source);
  }

  /**
   * Decides `move` on the artwork in `trx`, the transaction of the move's effect: locks the
   * artwork's row (shared for moves that only need it to stand still), reads its states (its own,
   * every registered module's, then the certificate's holder from the chain, in that order) and
   * judges the move by the table of artwork-moves.ts. Refused: the refusal's ApiError (409
   * invalid_state with the state as `reason`, and Retry-After while that state is a chain effect
   * under way; 409 conflict; 403; 404). Allowed: the locked row, the holder and the states, for the
   * effect. No such artwork: undefined (the caller says how: 404 for a path, 400 for a field).
   * `subjectOf` as a function reads (and may lock) what the move names once the artwork is locked:
   * the order of locks every move takes is the artwork's, then its listing's, then the rest.
   * `options.hint` ends a refusal's detail (what the caller may do instead).
   */
  async decide(
    trx: Transaction<Database>,
    artworkId: string,
    move: ArtworkMove,
    actor: Actor | null,
    subjectOf: MoveSubject | (() => Promise<MoveSubject>) = {},
    options: { hint?: string } = {},
  ): Promise<Decided | undefined> {
    const artwork = ARTWORK_MOVES[move].lock === "shared" ? await repo.lockShared(trx, artworkId) : await repo.lockAny(trx, artworkId);
    if (!artwork) return undefined;
    // Read (and locked, by the caller's function) under the artwork's lock: what the move names cannot change under it.
    const subject = typeof subjectOf === "function" ? await subjectOf() : subjectOf;
    const states: StateFact[] = [];
    if (artwork.status !== "certified" || artwork.token_id === null) states.push({ state: "uncertified", detail: `it is not certified on-chain yet (status ${artwork.status})` });
    if (artwork.deleted_at) states.push({ state: "removed", detail: `it was removed from the catalogue at ${iso(artwork.deleted_at)}` });
    // One statement at a time on the transaction's connection; the holder after them all.
    for (const source of this.sources) states.push(...(await source.statesOf(trx, artworkId)));
    const holder = await this.holderOf(artwork, trx);
    states.push(...holderStates(holder, subject));
    const account = actor?.userId ?? (subject.wallet ? ((await this.deps.users.findByWallet(trx, subject.wallet))?.id ?? null) : null);
    const refusal = decideMove(move, states, {
      actor: actor ? { role: actor.role } : null,
      actorHolds: account !== null && holder.user?.id === account,
      actorSells: account !== null && subject.listing?.seller_id === account,
    });
    if (refusal) throw toApiError(refusal, options.hint ?? "");
    return { artwork, holder, states };
  }

  /**
   * Locks the artwork's row for a fact the chain already decided (a wallet's fill or transfer
   * mined): nothing refuses it, but its effect is written under the lock every move takes. The row.
   */
  lockForChainFact(trx: Transaction<Database>, artworkId: string): Promise<Artwork | undefined> {
    return repo.lockAny(trx, artworkId);
  }

  /**
   * Who holds the artwork's certificate now: `ownerOf` read from the chain (a write is never judged
   * on an indexer that lags), the indexer's projection only when the node does not answer. Before
   * certification, the artist. Users are read on `db` (a move's transaction).
   */
  async holderOf(artwork: Pick<Artwork, "id" | "artist_id" | "token_id">, db: Db = this.deps.db): Promise<Holder> {
    if (artwork.token_id === null) {
      const artist = await this.deps.users.getIn(db, artwork.artist_id);
      return { tokenId: null, wallet: artist.wallet_address.toLowerCase(), user: artist, source: "artist" };
    }
    return this.holderOfCertificate(artwork.id, artwork.token_id, db);
  }

  /** Who holds a certified artwork's certificate now, and which user that wallet is. */
  async holderOfCertificate(artworkId: string, tokenId: bigint, db: Db = this.deps.db): Promise<Holder> {
    const { wallet, source } = await this.walletHolding(artworkId, tokenId);
    return { tokenId, wallet, user: (await this.deps.users.findByWallet(db, wallet)) ?? null, source };
  }

  /** The wallet holding a certificate (lower-case): `ownerOf` now, the indexer's owner only when the node does not answer. */
  async walletHolding(artworkId: string, tokenId: bigint): Promise<{ wallet: string; source: "chain" | "indexer" }> {
    const onChain = await this.ownerOnChain(tokenId);
    return onChain ? { wallet: onChain, source: "chain" } : { wallet: await this.indexedOwner(artworkId), source: "indexer" };
  }

  /** `ownerOf` read from the chain now (lower-case); null when the node does not answer in time or no certificate contract is configured. */
  async ownerOnChain(tokenId: bigint): Promise<string | null> {
    const address = this.deps.certificateAddress;
    if (!address) return null;
    try {
      const owner = await withDeadline(this.deps.publicClient.readContract({ address, abi: artCertificateAbi, functionName: "ownerOf", args: [tokenId] }), CHAIN_READ_TIMEOUT_MS);
      return owner.toLowerCase();
    } catch (err) {
      this.deps.logger.warn({ err: (err as Error).message, token_id: tokenId.toString() }, "ownerOf could not be read from the chain");
      return null;
    }
  }

  // Only when the node does not answer (a connection of the indexer's views: rare, and brief).
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

/** The custody index of `wallet` when it is `user`'s custodial wallet (the platform signs for it); null for a wallet of the user's own, or no user. */
export function custodyIndexOf(user: User | null | undefined, wallet: string): number | null {
  return user && user.wallet_kind === "custodial" && user.custody_index !== null && user.wallet_address.toLowerCase() === wallet.toLowerCase() ? user.custody_index : null;
}

/** Whether the holder's wallet is its user's custodial one, which the platform signs for. */
export function isCustodialHolding(holder: Holder): boolean {
  return custodyIndexOf(holder.user, holder.wallet) !== null;
}

/** The states the certificate's holder gives a move: whose wallet it is, and whether it is where the move's listing or sale says. */
function holderStates(holder: Holder, subject: MoveSubject): StateFact[] {
  const states: StateFact[] = [];
  const { listing, sale } = subject;
  if (listing && (listing.status === "sold" || listing.status === "cancelled")) states.push({ state: "listing_closed", detail: `the listing ${listing.id} is ${listing.status}` });
  if (listing?.status === "active" && holder.wallet !== listing.seller_wallet) {
    states.push({ state: "token_moved", detail: `the seller's wallet no longer holds its certificate on-chain; the listing ${listing.id} is being cancelled` });
  }
  if (holder.tokenId === null) return states;
  if (sale && holder.user?.id !== sale.buyer_id) states.push({ state: "resold", detail: `the certificate is no longer held by the buyer of ${sale.id} (it is at ${holder.wallet})` });
  if (!holder.user) states.push({ state: "owner_unknown", detail: `its certificate is held by ${holder.wallet}, a wallet no user of the platform has` });
  else if (!isCustodialHolding(holder)) states.push({ state: "external_wallet", detail: `its certificate is in ${holder.wallet}, a wallet of its owner's own that the platform cannot sign for` });
  return states;
}

/** The refusal as the problem the client gets; `hint` ends a 409's detail (what to do instead). */
function toApiError(r: Refused, hint: string): ApiError {
  const headers = r.pending ? { headers: { "Retry-After": String(PENDING_RETRY_AFTER_S) } } : {};
  if (r.status === 404) return ApiError.notFound("Artwork");
  if (r.status === 400) return ApiError.validation([{ field: "artwork_id", code: "not_found", message: r.detail }]);
  if (r.status === 403) return ApiError.forbidden(r.detail);
  if (r.code === "conflict") return new ApiError(409, "conflict", `${r.detail}${hint}`, headers);
  return new ApiError(409, "invalid_state", `${r.detail}${hint}`, { reason: r.reason, ...headers });
}
