import type { Generated, Insertable, Selectable, Updateable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";
import type { Role, UserStatus } from "../../lib/actor.ts";
import type { Tier } from "../../lib/tiers.ts";

export interface UsersTable {
  id: string;
  username: string;
  display_name: string;
  email: string | null;
  role: Role;
  status: UserStatus;
  wallet_address: string;
  wallet_kind: "siwe" | "custodial";
  custody_index: number | null;
  bio: string | null;
  location: string | null;
  website: string | null;
  avatar_url: string | null;
  badges: Generated<string[]>;
  followers_count: Generated<number>;
  created_at: Timestamp;
  updated_at: Timestamp;
  last_login_at: NullableTimestamp;
}

/** A wallet a user linked by signing with it (SIWE): lower-case, one user's at most. */
export interface UserWalletsTable {
  address: string;
  user_id: string;
  linked_at: Timestamp;
}

export interface UsersTables {
  users: UsersTable;
  user_wallets: UserWalletsTable;
}

/** Views of `users` that other modules read (created in this module's migrations); the table is the module's own. */
export interface UsersViews {
  /** A user as others name them: an artwork's artist, an event's artists, a certificate's recipient wallet. */
  user_directory: Pick<UsersTable, "id" | "display_name" | "wallet_address">;
  /** What authentication reads of a user (role, status) and records (the last login: updatable). */
  user_access: Pick<UsersTable, "id" | "role" | "status" | "last_login_at">;
  /** Every wallet of every user, lower-case: the one on the user's row and the linked ones. */
  user_wallet_directory: { user_id: string; wallet: string };
}

export type User = Selectable<UsersTable>;
export type LinkedWallet = Selectable<UserWalletsTable>;
/** A user's standing in the rewards programme, as the rewards module's view shows it (none yet: 0, bronze). */
export interface UserStanding {
  tier: Tier;
  service_points: number;
}
/** A user as profiles show it: with the number of their artworks, counted when read, and their standing. */
export type UserProfile = User & UserStanding & { artworks_count: number };
/** A user as the admins' list shows it. */
export type AdminUser = User & Pick<UserStanding, "tier">;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
