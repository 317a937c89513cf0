import { MAX_IMAGE_BYTES } from "../../lib/images.ts";
import { usdAmount, usdValue } from "../../lib/money.ts";
import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { exampleId, idOf, idParam, instant, plainString, text, timestamp } from "../../lib/schema.ts";
import { z } from "../../openapi/zod.ts";
import { POST_TYPES, type PostType } from "./community.tables.ts";

export const MAX_POST_IMAGES = 4;
export const CHALLENGE_STATUSES = ["upcoming", "active", "closed"] as const;
export type ChallengeStatus = (typeof CHALLENGE_STATUSES)[number];

/** The reference's short filter values, and the full type names (`artwork` is `artwork_share`). */
const TYPE_ALIASES: Record<string, PostType> = { artwork: "artwork_share", challenge: "challenge_submission" };
const postTypeFilter = z
  .enum(["artwork", "discussion", "challenge", ...POST_TYPES])
  .transform((v) => TYPE_ALIASES[v] ?? (v as PostType))
  .openapi({ description: "artwork (= artwork_share), discussion, challenge (= challenge_submission), or the full names" });

// Stored exactly as given (never trimmed or rendered as HTML); control characters other than newline and tab are refused.
const content = plainString({ min: 1, max: 10_000, multiline: true }).openapi({ description: "Up to 10,000 characters, stored as given (plain text, never rendered as HTML)" });
const tags = z.array(plainString({ min: 1, max: 32 })).max(10).openapi({ description: "Up to 10 tags of 1..32 characters", example: ["landscape", "oil"] });
const artworkRef = plainString({ min: 1, max: 64 }).openapi({ example: exampleId("artwork") });

export const postIdParams = z.object({ id: idParam("post") });
export const postImageParams = z.object({ id: idParam("post"), n: z.coerce.number().int().min(1).max(MAX_POST_IMAGES).openapi({ param: { name: "n", in: "path", description: `The image's position among the post's images, 1..${MAX_POST_IMAGES}` }, example: 1 }) });
export const commentIdParams = z.object({ id: idParam("comment") });
export const discussionIdParams = z.object({ id: idParam("discussion") });
export const challengeIdParams = z.object({ id: idParam("challenge") });
export const submissionIdParams = z.object({ id: idParam("challenge"), submission_id: idParam("submission", "submission_id") });

export const postCreateSchema = z
  .strictObject({
    type: z
      .enum(["artwork_share", "artwork", "discussion"])
      .transform((v) => (v === "artwork" ? "artwork_share" : v))
      .openapi({ description: "artwork_share (or artwork) with an artwork_id, or discussion; challenge submissions are made under the challenge" }),
    content,
    tags: tags.default([]),
    artwork_id: artworkRef.optional().openapi({ description: "Required for artwork_share: an artwork that is not deleted" }),
  })
  .openapi("PostCreate", {
    example: { type: "artwork_share", content: "Finished this one last night: the harbour before the ferries start.", tags: ["landscape", "oil"], artwork_id: exampleId("artwork") },
  });
export type PostCreate = z.infer<typeof postCreateSchema>;

export const postCreateFormSchema = z
  .object({
    type: z.string(),
    content: z.string(),
    tags: z
      .array(z.string())
      .optional()
      .openapi({ description: 'One part per tag (tags=studio, tags=process: the form encoding of an array), or one part holding a JSON array (["studio","process"]), or parts tags[0], tags[1], ...' }),
    artwork_id: z.string().optional(),
    images: z.array(z.string().openapi({ type: "string", format: "binary" })).max(MAX_POST_IMAGES).optional().openapi({
      description: `Up to ${MAX_POST_IMAGES} parts named images: JPEG, PNG, WebP or GIF (checked by content), up to ${MAX_IMAGE_BYTES / 1024 / 1024} MiB each`,
    }),
  })
  .openapi("PostCreateForm", { example: { type: "discussion", content: "Studio corner, week 12.", tags: ["studio", "process"] } });

/**
 * Text parts -> the JSON body: `tags` as repeated parts (the list), one part (a JSON array when it
 * starts with `[`, else the one tag) or `tags[0]`, `tags[1]`... parts (bad JSON stays text and fails
 * validation, which names the field).
 */
