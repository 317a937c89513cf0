import type { Kysely } from "kysely";
import type { Address, Chain, Hex, PublicClient, Transport } from "viem";
import { artSharesAbi } from "../../../../contracts/abi/ArtShares.ts";
import type { IndexedShares } from "../../chain/indexer-views.ts";
import { isRevertWith } from "../../chain/errors.ts";
import type { ChainOperationKind, ChainOperations, KeyedFacts } from "../../chain/operations.ts";
import type { Relayer } from "../../chain/relayer.ts";
import type { Database } from "../../db/database.ts";
import type { Transact } from "../../db/transact.ts";
import type { Actor } from "../../lib/actor.ts";
import { ApiError } from "../../lib/errors.ts";
import { isId } from "../../lib/ids.ts";
import { centsToUsd, usdToCents } from "../../lib/money.ts";
import { iso } from "../../lib/time.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import type { UsersService } from "../users/users.service.ts";
import * as repo from "./fractional.repository.ts";
import type { FractionalArtwork } from "./fractional.tables.ts";

export const CREATE_CLASS_OPERATION = "fractional_create_class";

/** What a class's confirmation records (its chain operation's `result`). */
interface ClassFacts {
  tokenId: bigint;
  txHash: string;
}

/** What both the classes and the purchases of shares need: the database, the moves, the chain and its writes. */
export interface FractionalChainDeps {
  db: Kysely<Database>;
  ownership: OwnershipService;
  users: UsersService;
  operations: ChainOperations;
  relayer: Relayer;
  publicClient: PublicClient<Transport, Chain>;
  /** The indexer's share classes, mints and balances (the one reader of its views). */
  shares: IndexedShares;
  artShares: Address | null;
  /** How long a request waits for its chain write (FRACTIONAL_PURCHASE_WAIT_MS). */
  purchaseWaitMs: number;
}

export interface ShareClassesDeps extends FractionalChainDeps {
  artworks: ArtworksService;
}

/**
 * Share classes: an artwork's holder (or an admin) fractionalizes it into a capped ArtShares class,
 * created once by the `share_class:<artwork>` chain operation, which keeps its transaction (and, when
 * it failed for good, why). The class's row keeps its terms, its counters and whether it is on-chain.
 */
export class ShareClasses {
  constructor(private readonly deps: ShareClassesDeps) {}

  /**
   * The move `fractionalize`, decided under the artwork's lock in the class's transaction
   * (docs/ownership-and-money.md#moves): the certificate's holder (or an admin) asks; the proceeds
   * of its shares go to that holder. Unknown artwork: 400. The class as the transaction left it (the
   * answer a crash before the wait's end replays), once the class is on-chain or the wait ended.
   */
  async fractionalize(actor: Actor, input: { artwork_id: string; total_shares: number; price_per_share_usd: number }, transact: Transact) {
    const { artworks, ownership, operations, users } = this.deps;
    artSharesOf(this.deps.artShares);
    const noSuchArtwork = ApiError.validation([{ field: "artwork_id", code: "not_found", message: "no such artwork" }]);
    if (!isId("artwork", input.artwork_id)) throw noSuchArtwork;
    const created = await transact(async (trx) => {
      const decided = await ownership.decide(trx, input.artwork_id, "fractionalize", actor);
      if (!decided) throw noSuchArtwork;
      const { artwork, holder } = decided;
      const tokenId = artwork.token_id!;
      // A class whose creation failed for good may be asked for again (with new terms); any other is `shares_issued`.
      const existing = await repo.find(trx, artwork.id);
      await artworks.markFractionalized(trx, artwork.id);
      const terms = {
        token_id: tokenId,
        owner_id: holder.user!.id,
        created_by: actor.userId,
        total_shares: input.total_shares,
        price_per_share_cents: usdToCents(input.price_per_share_usd),
        status: "pending" as const,
      };
      const row = existing ? await repo.renew(trx, artwork.id, terms) : await repo.insert(trx, artwork.id, terms);
      await operations.request(trx, { key: classKey(artwork.id), kind: CREATE_CLASS_OPERATION, payload: { artwork_id: artwork.id, token_id: tokenId.toString(), cap: String(input.total_shares) } });
      const artist = await users.getIn(trx, artwork.artist_id);
      return toFractionalArtwork(row, { title: artwork.title, artist_id: artwork.artist_id, display_name: artist.display_name });
    });
    await operations.waitFor(classKey(created.artwork_id), async () => (await repo.find(this.deps.db, created.artwork_id))?.status !== "pending", this.deps.purchaseWaitMs);
    return created;
  }

