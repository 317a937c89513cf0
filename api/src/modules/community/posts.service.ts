import type { Insertable, Kysely } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import type { UploadedFile } from "../../http/multipart.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { checkedImage } from "../../lib/images.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import type { ObjectStorage } from "../../lib/storage.ts";
import { iso } from "../../lib/time.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { Actor } from "../../lib/actor.ts";
import { MAX_POST_IMAGES, type PostCreate, type PostPatch, type PostsQuery } from "./community.schemas.ts";
import type { Comment, CommunityPostsTable, Post, PostImage } from "./community.tables.ts";
import * as discussions from "./discussions.repository.ts";
import * as repo from "./posts.repository.ts";

/**
 * Posts, their likes, comments and images. Counters move in the transaction that adds or removes
 * the like or comment row (the post's row lock orders them), so they stay exact under concurrency.
 */
export class PostsService {
  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      storage: ObjectStorage;
      artworks: ArtworksService;
      links: { baseUrl: string };
    },
  ) {}

  async create(actor: Actor, input: PostCreate, files: UploadedFile[], transact: Transact = transactOn(this.deps.db)) {
    if (input.type === "artwork_share" && input.artwork_id === undefined) {
      throw ApiError.validation([{ field: "artwork_id", code: "required", message: "an artwork_share names the artwork it shares" }]);
    }
    if (input.artwork_id !== undefined) await this.requireVisibleArtwork(input.artwork_id);
    const id = newId("post");
    return this.withImages(id, files, (images) =>
      transact(async (trx) => {
        const created = await this.insertPost(trx, { id, type: input.type, author_id: actor.userId, content: input.content, tags: input.tags, artwork_id: input.artwork_id ?? null, images: JSON.stringify(images) });
        // The answer, not the row: with an Idempotency-Key it is stored as this transaction commits.
        return this.toPost(created, actor);
      }),
    );
  }

  /**
   * Checks every file by the upload rules, stores them (outside the transaction: objects are
   * immutable and named by the new post's id and their SHA-256) and runs `work` with them; they are
   * removed again if `work` fails, so a refused post leaves no object behind.
   */
  async withImages<T>(postId: string, files: UploadedFile[], work: (images: PostImage[]) => Promise<T>): Promise<T> {
    if (files.length > MAX_POST_IMAGES) throw ApiError.validation([{ field: "images", code: "too_many_files", message: `at most ${MAX_POST_IMAGES} images` }]);
    const images = files.map((file) => {
      const type = checkedImage(file);
      return { key: `community/${postId}/${file.sha256}.${type.extension}`, sha256: file.sha256, content_type: type.contentType, bytes: file.bytes.length, body: file.bytes };
    });
    const { storage } = this.deps;
    await Promise.all(images.map((i) => storage.put(i.key, i.body, i.content_type)));
    try {
      return await work(images.map(({ body: _body, ...image }) => image));
    } catch (err) {
      await Promise.all(images.map((i) => storage.delete(i.key).catch(() => {})));
      throw err;
    }
  }

  /**
   * Inserts a post in the caller's transaction, whatever made it (POST /v1/community/posts, a
   * discussion, a challenge submission), with `post.created` for its author: an internal event (no
   * webhook), what rewards earn on (docs/rewards.md: an artwork share or a discussion).
   */
  async insertPost(db: Db, post: Insertable<CommunityPostsTable>): Promise<Post> {
    const created = await repo.insertPost(db, post);
    await recordEvent(db, "post.created", { post_id: created.id, author_id: created.author_id, type: created.type, created_at: iso(created.created_at) }, [created.author_id]);
    return created;
  }

  /** Removes a post in the caller's transaction (a withdrawn submission's). */
  /** Removes a post in the caller's transaction, telling its author (`post.deleted`: what it earned is taken back). */
  async removePost(db: Db, id: string, by: string, reason: string | null): Promise<Post> {
    const removed = await repo.remove(db, id, by, reason);
    await recordEvent(db, "post.deleted", { post_id: removed.id, author_id: removed.author_id, type: removed.type, removed_by: by, reason: reason ?? "The post was deleted", deleted_at: iso(removed.removed_at!) }, [removed.author_id]);
    return removed;
  }

  /** Refuses an artwork that does not exist or is deleted (400); the artwork when it is visible. */
  async requireVisibleArtwork(artworkId: string) {
    const artwork = await this.deps.artworks.findAny(artworkId);
    if (!artwork || artwork.deleted_at) throw ApiError.validation([{ field: "artwork_id", code: "not_found", message: "no such artwork" }]);
    return artwork;
  }

  async list(query: Omit<PostsQuery, "page" | "limit">, page: Page) {
    const { rows, total } = await repo.search(this.deps.db, { type: query.type, authorId: query.author_id, tag: query.tag }, page);
    return paginated(
      rows.map((p) => this.toPost(p, null)),
      page,
      total,
    );
  }

  /** A post; a removed one is 404 to everyone but admins (who see the moderation record). */
  async get(actor: Actor | null, id: string) {
    const post = found(isId("post", id) ? await repo.findAny(this.deps.db, id) : undefined, "Post");
    if (post.removed_at && actor?.role !== "admin") throw ApiError.notFound("Post");
    return this.toPost(post, actor);
  }

  /** The author changes the text or tags (others 403: posts are public, so their existence is no secret). */
  async update(actor: Actor, id: string, patch: PostPatch) {
    return this.deps.db.transaction().execute(async (trx) => {
      const post = await this.lockVisible(trx, id);
      if (post.author_id !== actor.userId) throw ApiError.forbidden("Only the author may edit this post");
      return this.toPost(await repo.update(trx, id, { ...(patch.content !== undefined ? { content: patch.content } : {}), ...(patch.tags !== undefined ? { tags: patch.tags } : {}) }), actor);
    });
  }

  /**
   * The author removes the post, or an admin any post with a reason (kept with the post for
   * moderation). A challenge submission's post goes with its submission (DELETE on the submission).
   */
  async remove(actor: Actor, id: string, reason: string | undefined) {
    return this.deps.db.transaction().execute(async (trx) => {
      const post = await this.lockVisible(trx, id);
      const own = post.author_id === actor.userId;
      if (!own && actor.role !== "admin") throw ApiError.forbidden("Only the author or an admin may remove this post");
      if (!own && !reason) throw ApiError.validation([{ field: "reason", code: "required", message: "an admin removing another's post gives the reason" }]);
      if (post.type === "challenge_submission") {
        throw ApiError.conflict("invalid_state", `This post is a challenge submission: withdraw it with DELETE /v1/community/challenges/${post.challenge_id}/submissions/${post.submission_id}`);
      }
      const removed = await this.removePost(trx, id, actor.userId, reason ?? null);
      return { post_id: removed.id, removed: true, removed_at: iso(removed.removed_at!) };
    });
  }

  /** Likes the post once per user: a repeated like changes nothing (200 either way). */
  like(actor: Actor, id: string, transact: Transact = transactOn(this.deps.db)) {
    return transact(async (trx) => {
      const post = await this.findVisible(trx, id);
      const likedAt = await repo.insertLike(trx, post.id, actor.userId);
      if (!likedAt) return { post_id: post.id, liked: true, likes_count: post.likes_count };
      const updated = await repo.adjustCounts(trx, post.id, { likes: 1 });
      if (post.discussion_id) await discussions.addActivity(trx, post.discussion_id, likedAt, 1);
      return { post_id: post.id, liked: true, likes_count: updated.likes_count };
    });
  }

  /** Takes the user's like back, if any (idempotent). */
  async unlike(actor: Actor, id: string) {
    return this.deps.db.transaction().execute(async (trx) => {
      const post = await this.findVisible(trx, id);
      const likedAt = await repo.deleteLike(trx, post.id, actor.userId);
      if (!likedAt) return { post_id: post.id, liked: false, likes_count: post.likes_count };
      const updated = await repo.adjustCounts(trx, post.id, { likes: -1 });
      if (post.discussion_id) await discussions.addActivity(trx, post.discussion_id, likedAt, -1);
      return { post_id: post.id, liked: false, likes_count: updated.likes_count };
    });
  }

  comment(actor: Actor, postId: string, content: string, transact: Transact = transactOn(this.deps.db)) {
    return transact(async (trx) => {
      const post = await this.findVisible(trx, postId);
      const created = await repo.insertComment(trx, { id: newId("comment"), post_id: post.id, author_id: actor.userId, content });
      await repo.adjustCounts(trx, post.id, { comments: 1 });
      return toComment(created);
    });
  }

  async comments(postId: string, page: Page) {
    const post = await this.findVisible(this.deps.db, postId);
    const { rows, total } = await repo.listComments(this.deps.db, post.id, page);
    return paginated(rows.map(toComment), page, total);
  }

  /** The comment's author edits it (others 403). */
  async updateComment(actor: Actor, id: string, content: string) {
    const comment = await this.findComment(id);
    if (comment.author_id !== actor.userId) throw ApiError.forbidden("Only the author may edit this comment");
    return toComment(await repo.updateComment(this.deps.db, comment.id, content));
  }

  /** The comment's author or an admin deletes it; the post's count moves with it. */
  async deleteComment(actor: Actor, id: string) {
    const comment = await this.findComment(id);
    if (comment.author_id !== actor.userId && actor.role !== "admin") throw ApiError.forbidden("Only the author or an admin may delete this comment");
    await this.deps.db.transaction().execute(async (trx) => {
      // Only the delete that found the row moves the count: of concurrent deletes, the others are 404.
      if (!(await repo.deleteComment(trx, comment.id))) throw ApiError.notFound("Comment");
      await repo.adjustCounts(trx, comment.post_id, { comments: -1 });
    });
  }

  /** The n-th (from 1) image of a post that is not removed. */
  async image(id: string, n: number): Promise<{ body: Buffer; contentType: string; sha256: string }> {
    const post = await this.findVisible(this.deps.db, id);
    const image = found(post.images[n - 1], "Image");
    const object = await this.deps.storage.get(image.key);
    if (!object) throw new Error(`image object ${image.key} of ${post.id} is missing from storage`);
    return { body: object.body, contentType: image.content_type, sha256: image.sha256 };
  }

  imageUrl(postId: string, n: number): string {
    return `${this.deps.links.baseUrl}/v1/community/posts/${postId}/images/${n}`;
  }

  private async findVisible(db: Db, id: string): Promise<Post> {
    const post = isId("post", id) ? await repo.findAny(db, id) : undefined;
    if (!post || post.removed_at) throw ApiError.notFound("Post");
    return post;
  }

  private async lockVisible(trx: Parameters<typeof repo.lock>[0], id: string): Promise<Post> {
    const post = isId("post", id) ? await repo.lock(trx, id) : undefined;
    if (!post || post.removed_at) throw ApiError.notFound("Post");
    return post;
  }

  private async findComment(id: string): Promise<Comment> {
    const comment = found(isId("comment", id) ? await repo.findComment(this.deps.db, id) : undefined, "Comment");
    // A removed post's comments go with it.
    await this.findVisible(this.deps.db, comment.post_id).catch(() => {
      throw ApiError.notFound("Comment");
    });
    return comment;
  }

  toPost(p: Post, viewer: Actor | null) {
    return {
      post_id: p.id,
      type: p.type,
      author_id: p.author_id,
      content: p.content,
      artwork_id: p.artwork_id,
      tags: p.tags,
      images: p.images.map((image, i) => ({ url: this.imageUrl(p.id, i + 1), content_type: image.content_type, bytes: image.bytes, sha256: image.sha256 })),
      likes_count: p.likes_count,
      comments_count: p.comments_count,
      discussion_id: p.discussion_id,
      challenge_id: p.challenge_id,
      submission_id: p.submission_id,
      created_at: iso(p.created_at),
      updated_at: iso(p.updated_at),
      ...(p.removed_at && viewer?.role === "admin" ? { removal: { removed_at: iso(p.removed_at), removed_by: p.removed_by, reason: p.removal_reason } } : {}),
    };
  }
}

function toComment(c: Comment) {
  return { comment_id: c.id, post_id: c.post_id, author_id: c.author_id, content: c.content, created_at: iso(c.created_at), updated_at: iso(c.updated_at) };
}
