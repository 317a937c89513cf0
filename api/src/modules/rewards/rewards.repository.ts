import { type Insertable, sql, type Transaction, type Updateable } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import { type Page, paginate } from "../../lib/pagination.ts";
import type { Tier } from "../../lib/tiers.ts";
import { TIERS } from "./rewards.rules.ts";
import type { Redemption, Reward, RewardLedgerRow, RewardLedgerTable, RewardRedemptionsTable, RewardsTable } from "./rewards.tables.ts";

/** The tier of `lifetime_points` in SQL (TIERS), for the statement that moves the points (the lowest below every threshold: a reversal's own row). */
const tierCase = (lifetime: ReturnType<typeof sql>) =>
  sql`case ${sql.join(
    [...TIERS].reverse().map((t) => sql`when ${lifetime} >= ${t.from} then ${t.tier}`),
    sql` `,
  )} else ${TIERS[0]!.tier} end`;

// ---- points ----

/** The artists of artworks (the artworks module's view). */
export function artistsOf(db: Db, artworkIds: string[]): Promise<{ id: string; artist_id: string }[]> {
  return db.selectFrom("artwork_summaries").select(["id", "artist_id"]).where("id", "in", artworkIds).execute();
}

/**
 * Takes the users' balance locks in id order (`userIds` sorted: unnest yields them in that order),
 * one order for every change of points, so that two never deadlock; a user with no balance row
 * yet is locked all the same (an advisory lock, held to the transaction's end).
 */
