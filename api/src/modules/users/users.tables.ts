import type { Generated, Insertable, Selectable, Updateable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";
import type { Role, UserStatus } from "../../lib/actor.ts";

export type Tier = "bronze" | "silver" | "gold" | "platinum";

export interface UsersTable {
  id: string;
  username: string;
  display_name: string;
  email: string | null;
  role: Role;
  status: UserStatus;
  tier: Generated<Tier>;
  wallet_address: string;
  wallet_kind: "siwe" | "custodial";
  custody_index: number | null;
  bio: string | null;
  location: string | null;
  website: string | null;
  avatar_url: string | null;
  badges: Generated<string[]>;
  service_points: Generated<number>;
  lifetime_points: Generated<number>;
  followers_count: Generated<number>;
  created_at: Timestamp;
  updated_at: Timestamp;
  last_login_at: NullableTimestamp;
}

export interface UsersTables {
  users: UsersTable;
}

/** Views of `users` that other modules read (created in this module's migrations); the table is the module's own. */
export interface UsersViews {
  /** A user as others name them: an artwork's artist, an event's artists, a certificate's recipient wallet. */
  user_directory: Pick<UsersTable, "id" | "display_name" | "wallet_address">;
  /** What authentication reads of a user (role, status) and records (the last login: updatable). */
  user_access: Pick<UsersTable, "id" | "role" | "status" | "last_login_at">;
}

export type User = Selectable<UsersTable>;
/** A user as profiles show it: with the number of their artworks, counted when read. */
export type UserProfile = User & { artworks_count: number };
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
