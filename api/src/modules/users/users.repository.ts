import { sql } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import type { Role, UserStatus } from "../../lib/actor.ts";
import type { Tier } from "../../lib/tiers.ts";
import type { AdminUser, LinkedWallet, NewUser, User, UserProfile, UserUpdate } from "./users.tables.ts";
import { containsPattern, type Page, paginate } from "../../lib/pagination.ts";

export function findById(db: Db, id: string): Promise<User | undefined> {
  return db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirst();
}

/** The user of `address` (any case): its own wallet, or one it linked. */
export function findByWallet(db: Db, address: string): Promise<User | undefined> {
  const wallet = address.toLowerCase();
  return db
    .selectFrom("users")
    .selectAll()
    .where((eb) => eb.or([eb(sql`lower(wallet_address)`, "=", wallet), eb("id", "=", eb.selectFrom("user_wallets").select("user_id").where("address", "=", wallet))]))
    .executeTakeFirst();
}

/** Links `address` (lower-case) to `userId` unless it is linked already (to anyone): undefined then. */
export function insertLinkedWallet(db: Db, userId: string, address: string): Promise<LinkedWallet | undefined> {
  return db.insertInto("user_wallets").values({ address, user_id: userId }).onConflict((oc) => oc.doNothing()).returningAll().executeTakeFirst();
}

export function linkedWalletsOf(db: Db, userId: string): Promise<LinkedWallet[]> {
  return db.selectFrom("user_wallets").selectAll().where("user_id", "=", userId).orderBy("linked_at").orderBy("address").execute();
}

export function findLinkedWallet(db: Db, address: string): Promise<LinkedWallet | undefined> {
  return db.selectFrom("user_wallets").selectAll().where("address", "=", address.toLowerCase()).executeTakeFirst();
}

export function deleteLinkedWallet(db: Db, userId: string, address: string): Promise<LinkedWallet | undefined> {
  return db.deleteFrom("user_wallets").where("address", "=", address.toLowerCase()).where("user_id", "=", userId).returningAll().executeTakeFirst();
}

/** Inserts unless a unique key (username, email, wallet) is taken; undefined then. */
export function insertIfAbsent(db: Db, user: NewUser): Promise<User | undefined> {
  return db.insertInto("users").values(user).onConflict((oc) => oc.doNothing()).returningAll().executeTakeFirst();
}

export function insert(db: Db, user: NewUser): Promise<User> {
  return db.insertInto("users").values(user).returningAll().executeTakeFirstOrThrow();
}

export async function nextCustodyIndex(db: Db): Promise<number> {
  const { rows } = await sql<{ n: number }>`select nextval('custody_address_index_seq')::int as n`.execute(db);
  return rows[0]!.n;
}

export function update(db: Db, id: string, changes: UserUpdate): Promise<User | undefined> {
  return db
    .updateTable("users")
    .set({ ...changes, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
}

/**
 * The ids of the active admins, their rows locked until the transaction ends as an update of their
 * role or status would lock them (FOR NO KEY UPDATE: what references a user, a token's row, still
 * takes its key share).
 */
export async function lockActiveAdmins(db: Db): Promise<string[]> {
  const rows = await db.selectFrom("users").select("id").where("role", "=", "admin").where("status", "=", "active").orderBy("id").forNoKeyUpdate().execute();
  return rows.map((r) => r.id);
}

/**
 * A user with `artworks_count` (the artist's artworks not deleted, counted now by the artworks
 * module's view, on artworks_artist_idx) and their tier and points (the rewards module's view; no
 * row yet: bronze, 0). Views, not services: users is built before artworks and rewards.
 */
export function findProfile(db: Db, id: string): Promise<UserProfile | undefined> {
  return db
    .selectFrom("users")
    .leftJoin("reward_standings as r", "r.user_id", "users.id")
    .selectAll("users")
    .select((eb) => [
      eb.fn
        .coalesce(eb.selectFrom("artworks_per_artist as c").select("c.artworks_count").whereRef("c.artist_id", "=", "users.id"), sql.lit(0))
        .as("artworks_count"),
      eb.fn.coalesce("r.tier", sql.lit("bronze")).as("tier"),
      eb.fn.coalesce("r.service_points", sql.lit(0)).as("service_points"),
    ])
    .where("users.id", "=", id)
    .executeTakeFirst() as Promise<UserProfile | undefined>;
}

/** A user's tier, from the rewards module's view (none yet: bronze). */
export async function tierOf(db: Db, id: string): Promise<Tier> {
  return (await db.selectFrom("reward_standings").select("tier").where("user_id", "=", id).executeTakeFirst())?.tier ?? "bronze";
}

/** The id of the oldest active admin (the bootstrap admin, unless it was demoted or suspended), if any. */
export async function firstActiveAdmin(db: Db): Promise<string | undefined> {
  const row = await db.selectFrom("users").select("id").where("role", "=", "admin").where("status", "=", "active").orderBy("created_at").orderBy("id").limit(1).executeTakeFirst();
  return row?.id;
}

/** Whether any user exists (the first admin is created on an empty database). */
export async function anyUser(db: Db): Promise<boolean> {
  return (await db.selectFrom("users").select("id").limit(1).executeTakeFirst()) !== undefined;
}

/** The roles of those of `ids` that are users. */
export async function rolesOf(db: Db, ids: readonly string[]): Promise<Map<string, Role>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom("users").select(["id", "role"]).where("id", "in", ids).execute();
  return new Map(rows.map((r) => [r.id, r.role]));
}

export function countUsers(db: Db): Promise<number> {
  return db
    .selectFrom("users")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .executeTakeFirstOrThrow()
    .then((r) => Number(r.n));
}

/** Users created within [from, to) (the admin report's `new_users`). */
export function countJoined(db: Db, range: { from: Date; to: Date }): Promise<number> {
  return db
    .selectFrom("users")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .where("created_at", ">=", range.from)
    .where("created_at", "<", range.to)
    .executeTakeFirstOrThrow()
    .then((r) => Number(r.n));
}

export interface AdminUserFilter {
  q?: string;
  role?: Role;
  tier?: Tier;
  status?: UserStatus;
}

export async function search(db: Db, filter: AdminUserFilter, page: Page): Promise<{ rows: AdminUser[]; total: number }> {
  let query = db.selectFrom("users").leftJoin("reward_standings as r", "r.user_id", "users.id");
  if (filter.role) query = query.where("role", "=", filter.role);
  if (filter.tier) query = query.where(sql`coalesce(r.tier, 'bronze')`, "=", filter.tier);
  if (filter.status) query = query.where("status", "=", filter.status);
  if (filter.q) {
    const pattern = containsPattern(filter.q);
    query = query.where((eb) =>
      eb.or([eb("username", "ilike", pattern), eb("email", "ilike", pattern), eb("display_name", "ilike", pattern)]),
    );
  }
  return paginate(query, page, (q) =>
    q
      .selectAll("users")
      .select((eb) => eb.fn.coalesce("r.tier", sql.lit("bronze")).as("tier"))
      .orderBy("users.created_at", "desc")
      .orderBy("users.id", "desc"),
  ) as Promise<{ rows: AdminUser[]; total: number }>;
}
