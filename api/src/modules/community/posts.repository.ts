import { type Insertable, sql, type Transaction } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import { type Page, paginate } from "../../lib/pagination.ts";
import type { Comment, CommunityCommentsTable, CommunityPostsTable, Post, PostType } from "./community.tables.ts";

export interface PostFilter {
  type?: PostType;
  authorId?: string;
  tag?: string;
}

export function insertPost(db: Db, post: Insertable<CommunityPostsTable>): Promise<Post> {
  return db.insertInto("community_posts").values(post).returningAll().executeTakeFirstOrThrow();
}

/** A post, removed or not (the caller decides who may see a removed one). */
export function findAny(db: Db, id: string): Promise<Post | undefined> {
  return db.selectFrom("community_posts").selectAll().where("id", "=", id).executeTakeFirst();
}

/** Row lock for a change decided on the current state; only inside a transaction the service opened. */
export function lock(trx: Transaction<Database>, id: string): Promise<Post | undefined> {
  return trx.selectFrom("community_posts").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
}

export function update(db: Db, id: string, patch: { content?: string; tags?: string[] }): Promise<Post> {
  return db
    .updateTable("community_posts")
    .set({ ...patch, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function remove(db: Db, id: string, by: string, reason: string | null): Promise<Post> {
  return db
    .updateTable("community_posts")
    .set({ removed_at: sql<Date>`now()`, removed_by: by, removal_reason: reason, updated_at: sql<Date>`now()` })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Posts not removed, newest first; each filter has an index (tags: GIN), all partial on `removed_at is null`. */
export function search(db: Db, filter: PostFilter, page: Page): Promise<{ rows: Post[]; total: number }> {
  let query = db.selectFrom("community_posts").where("removed_at", "is", null);
  if (filter.type) query = query.where("type", "=", filter.type);
  if (filter.authorId) query = query.where("author_id", "=", filter.authorId);
  if (filter.tag) query = query.where("tags", "@>", sql<string[]>`array[${filter.tag}]::text[]`);
  return paginate(query, page, (q) => q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"));
}

/** Adds the like unless the user has one; when it was added, when (else undefined). Waits for a concurrent same like's commit. */
export async function insertLike(db: Db, postId: string, userId: string): Promise<Date | undefined> {
  const row = await db.insertInto("community_post_likes").values({ post_id: postId, user_id: userId }).onConflict((oc) => oc.columns(["post_id", "user_id"]).doNothing()).returning("created_at").executeTakeFirst();
  return row?.created_at;
}

/** Removes the user's like; when it had been made (undefined: there was none). */
export async function deleteLike(db: Db, postId: string, userId: string): Promise<Date | undefined> {
  const row = await db.deleteFrom("community_post_likes").where("post_id", "=", postId).where("user_id", "=", userId).returning("created_at").executeTakeFirst();
  return row?.created_at;
}

/** Moves a counter of the post by `delta` in the caller's transaction (the row lock orders concurrent moves); the post after. */
export function adjustCounts(db: Db, postId: string, delta: { likes?: number; comments?: number }): Promise<Post> {
  return db
    .updateTable("community_posts")
    .set((eb) => ({ likes_count: eb("likes_count", "+", delta.likes ?? 0), comments_count: eb("comments_count", "+", delta.comments ?? 0) }))
    .where("id", "=", postId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function insertComment(db: Db, comment: Insertable<CommunityCommentsTable>): Promise<Comment> {
  return db.insertInto("community_comments").values(comment).returningAll().executeTakeFirstOrThrow();
}

export function findComment(db: Db, id: string): Promise<Comment | undefined> {
  return db.selectFrom("community_comments").selectAll().where("id", "=", id).executeTakeFirst();
}

export function updateComment(db: Db, id: string, content: string): Promise<Comment> {
  return db.updateTable("community_comments").set({ content, updated_at: sql<Date>`now()` }).where("id", "=", id).returningAll().executeTakeFirstOrThrow();
}

export function deleteComment(db: Db, id: string): Promise<Comment | undefined> {
  return db.deleteFrom("community_comments").where("id", "=", id).returningAll().executeTakeFirst();
}

export function listComments(db: Db, postId: string, page: Page): Promise<{ rows: Comment[]; total: number }> {
  return paginate(db.selectFrom("community_comments").where("post_id", "=", postId), page, (q) => q.selectAll().orderBy("created_at", "asc").orderBy("id", "asc"));
}