  readonly kind: ChainOperationKind<ClassFacts> = {
    kind: CREATE_CLASS_OPERATION,
    abi: artSharesAbi,
    maxAttempts: 8,
    retryBaseMs: 2_000,
    send: async (op, ctx) => {
      const p = op.payload as { token_id: string; cap: string };
      await this.deps.relayer.write({
        address: artSharesOf(this.deps.artShares),
        abi: artSharesAbi,
        functionName: "createShareClass",
        args: [BigInt(p.token_id), BigInt(p.cap)],
        label: op.key,
        onSubmitted: ({ hash }) => ctx.recordSent([op.key], hash),
      });
    },
    settled: (err) => isRevertWith(err, "ArtSharesClassExists"),
    readIndexed: async (fromBlock, toBlock) => this.classFacts(await this.deps.shares.classesInBlocks(fromBlock, toBlock)),
    lookupIndexed: async (ops) =>
      this.classFacts(await this.deps.shares.classesOf(ops.map((op) => BigInt((op.payload as { token_id: string }).token_id)))),
    readFromChain: async (ops) => {
      const out: KeyedFacts<ClassFacts>[] = [];
      for (const op of ops) {
        const tokenId = BigInt((op.payload as { token_id: string }).token_id);
        const cap = await this.deps.publicClient.readContract({ address: artSharesOf(this.deps.artShares), abi: artSharesAbi, functionName: "shareCap", args: [tokenId] });
        if (cap > 0n && op.tx_hash) out.push(...(await this.classFacts([{ token_id: tokenId, tx_hash: op.tx_hash as Hex }])));
      }
      return out;
    },
    onConfirmed: async (trx, confirmed) => {
      for (const { op } of confirmed) await repo.activate(trx, (op.payload as { artwork_id: string }).artwork_id);
    },
    onFailed: async (trx, op) => {
      const artworkId = (op.payload as { artwork_id: string }).artwork_id;
      await repo.markFailed(trx, artworkId);
      // No shares exist: the work may be listed whole again (or fractionalized anew).
      await this.deps.artworks.markFractionalized(trx, artworkId, false);
    },
  };

  /** Share classes as facts of the operations that created them (keyed by artwork). */
  private async classFacts(rows: { token_id: bigint; tx_hash: Hex }[]): Promise<KeyedFacts<ClassFacts>[]> {
    if (rows.length === 0) return [];
    const artworks = await repo.artworksOfTokens(this.deps.db, rows.map((r) => BigInt(r.token_id)));
    const byToken = new Map(artworks.map((a) => [a.token_id.toString(), a.artwork_id]));
    return rows.flatMap((r) => {
      const artworkId = byToken.get(r.token_id.toString());
      return artworkId ? [{ key: classKey(artworkId), facts: { tokenId: BigInt(r.token_id), txHash: r.tx_hash } }] : [];
    });
  }
}

function classKey(artworkId: string): string {
  return `share_class:${artworkId}`;
}

/** ArtShares' address, or 503 while it is not configured. */
export function artSharesOf(address: Address | null): Address {
  if (!address) throw new ApiError(503, "service_unavailable", "The share contract is not configured (ART_SHARES_ADDRESS)");
  return address;
}

/** A part of a whole in percent, to the hundredth. */
export function pct(part: number, whole: number): number {
  return Math.round((part * 10_000) / whole) / 100;
}

/** A class as the FractionalArtwork resource, with its artwork's title and artist. */
export function toFractionalArtwork(r: FractionalArtwork, a: { title: string; artist_id: string; display_name: string }) {
  return {
    artwork_id: r.artwork_id,
    title: a.title,
    artist: a.display_name,
    artist_id: a.artist_id,
    owner_id: r.owner_id,
    token_id: r.token_id.toString(),
    total_shares: r.total_shares,
    shares_available: r.total_shares - r.shares_sold,
    price_per_share_usd: centsToUsd(r.price_per_share_cents),
    total_value_usd: centsToUsd(r.price_per_share_cents * BigInt(r.total_shares)),
    funded_pct: pct(r.shares_confirmed, r.total_shares),
    status: r.status,
    created_at: iso(r.created_at),
  };
}
