import { IndexerNotReadyError } from "../../chain/indexer-views.ts";
import type { ChainOperationKind } from "../../chain/operations.ts";
import type { Db } from "../../db/database.ts";
import type { Transact } from "../../db/transact.ts";
import type { Actor } from "../../lib/actor.ts";
import { found } from "../../lib/errors.ts";
import { isId } from "../../lib/ids.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { StateFact } from "../artworks/ownership.service.ts";
import type { PurchaseKind } from "../payments/purchases.service.ts";
import * as repo from "./fractional.repository.ts";
import type { FractionalArtwork } from "./fractional.tables.ts";
import { pct, ShareClasses, type ShareClassesDeps, toFractionalArtwork } from "./share-classes.ts";
import { SharePurchases, type SharePurchasesDeps } from "./share-purchases.ts";

export type FractionalDeps = ShareClassesDeps & SharePurchasesDeps;

/**
 * Fractional ownership: an artwork's on-chain owner (or an admin) fractionalizes it into a capped
 * ArtShares class (share-classes.ts); buyers purchase shares (share-purchases.ts), reserved at once,
 * paid as `share_purchase` purchases and minted by chain operations. Shareholders are read from the
 * indexer's balances: the chain is the truth.
 */
export class FractionalService {
  readonly classes: ShareClasses;
  readonly sharePurchases: SharePurchases;

  constructor(private readonly deps: FractionalDeps) {
    this.classes = new ShareClasses(deps);
    this.sharePurchases = new SharePurchases(deps);
  }

  /** The move `fractionalize` (ShareClasses.fractionalize), answered with the class as it is after the wait. */
  async fractionalize(actor: Actor, input: { artwork_id: string; total_shares: number; price_per_share_usd: number }, transact: Transact) {
    const created = await this.classes.fractionalize(actor, input, transact);
    return this.get(created.artwork_id);
  }

  /** This module's state of an artwork: `shares_issued` once its share class is asked for (shareholders may hold parts of it). */
  async statesOf(db: Db, artworkId: string): Promise<StateFact[]> {
    const fa = await repo.openClassOf(db, artworkId);
    return fa ? [{ state: "shares_issued", detail: `it is fractionalized into ${fa.total_shares} shares (${fa.status}); shareholders hold parts of it` }] : [];
  }

  // ---- reads ----

  async list(page: Page) {
    const { rows, total } = await repo.listActive(this.deps.db, page);
    return paginated(await this.views_(rows), page, total);
  }

  async get(artworkId: string) {
    const row = found(isId("artwork", artworkId) ? await this.findArtwork(artworkId) : undefined, "Fractional artwork");
    return (await this.views_([row]))[0]!;
  }

  /** The shareholders of an artwork's class, from the indexer's balances (largest first), joined to users by wallet. */
  async shareholders(artworkId: string, page: Page) {
    const fa = found(isId("artwork", artworkId) ? await this.findArtwork(artworkId) : undefined, "Fractional artwork");
    const { rows, total } = await this.deps.shares.holders(fa.token_id, page).catch((err: unknown) => {
      if (err instanceof IndexerNotReadyError) return { rows: [], total: 0 };
      throw err;
    });
    const wallets = rows.map((r) => r.holder.toLowerCase());
    const users = wallets.length ? await repo.usersOfWallets(this.deps.db, wallets) : [];
    const userOf = new Map(users.map((u) => [u.wallet_address.toLowerCase(), u.id]));
    const shareholders = rows.map((r) => ({
      user_id: userOf.get(r.holder.toLowerCase()) ?? null,
      wallet: r.holder.toLowerCase(),
      shares_owned: Number(r.balance),
      ownership_pct: pct(Number(r.balance), fa.total_shares),
      acquired_at: iso(Number(r.first_acquired_at) * 1000),
    }));
    return { artwork_id: fa.artwork_id, total_shares: fa.total_shares, shareholders, pagination: paginated(shareholders, page, total).pagination };
  }

  /**
   * ERC-1155 metadata of share token `tokenId` (what ArtShares' `uri(id)` names): the class of
   * certificate `tokenId`, once on-chain, with its artwork's title, artist and image, its supply
   * (the confirmed mints), cap and price. Not on-chain, or no class: 404.
   */
  async shareMetadata(tokenId: bigint) {
    const fa = found(await repo.findActiveByToken(this.deps.db, tokenId), "Share token");
    const view = (await this.views_([fa]))[0]!;
    const links = this.deps.artworks.links;
    return {
      name: `${view.title} (shares)`,
      description: `A share of “${view.title}” by ${view.artist}, certified on-chain as certificate #${view.token_id}: one of ${view.total_shares} at ${view.price_per_share_usd.toFixed(2)} USD.`,
      image: links.image(view.artwork_id),
      external_url: links.verify(view.artwork_id),
      decimals: 0 as const,
      properties: {
        artwork_id: view.artwork_id,
        title: view.title,
        artist: view.artist,
        artist_id: view.artist_id,
        certificate_token_id: view.token_id,
        share_class: {
          total_supply: fa.shares_confirmed,
          cap: view.total_shares,
          shares_available: view.shares_available,
          price_per_share_usd: view.price_per_share_usd,
        },
      },
    };
  }

  private findArtwork(artworkId: string): Promise<FractionalArtwork | undefined> {
    return repo.find(this.deps.db, artworkId);
  }

  private async views_(rows: FractionalArtwork[]) {
    if (rows.length === 0) return [];
    const details = await repo.artworkDetails(this.deps.db, rows.map((r) => r.artwork_id));
    const byId = new Map(details.map((d) => [d.id, d]));
    return rows.map((r) => toFractionalArtwork(r, byId.get(r.artwork_id)!));
  }

  // ---- purchases (SharePurchases) ----

  purchase(actor: Actor, artworkId: string, input: { shares_quantity: number; payment_method_id: string }, transact: Transact) {
    return this.sharePurchases.purchase(actor, artworkId, input, transact);
  }

  getPurchase(actor: Actor, id: string) {
    return this.sharePurchases.getPurchase(actor, id);
  }

  get purchaseKind(): PurchaseKind {
    return this.sharePurchases.purchaseKind;
  }

  /** The chain operation kinds of this module. */
  kinds(): ChainOperationKind<any>[] {
    return [this.classes.kind, this.sharePurchases.mintKind];
  }
}
