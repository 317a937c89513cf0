import type { ColumnType, Generated, Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";

export const POST_TYPES = ["artwork_share", "discussion", "challenge_submission"] as const;
export type PostType = (typeof POST_TYPES)[number];

/** An image of a post, kept in the platform's object storage (the artworks' rules). */
export interface PostImage {
  key: string;
  sha256: string;
  content_type: string;
  bytes: number;
}

/**
 * A community post. Discussions and challenge submissions are posts too (type `discussion` with
 * `discussion_id`, `challenge_submission` with `challenge_id`/`submission_id`), so the feed, likes and
 * moderation are one thing. `likes_count` and `comments_count` move in the transaction that adds or
 * removes the like or comment row. Removal is soft: `removed_*` keep the moderation record.
 */
export interface CommunityPostsTable {
  id: string;
  type: PostType;
  author_id: string;
  content: string;
  artwork_id: string | null;
  tags: ColumnType<string[], string[] | undefined, string[]>;
  /** jsonb: PostImage[]; written as JSON text. */
  images: ColumnType<PostImage[], string | undefined, string>;
  likes_count: Generated<number>;
  comments_count: Generated<number>;
  discussion_id: string | null;
  challenge_id: string | null;
  submission_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  removed_at: NullableTimestamp;
  removed_by: string | null;
  removal_reason: string | null;
}

/** One like per user and post: the primary key makes a second like a no-op. */
export interface CommunityPostLikesTable {
  post_id: string;
  user_id: string;
  created_at: Timestamp;
}

export interface CommunityCommentsTable {
  id: string;
  post_id: string;
  author_id: string;
  content: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** A discussion thread; its text, tags and likes are those of its post (`post_id`). */
export interface CommunityDiscussionsTable {
  id: string;
  post_id: string;
  title: string;
  author_id: string;
  replies_count: Generated<number>;
  last_activity: Timestamp;
  pinned: Generated<boolean>;
  pinned_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface CommunityRepliesTable {
  id: string;
  discussion_id: string;
  author_id: string;
  content: string;
  created_at: Timestamp;
}

/**
 * Replies and likes of a discussion per UTC day, kept with them: the `popular` order sums the last
 * 7 days of at most 7 rows per discussion instead of counting every like.
 */
export interface CommunityDiscussionActivityTable {
  discussion_id: string;
  day: ColumnType<string, string, string>;
  events: number;
}

/** A challenge; its status (`upcoming` -> `active` -> `closed`) is computed from the dates when read. */
export interface CommunityChallengesTable {
  id: string;
  title: string;
  theme: string;
  prize_pool_cents: ColumnType<bigint, bigint, bigint>;
  starts_at: ColumnType<Date, Date | string, Date | string>;
  deadline: ColumnType<Date, Date | string, Date | string>;
  submissions_count: Generated<number>;
  winners_named_at: NullableTimestamp;
  created_by: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** One per user and challenge (a unique index); its text and image are those of its post. */
export interface CommunitySubmissionsTable {
  id: string;
  challenge_id: string;
  user_id: string;
  post_id: string;
  artwork_id: string | null;
  /** 1 for the first winner, ...; null otherwise. */
  winner_rank: number | null;
  created_at: Timestamp;
}

export interface CommunityTables {
  community_posts: CommunityPostsTable;
  community_post_likes: CommunityPostLikesTable;
  community_comments: CommunityCommentsTable;
  community_discussions: CommunityDiscussionsTable;
  community_replies: CommunityRepliesTable;
  community_discussion_activity: CommunityDiscussionActivityTable;
  community_challenges: CommunityChallengesTable;
  community_submissions: CommunitySubmissionsTable;
}

export type Post = Selectable<CommunityPostsTable>;
export type Comment = Selectable<CommunityCommentsTable>;
export type Discussion = Selectable<CommunityDiscussionsTable>;
export type Reply = Selectable<CommunityRepliesTable>;
export type Challenge = Selectable<CommunityChallengesTable>;
export type Submission = Selectable<CommunitySubmissionsTable>;
