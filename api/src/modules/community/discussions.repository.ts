import { type Insertable, type SelectQueryBuilder, sql } from "kysely";
import type { Db } from "../../db/database.ts";
import { type Page, paginate } from "../../lib/pagination.ts";
import type { CommunityDiscussionsTable, CommunityRepliesTable, Discussion, Reply } from "./community.tables.ts";

/** A discussion with its post's text, tags and likes. */
export type DiscussionWithPost = Discussion & { content: string; tags: string[]; likes_count: number };

/** The window of the `popular` order. */
export const POPULAR_WINDOW_DAYS = 7;

export function insert(db: Db, discussion: Insertable<CommunityDiscussionsTable>): Promise<Discussion> {
  return db.insertInto("community_discussions").values(discussion).returningAll().executeTakeFirstOrThrow();
}

/** Discussions whose post is not removed (removing the post removes the discussion). */
function visible(db: Db) {
  return db.selectFrom("community_discussions as d").innerJoin("community_posts as p", "p.id", "d.post_id").where("p.removed_at", "is", null);
}

export function find(db: Db, id: string): Promise<DiscussionWithPost | undefined> {
  return visible(db).selectAll("d").select(["p.content", "p.tags", "p.likes_count"]).where("d.id", "=", id).executeTakeFirst();
}

/** Pinned first, then `popular`: replies and likes of the last 7 days (the per-day activity rows), ties by last activity. */
function popularOrder<Q>(query: Q): Q {
  // Any selection over `visible` (typed by the caller); the joined `a` stays inside the ORDER BY.
  const q = query as unknown as SelectQueryBuilder<any, any, any>;
  return q
    .leftJoin(
      (eb) =>
        eb
          .selectFrom("community_discussion_activity")
          .select(["discussion_id", sql<number>`sum(events)`.as("score")])
          .where("day", ">", sql<string>`(now() at time zone 'utc')::date - ${POPULAR_WINDOW_DAYS}::int`)
          .groupBy("discussion_id")
          .as("a"),
      (join) => join.onRef("a.discussion_id", "=", "d.id"),
    )
    .orderBy("d.pinned", "desc")
    .orderBy(sql`coalesce(a.score, 0)`, "desc")
    .orderBy("d.last_activity", "desc")
    .orderBy("d.id", "desc") as unknown as Q;
}

/** Pinned first, then `recent` (last activity) or `popular` (popularOrder). */
export function list(db: Db, order: "recent" | "popular", page: Page): Promise<{ rows: DiscussionWithPost[]; total: number }> {
  return paginate(visible(db), page, (q) => {
    const rows = q.selectAll("d").select(["p.content", "p.tags", "p.likes_count"]);
    if (order === "recent") return rows.orderBy("d.pinned", "desc").orderBy("d.last_activity", "desc").orderBy("d.id", "desc");
    return popularOrder(rows);
  });
}

/** The ids of the first `limit` visible discussions in the popular order, and how many are visible. */
export async function popularRanking(db: Db, limit: number): Promise<{ ids: string[]; total: number }> {
  const [ranked, count] = await Promise.all([
    popularOrder(visible(db).select("d.id")).limit(limit).execute(),
    visible(db).select(sql<string>`count(*)`.as("n")).executeTakeFirstOrThrow(),
  ]);
  return { ids: ranked.map((r) => r.id), total: Number(count.n) };
}

/** Visible discussions by id, in the order of `ids` (a removed one is left out). */
export async function byIds(db: Db, ids: readonly string[]): Promise<DiscussionWithPost[]> {
  if (ids.length === 0) return [];
  const rows = await visible(db).selectAll("d").select(["p.content", "p.tags", "p.likes_count"]).where("d.id", "in", [...ids]).execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** Counts `delta` replies or likes for the discussion on the UTC day of `at` (a like undone counts back on its own day). */
export async function addActivity(db: Db, discussionId: string, at: Date, delta: number): Promise<void> {
  const day = at.toISOString().slice(0, 10);
  await db
    .insertInto("community_discussion_activity")
    .values({ discussion_id: discussionId, day, events: delta })
    .onConflict((oc) => oc.columns(["discussion_id", "day"]).doUpdateSet((eb) => ({ events: eb("community_discussion_activity.events", "+", delta) })))
    .execute();
}

/** Inserts the reply and moves the discussion's count and last activity in the same transaction. */
export async function insertReply(db: Db, reply: Insertable<CommunityRepliesTable>): Promise<Reply> {
  const created = await db.insertInto("community_replies").values(reply).returningAll().executeTakeFirstOrThrow();
  await db
    .updateTable("community_discussions")
    .set((eb) => ({ replies_count: eb("replies_count", "+", 1), last_activity: created.created_at }))
    .where("id", "=", created.discussion_id)
    .execute();
  return created;
}

export function listReplies(db: Db, discussionId: string, page: Page): Promise<{ rows: Reply[]; total: number }> {
  return paginate(db.selectFrom("community_replies").where("discussion_id", "=", discussionId), page, (q) => q.selectAll().orderBy("created_at", "asc").orderBy("id", "asc"));
}

export async function setPinned(db: Db, id: string, pinned: boolean): Promise<void> {
  await db
    .updateTable("community_discussions")
    .set({ pinned, pinned_at: pinned ? sql<Date>`now()` : null })
    .where("id", "=", id)
    .execute();
}
