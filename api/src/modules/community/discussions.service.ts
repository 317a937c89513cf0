import type { Kysely } from "kysely";
import type { Database } from "../../db/database.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import { found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { Actor } from "../../lib/actor.ts";
import type { DiscussionCreate } from "./community.schemas.ts";
import type { Reply } from "./community.tables.ts";
import * as repo from "./discussions.repository.ts";
import type { PostsService } from "./posts.service.ts";

/** Discussions ranked ahead by the `popular` cache. */
const RANKED = 1_000;

/**
 * Discussion threads. Each is also a `discussion` post (its text, tags, likes and moderation): the
 * feed shows it, and removing the post removes the thread.
 */
export class DiscussionsService {
  /** The popular ranking, recomputed at most every RANKING_TTL_MS by this process (see list). */
  private ranking: { at: number; value: Promise<{ ids: string[]; total: number }> } | null = null;

  constructor(private readonly deps: { db: Kysely<Database>; posts: PostsService; popularCacheMs: number }) {}

  create(actor: Actor, input: DiscussionCreate, transact: Transact = transactOn(this.deps.db)) {
    const id = newId("discussion");
    return transact(async (trx) => {
      const post = await this.deps.posts.insertPost(trx, { id: newId("post"), type: "discussion", author_id: actor.userId, content: input.content, tags: input.tags, artwork_id: null, discussion_id: id });
      const created = await repo.insert(trx, { id, post_id: post.id, title: input.title, author_id: actor.userId, last_activity: post.created_at });
      return toDiscussion({ ...created, content: post.content, tags: post.tags, likes_count: post.likes_count });
    });
  }

  /**
   * `popular` pages within the first RANKED discussions come from a ranking this process recomputes
   * at most every COMMUNITY_POPULAR_CACHE_MS (the 7-day sums over every discussion are the expensive part): the
   * order and `total` may lag that long; the rows themselves are read fresh (a removed one drops
   * out). Deeper pages, and `recent`, are read directly.
   */
  async list(order: "recent" | "popular", page: Page) {
    if (order === "popular") {
      const offset = (page.page - 1) * page.limit;
      const ranking = await this.popularRanking();
      if (offset + page.limit <= ranking.ids.length || ranking.ids.length < RANKED) {
        const rows = await repo.byIds(this.deps.db, ranking.ids.slice(offset, offset + page.limit));
        return paginated(rows.map(toDiscussion), page, ranking.total);
      }
    }
    const { rows, total } = await repo.list(this.deps.db, order, page);
    return paginated(rows.map(toDiscussion), page, total);
  }

  private popularRanking(): Promise<{ ids: string[]; total: number }> {
    if (!this.ranking || Date.now() - this.ranking.at >= this.deps.popularCacheMs) {
      const value = repo.popularRanking(this.deps.db, RANKED);
      this.ranking = { at: Date.now(), value };
      value.catch(() => {
        if (this.ranking?.value === value) this.ranking = null;
      });
    }
    return this.ranking.value;
  }

  async get(id: string) {
    return toDiscussion(await this.find(id));
  }

  reply(actor: Actor, id: string, content: string, transact: Transact = transactOn(this.deps.db)) {
    return transact(async (trx) => {
      const discussion = await this.find(id, trx);
      const reply = await repo.insertReply(trx, { id: newId("reply"), discussion_id: discussion.id, author_id: actor.userId, content });
      await repo.addActivity(trx, discussion.id, reply.created_at, 1);
      return toReply(reply);
    });
  }

  async replies(id: string, page: Page) {
    const discussion = await this.find(id);
    const { rows, total } = await repo.listReplies(this.deps.db, discussion.id, page);
    return paginated(rows.map(toReply), page, total);
  }

  /** Admins pin a discussion (listed first in either order) or unpin it. */
  async pin(id: string, pinned: boolean) {
    const discussion = await this.find(id);
    await repo.setPinned(this.deps.db, discussion.id, pinned);
    this.ranking = null; // pinned first: this process shows it at once (others within the cache's life)
    return this.get(discussion.id);
  }

  private async find(id: string, db: Parameters<typeof repo.find>[0] = this.deps.db) {
    return found(isId("discussion", id) ? await repo.find(db, id) : undefined, "Discussion");
  }
}

function toDiscussion(d: repo.DiscussionWithPost) {
  return {
    discussion_id: d.id,
    post_id: d.post_id,
    title: d.title,
    author_id: d.author_id,
    content: d.content,
    tags: d.tags,
    replies_count: d.replies_count,
    likes_count: d.likes_count,
    last_activity: iso(d.last_activity),
    pinned: d.pinned,
    created_at: iso(d.created_at),
  };
}

function toReply(r: Reply) {
  return { reply_id: r.id, discussion_id: r.discussion_id, author_id: r.author_id, content: r.content, created_at: iso(r.created_at) };
}
