import type { Kysely, Transaction } from "kysely";
import type { Logger } from "pino";
import { type Address, type Chain, type Hex, keccak256, type PublicClient, toBytes, type Transport } from "viem";
import { artSharesAbi } from "../../../../contracts/abi/ArtShares.ts";
import { IndexerNotReadyError } from "../../chain/indexer-views.ts";
import { isRevertWith } from "../../chain/errors.ts";
import { type ChainOperationKind, type ChainOperations, type KeyedFacts } from "../../chain/operations.ts";
import type { Relayer } from "../../chain/relayer.ts";
import type { Database, Db } from "../../db/database.ts";
import type { Transact } from "../../db/transact.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { centsToUsd, usdToCents } from "../../lib/money.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { StateFact } from "../artworks/artwork-moves.ts";
import type { OwnershipService } from "../artworks/ownership.ts";
import type { Actor } from "../../lib/actor.ts";
import type { LedgerService } from "../ledger/ledger.service.ts";
import type { PaymentFailure } from "../payments/charge-step.ts";
import type { PaymentsService } from "../payments/payments.service.ts";
import type { PurchaseKind, Purchases } from "../payments/purchases.ts";
import type { UsersService } from "../users/users.service.ts";
import * as repo from "./fractional.repository.ts";
import type { FractionalArtwork, FractionalPurchase } from "./fractional.tables.ts";

export const CREATE_CLASS_OPERATION = "fractional_create_class";
export const MINT_OPERATION = "fractional_mint";


interface ClassFacts {
  tokenId: bigint;
  txHash: string;
}

interface MintFacts {
  purchaseKey: string;
  txHash: string;
}

export interface FractionalDeps {
  db: Kysely<Database>;
  logger: Logger;
  payments: PaymentsService;
  purchases: Purchases;
  artworks: ArtworksService;
  ownership: OwnershipService;
  users: UsersService;
  ledger: LedgerService;
  operations: ChainOperations;
  relayer: Relayer;
  publicClient: PublicClient<Transport, Chain>;
  viewsSchema: string;
  artShares: Address | null;
  purchaseWaitMs: number;
}

/**
 * Fractional ownership: an artwork's on-chain owner (or an admin) fractionalizes it into a capped
 * ArtShares class (the `share_class:<artwork>` chain operation); buyers purchase shares. A purchase
 * reserves its shares in the request's transaction with one conditional UPDATE (no oversell under
 * any concurrency), the charge job charges (key `share_purchase:<frac id>`) and requests the mint
 * (`mint:<frac id>`: ArtShares mints a purchase key once), and the purchase is `confirmed` when the
 * indexer has SharesMinted. A decline or a failed mint releases the shares (and refunds a charge).
 * Shareholders are read from the indexer's balances: the chain is the truth.
 */
export class FractionalService {
  private readonly log: Logger;

  constructor(private readonly deps: FractionalDeps) {
    this.log = deps.logger.child({ component: "fractional" });
  }

  // ---- fractionalize ----

  /**
   * The move `fractionalize`, decided under the artwork's lock in the class's transaction
   * (docs/ownership-and-money.md#moves): the certificate's holder (or an admin) asks; the proceeds
   * of its shares go to that holder. Unknown artwork: 400.
   */
  async fractionalize(actor: Actor, input: { artwork_id: string; total_shares: number; price_per_share_usd: number }, transact: Transact) {
    const { artworks, ownership, users, operations } = this.deps;
    this.requireContract();
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
    await operations.waitFor(classKey(created.artwork_id), async () => (await this.findArtwork(created.artwork_id))?.status !== "pending", this.deps.purchaseWaitMs);
    return this.get(created.artwork_id);
  }

