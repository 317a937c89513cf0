import type { Transaction } from "kysely";
import type { Logger } from "pino";
import { type Address, type Hex, keccak256, toBytes } from "viem";
import { artSharesAbi } from "../../../../contracts/abi/ArtShares.ts";
import { isRevertWith } from "../../chain/errors.ts";
import { type ChainOperationKind, type KeyedFacts, transactionOf } from "../../chain/operations.ts";
import type { ChainOperation, Database } from "../../db/database.ts";
import type { Transact } from "../../db/transact.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import type { Actor } from "../../lib/actor.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { centsToUsd } from "../../lib/money.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import type { LedgerService } from "../ledger/ledger.service.ts";
import type { PaymentsService } from "../payments/payments.service.ts";
import { failureOf, type PaymentFailure, type Purchase, type PurchaseKind, type Purchases } from "../payments/purchases.service.ts";
import * as repo from "./fractional.repository.ts";
import type { FractionalPurchase } from "./fractional.tables.ts";
import { artSharesOf, type FractionalChainDeps } from "./share-classes.ts";

export const MINT_OPERATION = "fractional_mint";

/** What a mint's confirmation records (its chain operation's `result`: the transaction is read from there). */
interface MintFacts {
  purchaseKey: string;
  txHash: string;
}

export interface SharePurchasesDeps extends FractionalChainDeps {
  logger: Logger;
  payments: PaymentsService;
  purchases: Purchases;
  ledger: LedgerService;
}

/**
 * Purchases of shares. A purchase reserves its shares in the request's transaction with one
 * conditional UPDATE (no oversell under any concurrency) and starts its `share_purchase` purchase
 * (payments/purchases.service.ts), which holds its money, stage and failure; the charge (key
 * `share_purchase:<frac id>`) requests the mint (`mint:<frac id>`: ArtShares mints a purchase key
 * once), and the purchase is `confirmed` when the indexer has SharesMinted. A decline or a failed
 * mint releases the shares (and refunds a charge).
 */
export class SharePurchases {
  private readonly log: Logger;

  constructor(private readonly deps: SharePurchasesDeps) {
    this.log = deps.logger.child({ component: "share_purchases" });
  }

