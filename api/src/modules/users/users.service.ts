import { credentialsChanged } from "../../db/notifications.ts";
import type { Kysely } from "kysely";
import type { CustodyWallet } from "../../chain/custody.ts";
import type { Database, Db } from "../../db/database.ts";
import type { Role, UserStatus } from "../../lib/actor.ts";
import type { User, UserProfile, AdminUser, LinkedWallet } from "./users.tables.ts";
import { lockNamed } from "../../db/locks.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import { neutralHandle } from "./handles.ts";
import * as repo from "./users.repository.ts";

/** The row types other modules use, reached through the service (users.tables.ts is the module's own). */
export type { LinkedWallet, User, UserProfile } from "./users.tables.ts";
export type { Tier } from "../../lib/tiers.ts";

/**
 * What a user's new role does to their credentials, in the transaction of the change: the auth
 * module's (it revokes those holding scopes the role may not hold), registered at construction,
 * since auth depends on users and not the reverse.
 */
export type CredentialsOfRole = (db: Db, userId: string, role: Role) => Promise<void>;

export class UsersService {
  private credentialsOfRole: CredentialsOfRole | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly custody: CustodyWallet,
  ) {}

  /** The auth module registers what a new role does to the user's credentials (CredentialsOfRole). */
  registerCredentialsOfRole(hook: CredentialsOfRole): void {
    if (this.credentialsOfRole) throw new Error("the credentials of a role are registered twice");
    this.credentialsOfRole = hook;
  }

  get(id: string): Promise<User> {
    return this.getIn(this.db, id);
  }

  /** `get`, read on `db` (a caller's transaction). */
  async getIn(db: Db, id: string): Promise<User> {
    return found(isId("user", id) ? await repo.findById(db, id) : undefined, "User");
  }

  /** The user with what profiles add (`artworks_count`), for GET /v1/users/:id and /v1/users/me. */
  async profile(id: string): Promise<UserProfile> {
    return found(isId("user", id) ? await repo.findProfile(this.db, id) : undefined, "User");
  }

  /** A user whose wallet the platform holds: address `custody_index` of the platform HD wallet. */
  async createCustodialUser(
    db: Db,
    input: { username: string; email: string | null; role: Role; display_name?: string },
  ): Promise<User> {
    const index = await repo.nextCustodyIndex(db);
    const user = await repo.insertIfAbsent(db, {
      id: newId("user"),
      username: input.username,
      display_name: input.display_name ?? input.username,
      email: input.email,
      role: input.role,
      status: "active",
      wallet_address: this.custody.addressAt(index),
      wallet_kind: "custodial",
      custody_index: index,
      bio: null,
      location: null,
      website: null,
      avatar_url: null,
      last_login_at: null,
    });
    if (!user) throw ApiError.conflict("conflict", "A user with this username or email already exists");
    return user;
  }

  /** The user whose wallet is `address` (any case), if any: the wallet on their row, or one they linked. */
  findByWallet(db: Db, address: string): Promise<User | undefined> {
    return repo.findByWallet(db, address);
  }

  /**
   * The user proven by a SIWE signature: found by address (a linked wallet finds its user, whom the
   * caller refuses to sign in), else created as a collector with a neutral handle. Under the
   * address's lock, in the caller's transaction: a first sign-in and a link of the same address
   * never both win.
   */
  async findOrCreateWalletUser(db: Db, address: `0x${string}`): Promise<User> {
    await lockWallet(db, address);
    const existing = await repo.findByWallet(db, address);
    if (existing) return existing;
    for (let attempt = 0; attempt < 8; attempt++) {
      const handle = neutralHandle();
      const created = await repo.insertIfAbsent(db, {
        id: newId("user"),
        username: handle.username,
        display_name: handle.display_name,
        email: null,
        role: "collector",
        status: "active",
        wallet_address: address,
        wallet_kind: "siwe",
        custody_index: null,
        bio: null,
        location: null,
        website: null,
        avatar_url: null,
        last_login_at: null,
      });
      if (created) return created;
      const raced = await repo.findByWallet(db, address); // a concurrent first sign-in won
      if (raced) return raced;
    }
    throw new Error(`Could not create a user for ${address}`);
  }

  /**
   * Links `address` (proven by the caller's SIWE signature) to `userId`, in the caller's transaction.
   * Linking it again answers the link as it is. Refused (409 conflict) when it is another user's,
   * linked or signed in with, or the user's own sign-in wallet.
   */
  async linkWallet(db: Db, userId: string, address: string): Promise<LinkedWallet> {
    const wallet = address.toLowerCase();
    await lockWallet(db, wallet);
    const holder = await repo.findByWallet(db, wallet);
    if (holder && holder.id !== userId) throw ApiError.conflict("conflict", `The wallet ${address} belongs to another account (linked to it, or signed in with); unlink it there first`);
    if (holder && holder.wallet_address.toLowerCase() === wallet) throw ApiError.conflict("conflict", `The wallet ${address} is this account's own wallet already`);
    if (holder) return (await repo.findLinkedWallet(db, wallet))!;
    return (await repo.insertLinkedWallet(db, userId, wallet))!;
  }

  linkedWallets(userId: string): Promise<LinkedWallet[]> {
    return repo.linkedWalletsOf(this.db, userId);
  }

  /** Unlinks one of the user's linked wallets; anyone else's, or none, 404. */
  async unlinkWallet(userId: string, address: string): Promise<LinkedWallet> {
    return found(await repo.deleteLinkedWallet(this.db, userId, address), "Linked wallet");
  }

  async updateProfile(
    callerId: string,
    targetId: string,
    changes: { display_name?: string; bio?: string | null; location?: string | null; website?: string | null },
  ) {
    if (callerId !== targetId) {
      await this.get(targetId); // unknown ids stay 404
      throw ApiError.forbidden("Only the user may update their own profile");
    }
    const normalized = Object.fromEntries(
      Object.entries(changes).map(([k, v]) => [k, typeof v === "string" && v.length === 0 && k !== "display_name" ? null : v]),
    );
    const user = found(await repo.update(this.db, targetId, normalized), "User");
    const out: Record<string, unknown> = { id: user.id };
    for (const key of Object.keys(changes) as (keyof typeof changes)[]) out[key] = user[key];
    out.updated_at = iso(user.updated_at);
    return out;
  }

  async adminList(filter: repo.AdminUserFilter, page: Page) {
    const { rows, total } = await repo.search(this.db, filter, page);
    return paginated(rows.map(toAdminView), page, total);
  }

  async adminUpdate(adminId: string, targetId: string, changes: { role?: Role; status?: UserStatus }) {
    const target = await this.get(targetId);
    const demotesOrSuspends = changes.status === "suspended" || (changes.role !== undefined && changes.role !== "admin");
    if (target.id === adminId && demotesOrSuspends) {
      throw ApiError.conflict("invalid_state", "Admins cannot suspend or demote themselves; ask another admin");
    }
    const user = await this.db.transaction().execute(async (trx) => {
      if (demotesOrSuspends) {
        // Every active admin row stays locked until commit: of two admins removing each other at
        // once, the second waits and then sees the first one's change.
        const admins = await repo.lockActiveAdmins(trx);
        if (admins.includes(target.id) && admins.length === 1) {
          throw ApiError.conflict("invalid_state", "This is the last active admin; make another user an admin first");
        }
        if (!admins.includes(adminId)) throw ApiError.forbidden("You are no longer an active admin");
      }
      const updated = await repo.update(trx, target.id, changes);
      // A new role takes the credentials it may not hold with it, in this transaction; a suspension
      // revokes nothing (its credentials are refused while it lasts: docs/integrators/auth.md).
      if (updated && changes.role !== undefined) {
        if (!this.credentialsOfRole) throw new Error("no CredentialsOfRole is registered: a role cannot change");
        await this.credentialsOfRole(trx, updated.id, changes.role);
      }
      return updated;
    });
    if (!user) throw ApiError.notFound("User");
    credentialsChanged(user.id);
    return toAdminView({ ...user, tier: await repo.tierOf(this.db, user.id) });
  }

  countUsers(): Promise<number> {
    return repo.countUsers(this.db);
  }

  /** Users who joined within [from, to): the admin report's `new_users`. */
  countJoined(range: { from: Date; to: Date }): Promise<number> {
    return repo.countJoined(this.db, range);
  }

  /** Whether any user exists, in the caller's transaction (the bootstrap admin's check). */
  anyUser(db: Db): Promise<boolean> {
    return repo.anyUser(db);
  }

  /** The oldest active admin's id (the bootstrap admin's, while it is one), if any. */
  firstActiveAdmin(db: Db = this.db): Promise<string | undefined> {
    return repo.firstActiveAdmin(db);
  }

  /** The role of each of `ids` that is a user (others are absent), in the caller's transaction. */
  rolesOf(db: Db, ids: readonly string[]): Promise<Map<string, Role>> {
    return repo.rolesOf(db, ids.filter((id) => isId("user", id)));
  }
}

/** An address's advisory lock: linking it and a first sign-in with it are serialized. */
function lockWallet(db: Db, address: string): Promise<void> {
  return lockNamed(db, `wallet:${address.toLowerCase()}`);
}

export function toPublicView(u: UserProfile) {
  return {
    id: u.id,
    username: u.username,
    display_name: u.display_name,
    role: u.role,
    tier: u.tier,
    bio: u.bio,
    avatar_url: u.avatar_url,
    location: u.location,
    website: u.website,
    artworks_count: u.artworks_count,
    followers_count: u.followers_count,
  };
}

export function toOwnView(u: UserProfile) {
  return {
    ...toPublicView(u),
    email: u.email,
    status: u.status,
    wallet_address: u.wallet_address,
    badges: u.badges,
    service_points: u.service_points,
    created_at: iso(u.created_at),
    updated_at: iso(u.updated_at),
  };
}

export function toAdminView(u: AdminUser) {
  return {
    id: u.id,
    username: u.username,
    display_name: u.display_name,
    email: u.email,
    role: u.role,
    tier: u.tier,
    status: u.status,
    wallet_address: u.wallet_address,
    joined_at: iso(u.created_at),
    last_login: isoOrNull(u.last_login_at),
  };
}