  private readonly classKind: ChainOperationKind<ClassFacts> = {
    kind: CREATE_CLASS_OPERATION,
    abi: artSharesAbi,
    maxAttempts: 8,
    retryBaseMs: 2_000,
    send: async (op, ctx) => {
      const p = op.payload as { token_id: string; cap: string };
      await this.deps.relayer.write({
        address: this.requireContract(),
        abi: artSharesAbi,
        functionName: "createShareClass",
        args: [BigInt(p.token_id), BigInt(p.cap)],
        label: op.key,
        onSubmitted: ({ hash }) => ctx.recordSent([op.key], hash),
      });
    },
    settled: (err) => isRevertWith(err, "ArtSharesClassExists"),
    readIndexed: async (fromBlock, toBlock) => this.classFacts(await repo.indexedClassesIn(this.deps.db, this.deps.viewsSchema, fromBlock, toBlock)),
    lookupIndexed: async (ops) =>
      this.classFacts(await repo.indexedClassesOf(this.deps.db, this.deps.viewsSchema, ops.map((op) => BigInt((op.payload as { token_id: string }).token_id)))),
    readFromChain: async (ops) => {
      const out: KeyedFacts<ClassFacts>[] = [];
      for (const op of ops) {
        const tokenId = BigInt((op.payload as { token_id: string }).token_id);
        const cap = await this.deps.publicClient.readContract({ address: this.requireContract(), abi: artSharesAbi, functionName: "shareCap", args: [tokenId] });
        if (cap > 0n && op.tx_hash) out.push(...(await this.classFacts([{ token_id: tokenId, tx_hash: op.tx_hash as Hex }])));
      }
      return out;
    },
    onConfirmed: async (trx, confirmed) => {
      for (const { op, facts } of confirmed) await repo.activate(trx, (op.payload as { artwork_id: string }).artwork_id, facts.txHash);
    },
    onFailed: async (trx, op, reason) => {
      const artworkId = (op.payload as { artwork_id: string }).artwork_id;
      await repo.markFailed(trx, artworkId, reason);
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
    const { rows, total } = await repo.indexedHolders(this.deps.db, this.deps.viewsSchema, fa.token_id, page).catch((err: unknown) => {
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

  // ---- purchases ----

  async purchase(actor: Actor, artworkId: string, input: { shares_quantity: number; payment_method_id: string }, transact: Transact) {
    const { users, payments } = this.deps;
    if (!isId("artwork", artworkId)) throw ApiError.notFound("Fractional artwork");
    this.requireContract();
    const seen = found(await this.findArtwork(artworkId), "Fractional artwork");
    payments.requireChargeable(seen.price_per_share_cents * BigInt(input.shares_quantity), "shares_quantity", `${input.shares_quantity} share(s) at ${centsToUsd(seen.price_per_share_cents)} USD`);
    const [buyer, method] = await Promise.all([users.get(actor.userId), payments.resolvePaymentMethod(actor.userId, input.payment_method_id)]);
    const created = await transact(async (trx) => {
      // The move `buy_shares` (a shared lock: purchases do not wait for each other). The proceeds go to
      // whoever holds the certificate now, the chain's answer, never to the buyer's own account.
      const { holder } = (await this.deps.ownership.decide(trx, artworkId, "buy_shares", actor))!;
      const owner = holder.user!;
      const fa = await repo.find(trx, artworkId);
      if (!fa) throw ApiError.notFound("Fractional artwork");
      if (fa.status !== "active") throw ApiError.conflict("invalid_state", `The artwork's shares are ${fa.status === "pending" ? "not on-chain yet; retry shortly" : "not for sale (its share class could not be created)"}`);
      const reserved = await repo.reserveShares(trx, artworkId, input.shares_quantity, owner.id);
      if (!reserved) {
        const now = await repo.sharesOf(trx, artworkId);
        throw new ApiError(409, "insufficient_shares", `Only ${now.total_shares - now.shares_sold} shares are available; you asked for ${input.shares_quantity}`, { available: now.total_shares - now.shares_sold });
      }
      const id = newId("fractionalPurchase");
      const total = fa.price_per_share_cents * BigInt(input.shares_quantity);
      const { id: transactionId } = await this.deps.purchases.start(
        trx,
        {
          type: "share_purchase",
          referenceId: id,
          artworkId,
          amountCents: total,
          buyerId: buyer.id,
          sellerId: owner.id,
          recipientId: owner.id,
          paymentMethodId: method.id,
          description: `${input.shares_quantity} shares of ${artworkId}`,
        },
        { chargeInRequest: true },
      );
      const purchase = await repo.insertPurchase(trx, {
        id,
        artwork_id: artworkId,
        token_id: fa.token_id,
        buyer_id: buyer.id,
        buyer_wallet: buyer.wallet_address.toLowerCase(),
        owner_id: owner.id,
        shares: input.shares_quantity,
        price_per_share_cents: fa.price_per_share_cents,
        total_cents: total,
        payment_method_id: method.id,
        transaction_id: transactionId,
        purchase_key: purchaseKeyOf(id),
        status: "pending",
        stage: "charging",
      });
      return toPurchase(purchase);
    });
    const id = created.purchase_id;
    await this.deps.purchases.charge(created.transaction_id).catch((err: unknown) => this.log.error({ err, purchase_id: id }, "charging in the request failed; the job will"));
    await this.deps.operations.waitFor(mintKey(id), async () => (await this.findPurchase(id))?.status !== "pending", this.deps.purchaseWaitMs);
    const purchase = (await this.findPurchase(id))!;
    // A failure before any charge succeeded is the payment's (402); after it, the mint's (refunded).
    return { purchase: toPurchase(purchase), failureCode: purchase.failure_code, paymentFailed: purchase.status === "failed" && purchase.charge_id === null };
  }

  /** A purchase for its buyer or an admin; anyone else 404. */
  async getPurchase(actor: Actor, id: string) {
    const p = isId("fractionalPurchase", id) ? await this.findPurchase(id) : undefined;
    if (!p || (actor.role !== "admin" && p.buyer_id !== actor.userId)) throw ApiError.notFound("Fractional purchase");
    return toPurchase(p);
  }

  private findPurchase(id: string): Promise<FractionalPurchase | undefined> {
    return repo.findPurchase(this.deps.db, id);
  }

  /** Share purchases as a kind of purchase: what happens at each step of their payment (payments/purchases.ts). */
  readonly purchaseKind: PurchaseKind = {
    type: "share_purchase",
    keyPrefix: "share_purchase",
    onCharged: async (trx, purchase, charge) => {
      const p = await repo.startMint(trx, purchase.reference_id!, charge);
      if (!p) return { refund: { code: "purchase_closed", reason: "The purchase was closed before its payment" } };
      await this.deps.operations.request(trx, {
        key: mintKey(p.id),
        kind: MINT_OPERATION,
        payload: { purchase_id: p.id, to: p.buyer_wallet, token_id: p.token_id.toString(), amount: String(p.shares), purchase_key: p.purchase_key },
      });
    },
    onPaymentFailed: async (trx, purchase, failure) => {
      await this.fail(trx, purchase.reference_id!, failure);
    },
  };

  /** Fails a pending purchase in `trx` and releases its shares; the money is its purchase's (refunded when charged). */
  private async fail(trx: Transaction<Database>, id: string, failure: PaymentFailure): Promise<FractionalPurchase | undefined> {
    const p = await repo.failPurchase(trx, id, failure);
    if (!p) return undefined;
    await repo.releaseShares(trx, p.artwork_id, p.shares);
    return p;
  }

  private readonly mintKind: ChainOperationKind<MintFacts> = {
    kind: MINT_OPERATION,
    abi: artSharesAbi,
    maxAttempts: 8,
    retryBaseMs: 2_000,
    send: async (op, ctx) => {
      const p = op.payload as { to: Address; token_id: string; amount: string; purchase_key: Hex };
      await this.deps.relayer.write({
        address: this.requireContract(),
        abi: artSharesAbi,
        functionName: "mintShares",
        args: [p.to, BigInt(p.token_id), BigInt(p.amount), p.purchase_key],
        label: op.key,
        onSubmitted: ({ hash }) => ctx.recordSent([op.key], hash),
      });
    },
    settled: (err) => isRevertWith(err, "ArtSharesPurchaseAlreadyMinted"),
    readIndexed: async (fromBlock, toBlock) => this.mintFacts(await repo.indexedMintsIn(this.deps.db, this.deps.viewsSchema, fromBlock, toBlock)),
    lookupIndexed: async (ops) =>
      this.mintFacts(await repo.indexedMintsOf(this.deps.db, this.deps.viewsSchema, ops.map((op) => (op.payload as { purchase_key: Hex }).purchase_key))),
    readFromChain: async (ops) => {
      const out: KeyedFacts<MintFacts>[] = [];
      for (const op of ops) {
        const key = (op.payload as { purchase_key: Hex }).purchase_key;
        const minted = await this.deps.publicClient.readContract({ address: this.requireContract(), abi: artSharesAbi, functionName: "purchaseMinted", args: [key] });
        if (minted && op.tx_hash) out.push(...(await this.mintFacts([{ purchase_key: key, tx_hash: op.tx_hash as Hex }])));
      }
      return out;
    },
    onConfirmed: async (trx, confirmed) => {
      const appends = [];
      for (const { facts } of confirmed) {
        const entry = await this.confirm(trx, facts);
        if (entry) appends.push(entry);
      }
      for (const entry of appends) await this.deps.ledger.append(trx, entry);
    },
    onFailed: async (trx, op, reason) => {
      const failure = { code: "mint_failed", reason: `The shares could not be minted: ${reason}` };
      const p = await this.fail(trx, (op.payload as { purchase_id: string }).purchase_id, failure);
      if (!p) return;
      await this.deps.purchases.failEffect(trx, p.transaction_id, failure);
      await this.deps.ledger.append(trx, {
        kind: "mint.failed",
        subjectId: p.id,
        actorId: null,
        parties: [p.buyer_id, p.owner_id],
        data: { purchase_id: p.id, transaction_id: p.transaction_id, code: failure.code, reason: failure.reason, shares_released: p.shares },
      });
    },
  };

  private async mintFacts(rows: { purchase_key: Hex; tx_hash: Hex }[]): Promise<KeyedFacts<MintFacts>[]> {
    if (rows.length === 0) return [];
    const purchases = await repo.purchasesOfKeys(this.deps.db, rows.map((r) => r.purchase_key.toLowerCase()));
    const byKey = new Map(purchases.map((p) => [p.purchase_key, p.id]));
    return rows.flatMap((r) => {
      const id = byKey.get(r.purchase_key.toLowerCase());
      return id ? [{ key: mintKey(id), facts: { purchaseKey: r.purchase_key.toLowerCase(), txHash: r.tx_hash } }] : [];
    });
  }

  /** A minted purchase, in the confirming transaction: confirmed, its transaction completed, its event; the ledger entry to append. */
  private async confirm(trx: Transaction<Database>, facts: MintFacts) {
    const p = await repo.confirmPurchase(trx, facts.purchaseKey, facts.txHash);
    if (!p) return null;
    const fa = await repo.confirmShares(trx, p.artwork_id, p.shares);
    // The buyer's holding after this mint: the indexed balance (transfers included), or the
    // confirmed purchases while the indexer lags.
    const indexed = await repo.indexedBalance(trx, this.deps.viewsSchema, p.token_id, p.buyer_wallet as Hex).catch(() => undefined);
    let held = indexed ? Number(indexed.balance) : 0;
    if (held < p.shares) held = await repo.confirmedSharesOf(trx, p.artwork_id, p.buyer_id);
    const bps = Math.round((held * 10_000) / fa.total_shares);
    await repo.setOwnershipBps(trx, p.id, bps);
    const fee = p.fee_cents ?? 0n;
    const completed = (await this.deps.purchases.complete(trx, p.transaction_id, { payoutCents: p.total_cents - fee, chainTx: facts.txHash }))!;
    await recordEvent(
      trx,
      "fractional.purchase_confirmed",
      {
        purchase_id: p.id,
        artwork_id: p.artwork_id,
        buyer_id: p.buyer_id,
        shares_purchased: p.shares,
        total_paid_usd: centsToUsd(p.total_cents),
        on_chain_tx: facts.txHash,
        new_ownership_pct: bps / 100,
        confirmed_at: iso(completed.completed_at!),
      },
      [p.buyer_id, p.owner_id],
    );
    return {
      kind: "share_purchase.confirmed",
      subjectId: p.id,
      actorId: null,
      parties: [p.buyer_id, p.owner_id],
      data: { purchase_id: p.id, transaction_id: p.transaction_id, token_id: p.token_id.toString(), shares: p.shares, amount_cents: p.total_cents.toString(), fee_cents: fee.toString(), chain_tx: facts.txHash },
    };
  }

  /** The chain operation kinds of this module. */
  kinds(): ChainOperationKind<any>[] {
    return [this.classKind, this.mintKind];
  }

  // ---- helpers ----

  private requireContract(): Address {
    if (!this.deps.artShares) throw new ApiError(503, "service_unavailable", "The share contract is not configured (ART_SHARES_ADDRESS)");
    return this.deps.artShares;
  }
}

function classKey(artworkId: string): string {
  return `share_class:${artworkId}`;
}

function mintKey(purchaseId: string): string {
  return `mint:${purchaseId}`;
}

/** The key ArtShares mints once: keccak256 of the purchase id, lower-case hex. */
export function purchaseKeyOf(purchaseId: string): string {
  return keccak256(toBytes(purchaseId)).toLowerCase();
}

function pct(part: number, whole: number): number {
  return Math.round((part * 10_000) / whole) / 100;
}

function toFractionalArtwork(r: FractionalArtwork, a: { title: string; artist_id: string; display_name: string }) {
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

export function toPurchase(p: FractionalPurchase) {
  return {
    purchase_id: p.id,
    artwork_id: p.artwork_id,
    buyer_id: p.buyer_id,
    shares_purchased: p.shares,
    price_per_share_usd: centsToUsd(p.price_per_share_cents),
    total_paid_usd: centsToUsd(p.total_cents),
    status: p.status,
    on_chain_tx: p.mint_tx_hash,
    new_ownership_pct: p.new_ownership_bps === null ? null : p.new_ownership_bps / 100,
    transaction_id: p.transaction_id,
    failure_reason: p.failure_reason,
    created_at: iso(p.created_at),
    confirmed_at: isoOrNull(p.confirmed_at),
  };
}