  async purchase(actor: Actor, artworkId: string, input: { shares_quantity: number; payment_method_id: string }, transact: Transact) {
    const { users, payments } = this.deps;
    if (!isId("artwork", artworkId)) throw ApiError.notFound("Fractional artwork");
    artSharesOf(this.deps.artShares);
    const seen = found(await repo.find(this.deps.db, artworkId), "Fractional artwork");
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
      const paid = await this.deps.purchases.start(
        trx,
        {
          type: "share_purchase",
          referenceId: id,
          artworkId,
          amountCents: fa.price_per_share_cents * BigInt(input.shares_quantity),
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
        transaction_id: paid.id,
        purchase_key: purchaseKeyOf(id),
        status: "pending",
      });
      return toPurchase(purchase, paid, null);
    });
    const id = created.purchase_id;
    await this.deps.purchases.charge(created.transaction_id).catch((err: unknown) => this.log.error({ err, purchase_id: id }, "charging in the request failed; the job will"));
    await this.deps.operations.waitFor(mintKey(id), async () => (await repo.findPurchase(this.deps.db, id))?.status !== "pending", this.deps.purchaseWaitMs);
    const { view, paid } = await this.viewOf((await repo.findPurchase(this.deps.db, id))!);
    // A failure before any charge succeeded is the payment's (402); after it, the mint's (refunded).
    return { purchase: view, failureCode: failureOf(paid)?.code ?? null, paymentFailed: view.status === "failed" && paid.charge_id === null };
  }

  /** A purchase for its buyer or an admin; anyone else 404. */
  async getPurchase(actor: Actor, id: string) {
    const p = isId("fractionalPurchase", id) ? await repo.findPurchase(this.deps.db, id) : undefined;
    if (!p || (actor.role !== "admin" && p.buyer_id !== actor.userId)) throw ApiError.notFound("Fractional purchase");
    return (await this.viewOf(p)).view;
  }

  /** A purchase as its buyer reads it: its reservation, its purchase's money and failure, its mint's transaction. */
  private async viewOf(p: FractionalPurchase) {
    const { db, purchases, operations } = this.deps;
    const [paid, mint] = await Promise.all([purchases.find(db, p.transaction_id), p.status === "confirmed" ? operations.find(db, mintKey(p.id)) : undefined]);
    return { view: toPurchase(p, paid!, transactionOf(mint, { confirmed: true })), paid: paid! };
  }

  /** Share purchases as a kind of purchase: what happens at each step of their payment (payments/purchases.service.ts). */
  readonly purchaseKind: PurchaseKind = {
    type: "share_purchase",
    keyPrefix: "share_purchase",
    // Its transaction is the mint's (the purchase's reference is the share purchase).
    chainOperationOf: (purchase) => (purchase.reference_id ? mintKey(purchase.reference_id) : null),
    onCharged: async (trx, purchase) => {
      const p = await repo.findPending(trx, purchase.reference_id!);
      if (!p) return { refund: { code: "purchase_closed", reason: "The purchase was closed before its payment" } };
      await this.deps.operations.request(trx, {
        key: mintKey(p.id),
        kind: MINT_OPERATION,
        payload: { purchase_id: p.id, to: p.buyer_wallet, token_id: p.token_id.toString(), amount: String(p.shares), purchase_key: p.purchase_key },
      });
    },
    onPaymentFailed: async (trx, purchase) => {
      await this.fail(trx, purchase.reference_id!);
    },
  };

  /** Fails a pending purchase in `trx` and releases its shares; the money is its purchase's (refunded when charged). */
  private async fail(trx: Transaction<Database>, id: string): Promise<FractionalPurchase | undefined> {
    const p = await repo.failPurchase(trx, id);
    if (!p) return undefined;
    await repo.releaseShares(trx, p.artwork_id, p.shares);
    return p;
  }

  readonly mintKind: ChainOperationKind<MintFacts> = {
    kind: MINT_OPERATION,
    abi: artSharesAbi,
    maxAttempts: 8,
    retryBaseMs: 2_000,
    send: async (op, ctx) => {
      const p = op.payload as { to: Address; token_id: string; amount: string; purchase_key: Hex };
      await this.deps.relayer.write({
        address: artSharesOf(this.deps.artShares),
        abi: artSharesAbi,
        functionName: "mintShares",
        args: [p.to, BigInt(p.token_id), BigInt(p.amount), p.purchase_key],
        label: op.key,
        onSubmitted: ({ hash }) => ctx.recordSent([op.key], hash),
      });
    },
    settled: (err) => isRevertWith(err, "ArtSharesPurchaseAlreadyMinted"),
    readIndexed: async (fromBlock, toBlock) => this.mintFacts(await this.deps.shares.mintsInBlocks(fromBlock, toBlock)),
    lookupIndexed: async (ops) =>
      this.mintFacts(await this.deps.shares.mintsOf(ops.map((op) => (op.payload as { purchase_key: Hex }).purchase_key))),
    readFromChain: async (ops) => {
      const out: KeyedFacts<MintFacts>[] = [];
      for (const op of ops) {
        const key = (op.payload as { purchase_key: Hex }).purchase_key;
        const minted = await this.deps.publicClient.readContract({ address: artSharesOf(this.deps.artShares), abi: artSharesAbi, functionName: "purchaseMinted", args: [key] });
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
      const failure: PaymentFailure = { code: "mint_failed", reason: `The shares could not be minted: ${reason}` };
      const p = await this.fail(trx, (op.payload as { purchase_id: string }).purchase_id);
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

  /** A minted purchase, in the confirming transaction: confirmed, its purchase completed, its event; the ledger entry to append. */
  private async confirm(trx: Transaction<Database>, facts: MintFacts) {
    const p = await repo.confirmPurchase(trx, facts.purchaseKey);
    if (!p) return null;
    const fa = await repo.confirmShares(trx, p.artwork_id, p.shares);
    // The buyer's holding after this mint: the indexed balance (transfers included), or the
    // confirmed purchases while the indexer lags.
    const indexed = await this.deps.shares.balanceOf(p.token_id, p.buyer_wallet as Hex, trx).catch(() => undefined);
    let held = indexed !== undefined ? Number(indexed) : 0;
    if (held < p.shares) held = await repo.confirmedSharesOf(trx, p.artwork_id, p.buyer_id);
    const bps = Math.round((held * 10_000) / fa.total_shares);
    await repo.setOwnershipBps(trx, p.id, bps);
    const paid = (await this.deps.purchases.find(trx, p.transaction_id))!;
    const completed = (await this.deps.purchases.complete(trx, p.transaction_id, { payoutCents: paid.amount_cents - paid.fee_cents }))!;
    await recordEvent(
      trx,
      "fractional.purchase_confirmed",
      {
        purchase_id: p.id,
        artwork_id: p.artwork_id,
        buyer_id: p.buyer_id,
        shares_purchased: p.shares,
        total_paid_usd: centsToUsd(paid.amount_cents),
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
      data: {
        purchase_id: p.id,
        transaction_id: p.transaction_id,
        token_id: p.token_id.toString(),
        shares: p.shares,
        amount_cents: paid.amount_cents.toString(),
        fee_cents: paid.fee_cents.toString(),
        chain_tx: facts.txHash,
      },
    };
  }
}

function mintKey(purchaseId: string): string {
  return `mint:${purchaseId}`;
}

/** The key ArtShares mints once: keccak256 of the purchase id, lower-case hex. */
export function purchaseKeyOf(purchaseId: string): string {
  return keccak256(toBytes(purchaseId)).toLowerCase();
}

/**
 * A purchase as the FractionalPurchase resource: its reservation (shares, price, status) with its
 * purchase's amount, failure and completion, and, once minted, the mint's transaction.
 */
export function toPurchase(p: FractionalPurchase, paid: Purchase, mintTx: string | null) {
  return {
    purchase_id: p.id,
    artwork_id: p.artwork_id,
    buyer_id: p.buyer_id,
    shares_purchased: p.shares,
    price_per_share_usd: centsToUsd(p.price_per_share_cents),
    total_paid_usd: centsToUsd(paid.amount_cents),
    status: p.status,
    on_chain_tx: p.status === "confirmed" ? mintTx : null,
    new_ownership_pct: p.new_ownership_bps === null ? null : p.new_ownership_bps / 100,
    transaction_id: p.transaction_id,
    failure_reason: p.status === "failed" ? (failureOf(paid)?.reason ?? null) : null,
    created_at: iso(p.created_at),
    confirmed_at: p.status === "confirmed" ? isoOrNull(paid.completed_at) : null,
  };
}
