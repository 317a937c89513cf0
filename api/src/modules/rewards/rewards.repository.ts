import { type Insertable, sql, type Transaction, type Updateable } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import { type Page, paginate } from "../../lib/pagination.ts";
import { TIERS } from "./rewards.rules.ts";
import type { Redemption, Reward, RewardLedgerRow, RewardLedgerTable, RewardRedemptionsTable, RewardsTable } from "./rewards.tables.ts";

/** The tier of `lifetime_points` in SQL (TIERS), for the statement that moves the points. */
const tierCase = (lifetime: ReturnType<typeof sql>) =>
  sql`case ${sql.join(
    [...TIERS].reverse().map((t) => sql`when ${lifetime} >= ${t.from} then ${t.tier}`),
    sql` `,
  )} end`;

// ---- points (columns of users, written by rewards only) ----

/** The artists of artworks (the artworks module's view). */
export function artistsOf(db: Db, artworkIds: string[]): Promise<{ id: string; artist_id: string }[]> {
  return db.selectFrom("artwork_summaries").select(["id", "artist_id"]).where("id", "in", artworkIds).execute();
}

/** Locks the users' rows in id order (the ORDER BY): one order for every earning, so that two never deadlock. */
export async function lockUsers(trx: Transaction<Database>, userIds: string[]): Promise<void> {
  await trx.selectFrom("users").select("id").where("id", "in", userIds).orderBy("id").forNoKeyUpdate().execute();
}

/**
 * Writes each ledger row unless its source key was written before, and adds what was written to
 * the users' points and tiers, in one statement. `updated_at` stays the profile's: points have
 * their own timestamps in the ledger.
 */
export async function creditEarnings(db: Db, rows: Insertable<RewardLedgerTable>[]): Promise<void> {
  await db
    .with("written", (db) =>
      db
        .insertInto("reward_ledger")
        .values(rows)
        .onConflict((oc) => oc.column("source_key").doNothing())
        .returning(["user_id", "points"]),
    )
    .with("earned", (db) => db.selectFrom("written").select(["user_id", sql<number>`sum(points)::int`.as("points")]).groupBy("user_id"))
    .updateTable("users")
    .from("earned")
    .set({
      service_points: sql<number>`users.service_points + earned.points`,
      lifetime_points: sql<number>`users.lifetime_points + earned.points`,
      tier: tierCase(sql`users.lifetime_points + earned.points`) as never,
    })
    .whereRef("users.id", "=", "earned.user_id")
    .execute();
}

export function pointsOf(db: Db, userId: string) {
  return db.selectFrom("users").select(["id", "service_points", "lifetime_points", "tier"]).where("id", "=", userId).executeTakeFirstOrThrow();
}

export async function servicePointsOf(db: Db, userId: string): Promise<number> {
  const { service_points } = await db.selectFrom("users").select("service_points").where("id", "=", userId).executeTakeFirstOrThrow();
  return service_points;
}

/** Spends `points` of the user's balance with one conditional UPDATE (never below zero); the balance left, or undefined when it was short. */
export async function spendPoints(db: Db, userId: string, points: number): Promise<number | undefined> {
  const spent = await db
    .updateTable("users")
    .set({ service_points: sql<number>`service_points - ${points}` })
    .where("id", "=", userId)
    .where("service_points", ">=", points)
    .returning("service_points")
    .executeTakeFirst();
  return spent?.service_points;
}

// ---- the ledger ----

/** A user's ledger, newest first. */
export function ledgerOf(db: Db, userId: string, page: Page): Promise<{ rows: RewardLedgerRow[]; total: number }> {
  const query = db.selectFrom("reward_ledger").where("user_id", "=", userId);
  return paginate(query, page, (q) => q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"));
}

export async function insertLedgerRow(db: Db, row: Insertable<RewardLedgerTable>): Promise<void> {
  await db.insertInto("reward_ledger").values(row).execute();
}

// ---- the catalog ----

/** The catalog (active rewards only unless `all`), cheapest first. */
export function listRewards(db: Db, page: Page, all: boolean): Promise<{ rows: Reward[]; total: number }> {
  const query = all ? db.selectFrom("rewards") : db.selectFrom("rewards").where("active", "=", true);
  return paginate(query, page, (q) => q.selectAll().orderBy("points_cost").orderBy("id"));
}

export function insertReward(db: Db, reward: Insertable<RewardsTable>): Promise<Reward> {
  return db.insertInto("rewards").values(reward).returningAll().executeTakeFirstOrThrow();
}

export function findReward(db: Db, id: string): Promise<Reward | undefined> {
  return db.selectFrom("rewards").selectAll().where("id", "=", id).executeTakeFirst();
}

export function lockReward(trx: Transaction<Database>, id: string): Promise<Reward | undefined> {
  return trx.selectFrom("rewards").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

export function updateReward(db: Db, id: string, changes: Updateable<RewardsTable>): Promise<Reward> {
  return db
    .updateTable("rewards")
    .set({ ...changes, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Takes one of an active reward's stock with one conditional UPDATE (never oversold); undefined when inactive or out of stock. */
export function takeFromStock(db: Db, id: string): Promise<Reward | undefined> {
  return db
    .updateTable("rewards")
    .set({ redeemed_count: sql<number>`redeemed_count + 1`, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .where("active", "=", true)
    .where(sql<boolean>`(stock is null or redeemed_count < stock)`)
    .returningAll()
    .executeTakeFirst();
}

export function stockOf(db: Db, id: string): Promise<Pick<Reward, "active" | "stock" | "redeemed_count">> {
  return db.selectFrom("rewards").select(["active", "stock", "redeemed_count"]).where("id", "=", id).executeTakeFirstOrThrow();
}

export function insertRedemption(db: Db, redemption: Insertable<RewardRedemptionsTable>): Promise<Redemption> {
  return db.insertInto("reward_redemptions").values(redemption).returningAll().executeTakeFirstOrThrow();
}