export function postFormToBody(fields: Record<string, unknown>): unknown {
  const body: Record<string, unknown> = { ...fields };
  if (typeof body.tags === "string") {
    if (!body.tags.trimStart().startsWith("[")) body.tags = [body.tags];
    else {
      try {
        body.tags = JSON.parse(body.tags);
      } catch {
        // left as text: validation names the field
      }
    }
  } else if (Array.isArray(body.tags)) {
    // Repeated parts: the list as sent.
  } else if (typeof body.tags === "object" && body.tags !== null) {
    body.tags = Object.entries(body.tags as Record<string, unknown>)
      .sort(([a], [b]) => Number(a) - Number(b))
      .map(([, v]) => v);
  }
  return body;
}

export const postPatchSchema = z
  .strictObject({ content: content.optional(), tags: tags.optional() })
  .refine((v) => v.content !== undefined || v.tags !== undefined, { message: "send content or tags" })
  .openapi("PostPatch", { minProperties: 1, example: { content: "Finished this one last night (edit: varnished today).", tags: ["landscape", "oil", "varnish"] } });
export type PostPatch = z.infer<typeof postPatchSchema>;

export const removalSchema = z
  .strictObject({ reason: text({ max: 1000, multiline: true }).optional().openapi({ description: "Why (kept for moderation); required when an admin removes another's post" }) })
  .openapi("PostRemoval", { example: { reason: "Posted to the wrong thread" } });

const imageSchema = z.object({ url: z.string(), content_type: z.string(), bytes: z.number().int(), sha256: z.string() });

export const postSchema = z
  .object({
    post_id: idOf("post"),
    type: z.enum(POST_TYPES),
    author_id: idOf("user"),
    content: z.string(),
    artwork_id: idOf("artwork").nullable(),
    tags: z.array(z.string()),
    images: z.array(imageSchema),
    likes_count: z.number().int(),
    comments_count: z.number().int(),
    discussion_id: idOf("discussion").nullable(),
    challenge_id: idOf("challenge").nullable(),
    submission_id: idOf("submission").nullable(),
    created_at: timestamp,
    updated_at: timestamp,
    removal: z.object({ removed_at: timestamp, removed_by: z.string().nullable(), reason: z.string().nullable() }).optional().openapi({ description: "Admins only, on a removed post" }),
  })
  .openapi("Post");

export const postsQuery = z.object({
  type: postTypeFilter.optional(),
  author_id: plainString({ max: 64 }).optional(),
  tag: plainString({ min: 1, max: 32 }).optional().openapi({ description: "Posts carrying this tag (exact)" }),
  ...paginationQuery(),
});
export type PostsQuery = z.infer<typeof postsQuery>;

export const postListSchema = z.object({ data: z.array(postSchema), pagination: paginationSchema }).openapi("PostList");

export const likeSchema = z.object({ post_id: idOf("post"), liked: z.boolean(), likes_count: z.number().int() }).openapi("PostLike");

export const commentCreateSchema = z.strictObject({ content }).openapi("CommentCreate", { example: { content: "The light on the water is wonderful." } });
export const commentSchema = z
  .object({ comment_id: idOf("comment"), post_id: idOf("post"), author_id: idOf("user"), content: z.string(), created_at: timestamp, updated_at: timestamp })
  .openapi("Comment");
export const commentListSchema = z.object({ data: z.array(commentSchema), pagination: paginationSchema }).openapi("CommentList");
export const pageQuery = z.object({ ...paginationQuery() });

export const discussionCreateSchema = z
  .strictObject({ title: text({ max: 200 }), content, tags: tags.default([]) })
  .openapi("DiscussionCreate", { example: { title: "Varnish: gloss or satin?", content: "Which finish do you use on oil landscapes, and why?", tags: ["technique", "oil"] } });
export type DiscussionCreate = z.infer<typeof discussionCreateSchema>;

export const discussionSchema = z
  .object({
    discussion_id: idOf("discussion"),
    post_id: idOf("post"),
    title: z.string(),
    author_id: idOf("user"),
    content: z.string(),
    tags: z.array(z.string()),
    replies_count: z.number().int(),
    likes_count: z.number().int().openapi({ description: "Likes of its post (POST /v1/community/posts/{post_id}/like)" }),
    last_activity: timestamp,
    pinned: z.boolean(),
    created_at: timestamp,
  })
  .openapi("Discussion");

export const discussionsQuery = z.object({
  order: z.enum(["recent", "popular"]).default("recent").openapi({ description: "recent (default): last activity first; popular: replies and likes of the last 7 days. Pinned ones first either way." }),
  ...paginationQuery(),
});
export const discussionListSchema = z.object({ data: z.array(discussionSchema), pagination: paginationSchema }).openapi("DiscussionList");

