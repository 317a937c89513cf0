import { type Kysely, sql } from "kysely";

// Community (docs/integrators/community.md): posts with likes and comments, discussions with
// replies, challenges with submissions. Counters live on the parent row and move in the transaction
// that adds or removes the child; uniqueness (one like per user and post, one submission per user
// and challenge) is the database's rule. Feed indexes cover the list filters, newest first, over
// posts not removed.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("community_challenges")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("title", "text", (c) => c.notNull())
    .addColumn("theme", "text", (c) => c.notNull())
    .addColumn("prize_pool_cents", "bigint", (c) => c.notNull().check(sql`prize_pool_cents >= 0`))
    .addColumn("starts_at", "timestamptz", (c) => c.notNull())
    .addColumn("deadline", "timestamptz", (c) => c.notNull())
    .addColumn("submissions_count", "integer", (c) => c.notNull().defaultTo(0).check(sql`submissions_count >= 0`))
    .addColumn("winners_named_at", "timestamptz")
    .addColumn("created_by", "text", (c) => c.notNull().references("users.id"))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint("community_challenges_dates", sql`deadline > starts_at`)
    .execute();
  await sql`create index community_challenges_deadline_idx on community_challenges (deadline, id)`.execute(db);

  await db.schema
    .createTable("community_posts")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("type", "text", (c) => c.notNull().check(sql`type in ('artwork_share', 'discussion', 'challenge_submission')`))
    .addColumn("author_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("content", "text", (c) => c.notNull().check(sql`char_length(content) <= 10000`))
    .addColumn("artwork_id", "text", (c) => c.references("artworks.id"))
    .addColumn("tags", sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`).check(sql`cardinality(tags) <= 10`))
    .addColumn("images", "jsonb", (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn("likes_count", "integer", (c) => c.notNull().defaultTo(0).check(sql`likes_count >= 0`))
    .addColumn("comments_count", "integer", (c) => c.notNull().defaultTo(0).check(sql`comments_count >= 0`))
    .addColumn("discussion_id", "text")
    .addColumn("challenge_id", "text", (c) => c.references("community_challenges.id"))
    .addColumn("submission_id", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("removed_at", "timestamptz")
    .addColumn("removed_by", "text", (c) => c.references("users.id"))
    .addColumn("removal_reason", "text")
    .execute();
  await sql`create index community_posts_feed_idx on community_posts (created_at desc, id desc) where removed_at is null`.execute(db);
  await sql`create index community_posts_type_idx on community_posts (type, created_at desc, id desc) where removed_at is null`.execute(db);
  await sql`create index community_posts_author_idx on community_posts (author_id, created_at desc, id desc) where removed_at is null`.execute(db);
  await sql`create index community_posts_tags_idx on community_posts using gin (tags) where removed_at is null`.execute(db);

  await db.schema
    .createTable("community_post_likes")
    .addColumn("post_id", "text", (c) => c.notNull().references("community_posts.id"))
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("community_post_likes_pkey", ["post_id", "user_id"])
    .execute();

  await db.schema
    .createTable("community_comments")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("post_id", "text", (c) => c.notNull().references("community_posts.id"))
    .addColumn("author_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("content", "text", (c) => c.notNull().check(sql`char_length(content) between 1 and 10000`))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`create index community_comments_post_idx on community_comments (post_id, created_at, id)`.execute(db);

  await db.schema
    .createTable("community_discussions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("post_id", "text", (c) => c.notNull().unique().references("community_posts.id"))
    .addColumn("title", "text", (c) => c.notNull())
    .addColumn("author_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("replies_count", "integer", (c) => c.notNull().defaultTo(0).check(sql`replies_count >= 0`))
    .addColumn("last_activity", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("pinned", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("pinned_at", "timestamptz")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`create index community_discussions_recent_idx on community_discussions (pinned desc, last_activity desc, id desc)`.execute(db);

  await db.schema
    .createTable("community_replies")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("discussion_id", "text", (c) => c.notNull().references("community_discussions.id"))
    .addColumn("author_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("content", "text", (c) => c.notNull().check(sql`char_length(content) between 1 and 10000`))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`create index community_replies_discussion_idx on community_replies (discussion_id, created_at, id)`.execute(db);

  await db.schema
    .createTable("community_discussion_activity")
    .addColumn("discussion_id", "text", (c) => c.notNull().references("community_discussions.id"))
    .addColumn("day", "date", (c) => c.notNull())
    .addColumn("events", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("community_discussion_activity_pkey", ["discussion_id", "day"])
    .execute();
  await sql`create index community_discussion_activity_day_idx on community_discussion_activity (day) include (discussion_id, events)`.execute(db);

  await db.schema
    .createTable("community_submissions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("challenge_id", "text", (c) => c.notNull().references("community_challenges.id"))
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("post_id", "text", (c) => c.notNull().unique().references("community_posts.id"))
    .addColumn("artwork_id", "text", (c) => c.references("artworks.id"))
    .addColumn("winner_rank", "integer")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint("community_submissions_one_per_user", ["challenge_id", "user_id"])
    .execute();
  await sql`create index community_submissions_challenge_idx on community_submissions (challenge_id, created_at, id)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ["community_submissions", "community_discussion_activity", "community_replies", "community_discussions", "community_comments", "community_post_likes", "community_posts", "community_challenges"]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
