import { defineModule, migrationsOf } from "../module.ts";
import type { UsersService } from "../users/users.service.ts";
import { AccountsService } from "./accounts.service.ts";
import { registerAuthRoutes } from "./auth.routes.ts";
import { AuthService } from "./auth.service.ts";
import { LinkedWalletsService } from "./wallets.service.ts";

/**
 * Credentials: API keys, tokens, SIWE, and accounts created with their first credential (an
 * admin's new user, the bootstrap admin), wallets linked by a SIWE proof. Tables: auth.tables.ts.
 */
export const authModule = defineModule<{ auth: AuthService; accounts: AccountsService; linkedWallets: LinkedWalletsService }, { users: UsersService }>({
  name: "auth",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, config, publicClient, users }) => {
    const auth = new AuthService(db, config, users, publicClient);
    users.registerCredentialsOfRole((trx, userId, role) => auth.revokeCredentialsBeyond(trx, userId, role));
    return { auth, accounts: new AccountsService(db, users, auth), linkedWallets: new LinkedWalletsService(db, users, auth) };
  },
  routes: ({ api }, { auth, accounts, linkedWallets }) => registerAuthRoutes(api, auth, accounts, linkedWallets),
  worker: ({ auth }) => ({ maintenance: () => auth.purgeExpired() }),
});
