import type { Logger } from "pino";
import type { Transaction } from "kysely";
import type { CertificateMove, IndexedCertificates } from "../../chain/indexer-views.ts";
import type { IndexedProjection } from "../../chain/operations.kind.ts";
import type { Database, Db } from "../../db/database.ts";
import { centsToUsd } from "../../lib/money.ts";
import * as repo from "./artworks.repository.ts";
import type { OwnershipService } from "./ownership.service.ts";

/**
 * An artwork's `for_sale` and `price_usd` are one thing, its holder's ask (docs/decisions.md#for-sale):
 * - the holder makes it (the upload, `PATCH /v1/artworks/:id`, a marketplace listing, which sets both
 *   to the listing's price) and ends it (PATCH `for_sale: false`, cancelling the listing: the price
 *   stays as the holder's last word);
 * - it is the wallet's that held the certificate when it was made: a move of the certificate out of
 *   that wallet (a sale of any kind, a wallet's transfer, a withdrawal, a refund's return) ends it,
 *   `for_sale: false` and `price_usd: null`, as the indexer shows the move; a new holder's ask made
 *   since is theirs and stays;
 * - a fractionalized work's shares are sold, not the work: fractionalizing ends the ask, and a new
 *   one is refused while the shares exist; removal ends it.
 */
export class ArtworkAsks {
  constructor(private readonly deps: { certificates: IndexedCertificates; ownership: OwnershipService; logger: Logger }) {}

  /** A listing of the artwork by `wallet`, its holder, at `priceCents`: the ask, in the listing's transaction. */
  async listed(db: Db, artworkId: string, wallet: string, priceCents: bigint): Promise<void> {
    await repo.update(db, artworkId, { for_sale: true, price_cents: priceCents, for_sale_wallet: wallet });
  }

  /** The holder cancelled its listing: the artwork is no longer for sale (its price stays). */
  async delisted(db: Db, artworkId: string): Promise<void> {
    await repo.update(db, artworkId, { for_sale: false });
  }

  /**
   * Asks ended by the certificate's moves, each in chain order under the artwork's lock (a move is a
   * chain fact: nothing refuses it). Idempotent: a move replayed finds the ask ended, or a new
   * holder's that it leaves alone.
   */
  readonly projection: IndexedProjection<CertificateMove> = {
    consumer: "artworks_asks",
    read: (fromBlock, toBlock) => this.deps.certificates.movesInBlocks(fromBlock, toBlock),
    apply: async (trx, moves) => {
      let ended = 0;
      for (const move of moves) if (await this.endByMove(trx, move)) ended++;
      if (ended > 0) this.deps.logger.info({ ended }, "asks ended by their certificate's move");
    },
  };

  private async endByMove(trx: Transaction<Database>, move: CertificateMove): Promise<boolean> {
    const artwork = await this.deps.ownership.lockForChainFact(trx, move.artworkId);
    if (!artwork || (!artwork.for_sale && artwork.price_cents === null)) return false;
    if (artwork.for_sale_wallet !== null && artwork.for_sale_wallet !== move.from) return false;
    await repo.update(trx, artwork.id, { for_sale: false, price_cents: null, for_sale_wallet: null });
    return true;
  }
}

/** The provenance entry of an ask's change by its holder: `for_sale` (with the price) or `not_for_sale`. */
export function askEntry(forSale: boolean, priceCents: bigint | null): { event: "for_sale" | "not_for_sale"; details: Record<string, number> | null } {
  return forSale && priceCents !== null ? { event: "for_sale", details: { price_usd: centsToUsd(priceCents) } } : { event: "not_for_sale", details: null };
}