export async function lockBalances(trx: Transaction<Database>, userIds: readonly string[]): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended('reward_balance:' || u, 0)) from unnest(${[...userIds].sort()}::text[]) as u`.execute(trx);
}

/** A ledger row as the statements below write it. */
export interface LedgerInput {
  id: string;
  user_id: string;
  source_type: string;
  source_id: string;
  rule: string;
  points: number;
  reason: string;
}

/**
 * Earnings, in one statement: each (source, rule, user) not seen before becomes `standing` with its
 * points, gets its `earned` row, and moves its user's balance, lifetime and tier; one seen before
 * (standing, or reversed first) writes nothing. The users' balance locks are the caller's.
 */
export async function applyEarnings(db: Db, rows: LedgerInput[]): Promise<void> {
  await sql`
    with input as (
      select distinct on (user_id, source_type, source_id, rule) *
      from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        as r(id text, user_id text, source_type text, source_id text, rule text, points int, reason text)
    ),
    standing as (
      insert into reward_sources (user_id, source_type, source_id, rule, points, state)
      select user_id, source_type, source_id, rule, points, 'standing' from input
      on conflict do nothing
      returning user_id, source_type, source_id, rule
    ),
    written as (
      insert into reward_ledger (id, user_id, type, points, reason, reference_id, source_key, source_type, source_id, rule)
      select i.id, i.user_id, 'earned', i.points, i.reason, i.source_id,
        'earned:' || i.source_type || ':' || i.source_id || ':' || i.rule || ':' || i.user_id, i.source_type, i.source_id, i.rule
      from input i join standing s using (user_id, source_type, source_id, rule)
      returning user_id, points
    )
    ${moveBalances(sql`written`, { lifetime: true, create: true })}`.execute(db);
}

/** A reversal written: whose points, how many, and the balance after it (the webhook tells the user). */
export interface WrittenReversal extends Omit<LedgerInput, "id"> {
  service_points: number;
  created_at: Date;
}

/**
 * Reversals: each standing (source, rule, user) becomes `reversed` and writes a `reversal` row of
 * minus what it earned, moving the balance, lifetime and tier back; one not earned yet is recorded
 * `reversed` with nothing, so its earning, if it arrives later, earns nothing; one reversed before
 * writes nothing. The users' balance locks are the caller's.
 */
export async function applyReversals(trx: Transaction<Database>, rows: LedgerInput[]): Promise<WrittenReversal[]> {
  const input = sql`(select distinct on (user_id, source_type, source_id, rule) * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
    as r(id text, user_id text, source_type text, source_id text, rule text, points int, reason text))`;
  const { rows: reversed } = await sql<Omit<WrittenReversal, "service_points" | "created_at"> & { id: string }>`
    update reward_sources s set state = 'reversed', reversed_at = now()
    from ${input} i
    where s.user_id = i.user_id and s.source_type = i.source_type and s.source_id = i.source_id and s.rule = i.rule and s.state = 'standing'
    returning i.id, s.user_id, s.source_type, s.source_id, s.rule, s.points, i.reason`.execute(trx);
  await sql`
    insert into reward_sources (user_id, source_type, source_id, rule, points, state, reversed_at)
    select user_id, source_type, source_id, rule, 0, 'reversed', now() from ${input} i
    on conflict do nothing`.execute(trx);
  const taken = reversed.filter((r) => r.points > 0);
  if (taken.length === 0) return [];
  const { rows: balances } = await sql<{ user_id: string; service_points: number; created_at: Date }>`
    with written as (
      insert into reward_ledger (id, user_id, type, points, reason, reference_id, source_key, source_type, source_id, rule)
      select r.id, r.user_id, 'reversal', -r.points, r.reason, r.source_id,
        'reversal:' || r.source_type || ':' || r.source_id || ':' || r.rule || ':' || r.user_id, r.source_type, r.source_id, r.rule
      from jsonb_to_recordset(${JSON.stringify(taken)}::jsonb) as r(id text, user_id text, source_type text, source_id text, rule text, points int, reason text)
      returning user_id, points
    )
    ${moveBalances(sql`written`, { lifetime: true, create: false })}
    returning b.user_id, b.service_points, b.updated_at as created_at`.execute(trx);
  const after = new Map(balances.map((b) => [b.user_id, b]));
  return taken.map(({ id: _id, ...r }) => ({ ...r, service_points: after.get(r.user_id)!.service_points, created_at: after.get(r.user_id)!.created_at }));
}

/**
 * Redemptions whose order failed, expired or was refunded: each not reversed yet gets its points
 * back once (`redemption_reversed`). The users' balance locks are the caller's.
 */
export async function reverseRedemptionsOf(trx: Transaction<Database>, orderIds: readonly string[], newIds: () => string): Promise<{ user_id: string; redemption_id: string; points: number }[]> {
  const reversed = await trx
    .updateTable("reward_redemptions")
    .set({ reversed_at: sql<Date>`now()` })
    .where("order_id", "in", [...orderIds])
    .where("reversed_at", "is", null)
    .returning(["id", "user_id", "points_spent", "reward_name", "order_id"])
    .execute();
  if (reversed.length === 0) return [];
  const rows = reversed.map((r) => ({ id: newIds(), user_id: r.user_id, redemption_id: r.id, points: r.points_spent, reason: `Given back: ${r.reward_name} (order ${r.order_id} did not go through)` }));
  await sql`
    with written as (
      insert into reward_ledger (id, user_id, type, points, reason, reference_id, source_key, source_type, source_id)
      select r.id, r.user_id, 'redemption_reversed', r.points, r.reason, r.redemption_id, 'redemption_reversed:' || r.redemption_id, 'redemption', r.redemption_id
      from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(id text, user_id text, redemption_id text, points int, reason text)
      returning user_id, points
    )
    ${moveBalances(sql`written`, { lifetime: false, create: false })}`.execute(trx);
  return rows.map((r) => ({ user_id: r.user_id, redemption_id: r.redemption_id, points: r.points }));
}

/** The users who redeemed a discount on these orders and have not had it back. */
export async function redeemersOf(db: Db, orderIds: readonly string[]): Promise<string[]> {
  const rows = await db.selectFrom("reward_redemptions").select("user_id").distinct().where("order_id", "in", [...orderIds]).where("reversed_at", "is", null).execute();
  return rows.map((r) => r.user_id);
}

/**
 * The tail of a statement whose CTE `rows` (user_id, points) was written to the ledger: the users'
 * balances move by their sums (lifetime and tier too for earnings and reversals). Earnings make a
 * row for a user who has none yet; what takes points back or returns spent ones finds the row its
 * earning or spending made (an upsert would check a negative proposed row against the constraints).
 */
function moveBalances(rows: ReturnType<typeof sql>, { lifetime, create }: { lifetime: boolean; create: boolean }) {
  const added = lifetime ? sql`s.points` : sql`0`;
  const sums = sql`, sums as (select user_id, sum(points)::int as points from ${rows} group by user_id)`;
  if (!create) {
    return sql`${sums}
    update reward_balances b set
      service_points = b.service_points + s.points,
      lifetime_points = b.lifetime_points + ${added},
      tier = ${tierCase(sql`b.lifetime_points + ${added}`)},
      updated_at = now()
    from sums s where b.user_id = s.user_id`;
  }
  return sql`${sums}
    insert into reward_balances as b (user_id, service_points, lifetime_points, tier)
    select s.user_id, s.points, ${added}, ${tierCase(added)} from sums s
    on conflict (user_id) do update set
      service_points = b.service_points + excluded.service_points,
      lifetime_points = b.lifetime_points + excluded.lifetime_points,
      tier = ${tierCase(sql`b.lifetime_points + excluded.lifetime_points`)},
      updated_at = now()`;
}

export async function pointsOf(db: Db, userId: string): Promise<{ service_points: number; lifetime_points: number; tier: Tier }> {
  const row = await db.selectFrom("reward_balances").select(["service_points", "lifetime_points", "tier"]).where("user_id", "=", userId).executeTakeFirst();
  return row ?? { service_points: 0, lifetime_points: 0, tier: "bronze" };
}

export async function servicePointsOf(db: Db, userId: string): Promise<number> {
  return (await pointsOf(db, userId)).service_points;
}

/** Spends `points` of the user's balance with one conditional UPDATE (never below the cost); the balance left, or undefined when it was short. */
export async function spendPoints(db: Db, userId: string, points: number): Promise<number | undefined> {
  const spent = await db
    .updateTable("reward_balances")
    .set({ service_points: sql<number>`service_points - ${points}`, updated_at: sql<Date>`now()` })
    .where("user_id", "=", userId)
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
