import type { Kysely } from "kysely";
import { getAddress, type Hex } from "viem";
import type { Database } from "../../db/database.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import { ApiError } from "../../lib/errors.ts";
import { iso } from "../../lib/time.ts";
import type { LinkedWallet, UsersService } from "../users/users.service.ts";
import type { AuthService } from "./auth.service.ts";

/**
 * Wallets a user links to their account by signing a SIWE message with them (docs/wallets.md): the
 * proof is the sign-in's (AuthService.proveWallet), the link is the users module's. A linked wallet
 * is the user's on the platform: what it holds gives the user the owner's rights, and withdrawals
 * may go to it. It is no credential: it does not sign in.
 */
export class LinkedWalletsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly users: UsersService,
    private readonly auth: AuthService,
  ) {}

  /** Links the wallet that signed `message`; the nonce is consumed with the link, in one transaction. */
  async link(userId: string, input: { message: string; signature: Hex }, transact: Transact = transactOn(this.db)) {
    return transact(async (trx) => {
      const address = await this.auth.proveWallet(trx, input.message, input.signature);
      return toLinkedWallet(await this.users.linkWallet(trx, userId, address));
    });
  }

  async list(userId: string) {
    return { data: (await this.users.linkedWallets(userId)).map(toLinkedWallet) };
  }

  async unlink(userId: string, address: string) {
    if (!ADDRESS.test(address)) throw ApiError.notFound("Linked wallet");
    const wallet = await this.users.unlinkWallet(userId, address);
    return { address: checksummed(wallet.address), unlinked: true as const };
  }
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

function toLinkedWallet(w: LinkedWallet) {
  return { address: checksummed(w.address), linked_at: iso(w.linked_at) };
}

/** Addresses are stored lower-case and answered as EIP-55, as the sign-in wallet is. */
function checksummed(address: string): `0x${string}` {
  return getAddress(address);
}