export const replyCreateSchema = z.strictObject({ content }).openapi("ReplyCreate", { example: { content: "Satin: gloss glares under gallery lights." } });
export const replySchema = z.object({ reply_id: idOf("reply"), discussion_id: idOf("discussion"), author_id: idOf("user"), content: z.string(), created_at: timestamp }).openapi("Reply");
export const replyListSchema = z.object({ data: z.array(replySchema), pagination: paginationSchema }).openapi("ReplyList");

const challengeFields = {
  title: text({ max: 200 }),
  theme: text({ max: 5_000, multiline: true }),
  prize_pool_usd: usdAmount,
  starts_at: instant,
  deadline: instant,
};
export const challengeCreateSchema = z
  .strictObject(challengeFields)
  .refine((v) => v.deadline > v.starts_at, { message: "must be after starts_at", path: ["deadline"] })
  .openapi("ChallengeCreate", {
    example: { title: "Winter Light", theme: "Paint the shortest day of the year.", prize_pool_usd: 2500, starts_at: "2026-12-01T00:00:00Z", deadline: "2026-12-21T23:59:59Z" },
  });
export type ChallengeCreate = z.infer<typeof challengeCreateSchema>;

export const challengePatchSchema = z
  .strictObject({
    title: challengeFields.title.optional(),
    theme: challengeFields.theme.optional(),
    prize_pool_usd: usdAmount.optional(),
    starts_at: instant.optional(),
    deadline: instant.optional(),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { message: "send at least one field" })
  .openapi("ChallengePatch", { minProperties: 1, example: { prize_pool_usd: 3000, deadline: "2026-12-28T23:59:59Z" } });
export type ChallengePatch = z.infer<typeof challengePatchSchema>;

export const challengeSchema = z
  .object({
    challenge_id: idOf("challenge"),
    title: z.string(),
    theme: z.string(),
    prize_pool_usd: usdValue,
    submissions_count: z.number().int(),
    starts_at: timestamp,
    deadline: timestamp,
    status: z.enum(CHALLENGE_STATUSES).openapi({ description: "From the dates, when read: upcoming before starts_at, active until deadline, then closed" }),
    winners: z.array(idOf("submission")).openapi({ description: "Submission ids, first place first; empty until named" }),
    created_at: timestamp,
  })
  .openapi("Challenge");

export const challengesQuery = z.object({
  status: z.enum(CHALLENGE_STATUSES).optional().openapi({ description: "Default: active and upcoming" }),
  ...paginationQuery(),
});
export const challengeListSchema = z.object({ data: z.array(challengeSchema), pagination: paginationSchema }).openapi("ChallengeList");

export const submissionCreateSchema = z
  .strictObject({
    artwork_id: artworkRef.optional().openapi({ description: "One of your own artworks (you are its artist)" }),
    content: content.optional(),
  })
  .openapi("SubmissionCreate", { example: { artwork_id: exampleId("artwork"), content: "Painted on the solstice, 3:40 pm." } });
export type SubmissionCreate = z.infer<typeof submissionCreateSchema>;

export const submissionCreateFormSchema = z
  .object({
    image: z.string().optional().openapi({ type: "string", format: "binary", description: `JPEG, PNG, WebP or GIF (checked by content), up to ${MAX_IMAGE_BYTES / 1024 / 1024} MiB` }),
    artwork_id: z.string().optional(),
    content: z.string().optional(),
  })
  .openapi("SubmissionCreateForm", { example: { content: "Painted on the solstice, 3:40 pm." } });

export const submissionSchema = z
  .object({
    submission_id: idOf("submission"),
    challenge_id: idOf("challenge"),
    user_id: idOf("user"),
    post_id: idOf("post"),
    artwork_id: idOf("artwork").nullable(),
    content: z.string().nullable(),
    image_url: z.string().nullable(),
    winner_rank: z.number().int().nullable(),
    created_at: timestamp,
  })
  .openapi("Submission");
export const submissionListSchema = z.object({ data: z.array(submissionSchema), pagination: paginationSchema }).openapi("SubmissionList");

export const winnersSchema = z
  .strictObject({ submission_ids: z.array(plainString({ min: 1, max: 64 })).min(1).max(10).refine((ids) => new Set(ids).size === ids.length, { message: "must not repeat" }) })
  .openapi("ChallengeWinners", { example: { submission_ids: [exampleId("submission")] } });
