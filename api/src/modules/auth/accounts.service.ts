import type { Kysely } from "kysely";
import { lockNamed } from "../../db/locks.ts";
import type { Database } from "../../db/database.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import type { Role } from "../../lib/actor.ts";
import { toAdminView, type UsersService } from "../users/users.service.ts";
import type { AuthService } from "./auth.service.ts";

/** Accounts that come with credentials: an admin's new user with its first API key, and the first admin. */
export class AccountsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly users: UsersService,
    private readonly auth: AuthService,
  ) {}

  /** A user with a custodial wallet and a first API key, shown once. */
  async createUser(input: { username: string; email: string; role: Role; display_name?: string }, transact: Transact = transactOn(this.db)) {
    return transact(async (trx) => {
      const user = await this.users.createCustodialUser(trx, input);
      const key = await this.auth.createApiKey(user.id, "default", trx);
      // A new user has earned nothing: bronze.
      return { ...toAdminView({ ...user, tier: "bronze" }), api_key: { id: key.id, secret: key.secret } };
    });
  }

  /**
   * On an empty database, creates the first admin and its API key (BOOTSTRAP_ADMIN_API_KEY, or a
   * generated one returned to be printed once). Several instances starting at once create one admin.
   */
  async bootstrapAdmin(presetKey: string | null): Promise<{ userId: string; apiKey: string | null } | null> {
    return this.db.transaction().execute(async (trx) => {
      await lockNamed(trx, "bootstrap_admin");
      if (await this.users.anyUser(trx)) return null;
      const admin = await this.users.createCustodialUser(trx, { username: "admin", email: null, role: "admin", display_name: "Platform admin" });
      if (presetKey) {
        await this.auth.registerApiKey(admin.id, "bootstrap", presetKey, trx);
        return { userId: admin.id, apiKey: null };
      }
      const key = await this.auth.createApiKey(admin.id, "bootstrap", trx);
      return { userId: admin.id, apiKey: key.secret };
    });
  }

  /**
   * A new API key for the first admin, shown once (`npm run admin-key`: the bootstrap key is shown
   * only at the start that created it). On an empty database that admin is created with it; null
   * when the database has users but no active admin.
   */
  async createAdminKey(name: string): Promise<{ userId: string; apiKey: string } | null> {
    const bootstrapped = await this.bootstrapAdmin(null);
    if (bootstrapped?.apiKey) return { userId: bootstrapped.userId, apiKey: bootstrapped.apiKey };
    const adminId = await this.users.firstActiveAdmin();
    if (!adminId) return null;
    const key = await this.auth.createApiKey(adminId, name);
    return { userId: adminId, apiKey: key.secret };
  }
}
