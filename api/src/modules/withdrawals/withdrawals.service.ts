import type { ChainOperationKind } from "../../chain/operations.ts";
import type { Db } from "../../db/database.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import type { Actor } from "../../lib/actor.ts";
import { ApiError } from "../../lib/errors.ts";
import { isId } from "../../lib/ids.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import type { StateFact } from "../artworks/ownership.service.ts";
import { CertificateWithdrawals } from "./certificate-withdrawals.ts";
import { PaymentTokenWithdrawals } from "./payment-token-withdrawals.ts";
import { ShareWithdrawals } from "./share-withdrawals.ts";
import { withdrawalAnswers, type WithdrawalsDeps } from "./withdrawal-transfers.ts";
import * as repo from "./withdrawals.repository.ts";
import type { WithdrawalCreate } from "./withdrawals.schemas.ts";

/**
 * Withdrawals (docs/wallets.md#taking-your-assets-to-your-own-wallet): a custodial user's asset
 * leaves the wallet the platform holds for a wallet the user linked, each kind by its own chain
 * operation: a certificate as an ERC-2771 request through ArtForwarder (certificate-withdrawals.ts),
 * shares in a transaction the custodial wallet signs itself (share-withdrawals.ts: ArtShares trusts
 * no forwarder), the payment token by an EIP-3009 authorization (payment-token-withdrawals.ts). A
 * withdrawal is `completed` once its transfer is on-chain; `asset.withdrawn` goes to the user.
 */
export class WithdrawalsService {
  readonly certificates: CertificateWithdrawals;
  readonly shares: ShareWithdrawals;
  readonly paymentToken: PaymentTokenWithdrawals;

  constructor(private readonly deps: WithdrawalsDeps) {
    this.certificates = new CertificateWithdrawals(deps);
    this.shares = new ShareWithdrawals(deps);
    this.paymentToken = new PaymentTokenWithdrawals(deps);
  }

  create(actor: Actor, input: WithdrawalCreate, transact: Transact = transactOn(this.deps.db)) {
    if (input.asset === "payment_token") return this.paymentToken.create(actor, input, transact);
    if (input.asset === "shares") return this.shares.create(actor, input, transact);
    return this.certificates.create(actor, input, transact);
  }

  async list(userId: string, page: Page) {
    const { rows, total } = await repo.listOf(this.deps.db, userId, page);
    return paginated(await withdrawalAnswers(this.deps.operations, this.deps.db, rows), page, total);
  }

  /** A withdrawal for its user or an admin; anyone else 404 (it is private). */
  async get(actor: Actor, id: string) {
    const w = isId("withdrawal", id) ? await repo.find(this.deps.db, id) : undefined;
    if (!w || (actor.role !== "admin" && w.user_id !== actor.userId)) throw ApiError.notFound("Withdrawal");
    return (await withdrawalAnswers(this.deps.operations, this.deps.db, [w]))[0]!;
  }

  /** This module's state of an artwork: `withdrawing` while its certificate is on its way out. */
  async statesOf(db: Db, artworkId: string): Promise<StateFact[]> {
    const pending = await repo.pendingCertificateOf(db, artworkId);
    return pending ? [{ state: "withdrawing", detail: `its certificate is being withdrawn to ${pending.to_wallet} (${pending.id})` }] : [];
  }

  /** The chain operation kinds of this module: one per asset. */
  kinds(): ChainOperationKind<any>[] {
    return [this.certificates.kind, this.shares.kind, this.paymentToken.kind];
  }
}
