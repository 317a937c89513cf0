import { type ApiRouter, Reply } from "../../http/route.ts";
import { MAX_IMAGE_BYTES } from "../../lib/images.ts";
import { z } from "../../openapi/zod.ts";
import type { ChallengesService } from "./challenges.service.ts";
import * as s from "./community.schemas.ts";
import type { DiscussionsService } from "./discussions.service.ts";
import type { PostsService } from "./posts.service.ts";

const tags = ["Community"];
const write = { scope: "community:write" } as const;
const admin = { scope: "admin:write", roles: ["admin"] } as const;
const actorOf = (auth: { userId: string; role: "collector" | "artist" | "admin" }) => ({ userId: auth.userId, role: auth.role });
const deletedSchema = z.object({ post_id: z.string(), removed: z.literal(true), removed_at: z.string() });
const TEXT_RULES = "Text is stored exactly as given and is never rendered as HTML by the API; control characters other than newline and tab are refused (400).";

export function registerCommunityRoutes(api: ApiRouter, { posts, discussions, challenges }: { posts: PostsService; discussions: DiscussionsService; challenges: ChallengesService }): void {
  // ---- posts ----
  api.route({
    method: "post",
    path: "/v1/community/posts",
    operationId: "createPost",
    summary: "Create a post",
    description: [
      "`artwork_share` (or `artwork`) with the `artwork_id` of an artwork that is not deleted (else 400), or `discussion`. Content up to 10,000 characters; up to 10 tags of up to 32. " + TEXT_RULES,
      `JSON, or \`multipart/form-data\` with up to ${s.MAX_POST_IMAGES} file parts named \`images\` (JPEG, PNG, WebP or GIF recognized by content, up to ${MAX_IMAGE_BYTES / 1024 / 1024} MiB each: 415 for other types, 413 above, 400 for a fifth) and the other fields as text parts (\`tags\` as a JSON array or \`tags[0]\`, \`tags[1]\`, ...).`,
    ].join("\n\n"),
    tags,
    auth: write,
    body: s.postCreateSchema,
    multipart: { fileField: "images", maxFiles: s.MAX_POST_IMAGES, maxFileBytes: MAX_IMAGE_BYTES, toBody: s.postFormToBody, schema: s.postCreateFormSchema },
    status: 201,
    response: s.postSchema,
    handler: ({ auth, body, files, transaction }) => posts.create(actorOf(auth), body, files, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/community/posts",
    operationId: "listPosts",
    summary: "List posts",
    description: "Newest first, removed posts left out. Filters: `type` (artwork, discussion, challenge, or the full type names), `author_id`, `tag` (exact).",
    tags,
    auth: { public: true },
    query: s.postsQuery,
    response: s.postListSchema,
    handler: ({ query }) => {
      const { page, limit, ...filter } = query;
      return posts.list(filter, { page, limit });
    },
  });

  api.route({
    method: "get",
    path: "/v1/community/posts/:id",
    operationId: "getPost",
    summary: "A post",
    description: "A removed post is 404, except to admins (who see its `removal`).",
    tags,
    auth: { public: true },
    params: s.postIdParams,
    errors: [404],
    response: s.postSchema,
    handler: ({ auth, params }) => posts.get(auth ? actorOf(auth) : null, params.id),
  });

  api.route({
    method: "patch",
    path: "/v1/community/posts/:id",
    operationId: "updatePost",
    summary: "Edit a post",
    description: "The author only (others 403). `content` and/or `tags`. " + TEXT_RULES,
    tags,
    auth: write,
    params: s.postIdParams,
    body: s.postPatchSchema,
    errors: [404],
    response: s.postSchema,
    handler: ({ auth, params, body }) => posts.update(actorOf(auth), params.id, body),
  });

  api.route({
    method: "delete",
    path: "/v1/community/posts/:id",
    operationId: "removePost",
    summary: "Remove a post",
    description:
      "The author, or an admin with a `reason` (kept with the post for moderation). The post is then 404 to everyone but admins; a discussion's post takes the discussion with it. A challenge submission's post is removed by withdrawing the submission (409 here).",
    tags,
    auth: write,
    params: s.postIdParams,
    body: s.removalSchema,
    errors: [404, 409],
    response: deletedSchema,
    handler: ({ auth, params, body }) => posts.remove(actorOf(auth), params.id, body.reason),
  });

  api.route({
    method: "get",
    path: "/v1/community/posts/:id/images/:n",
    operationId: "getPostImage",
    summary: "An image of a post",
    description: "The n-th image (from 1), as uploaded.",
    tags,
    auth: { public: true },
    params: s.postImageParams,
    errors: [404],
    produces: "image/*",
    response: z.string().openapi({ type: "string", format: "binary" }),
    handler: async ({ params }) => {
      const image = await posts.image(params.id, params.n);
      return new Reply(200, image.body, {
        contentType: image.contentType,
        headers: { "Cache-Control": "public, max-age=31536000, immutable", ETag: `"${image.sha256}"`, "X-Content-Type-Options": "nosniff", "Content-Security-Policy": "default-src 'none'" },
      });
    },
  });

  api.route({
    method: "post",
    path: "/v1/community/posts/:id/like",
    operationId: "likePost",
    summary: "Like a post",
    description: "One like per user: liking again changes nothing (200 either way). `likes_count` is exact under concurrency.",
    tags,
    auth: write,
    params: s.postIdParams,
    errors: [404],
    response: s.likeSchema,
    handler: ({ auth, params, transaction }) => posts.like(actorOf(auth), params.id, transaction),
  });

  api.route({
    method: "delete",
    path: "/v1/community/posts/:id/like",
    operationId: "unlikePost",
    summary: "Take a like back",
    description: "Idempotent: without a like, nothing changes.",
    tags,
    auth: write,
    params: s.postIdParams,
    errors: [404],
    response: s.likeSchema,
    handler: ({ auth, params }) => posts.unlike(actorOf(auth), params.id),
  });

  api.route({
    method: "get",
    path: "/v1/community/posts/:id/comments",
    operationId: "listComments",
    summary: "Comments of a post",
    description: "Oldest first.",
    tags,
    auth: { public: true },
    params: s.postIdParams,
    query: s.pageQuery,
    errors: [404],
    response: s.commentListSchema,
    handler: ({ params, query }) => posts.comments(params.id, query),
  });

  api.route({
    method: "post",
    path: "/v1/community/posts/:id/comments",
    operationId: "createComment",
    summary: "Comment on a post",
    description: TEXT_RULES,
    tags,
    auth: write,
    params: s.postIdParams,
    body: s.commentCreateSchema,
    errors: [404],
    status: 201,
    response: s.commentSchema,
    handler: ({ auth, params, body, transaction }) => posts.comment(actorOf(auth), params.id, body.content, transaction),
  });

  api.route({
    method: "patch",
    path: "/v1/community/comments/:id",
    operationId: "updateComment",
    summary: "Edit a comment",
    description: "The author only (others 403).",
    tags,
    auth: write,
    params: s.commentIdParams,
    body: s.commentCreateSchema,
    errors: [404],
    response: s.commentSchema,
    handler: ({ auth, params, body }) => posts.updateComment(actorOf(auth), params.id, body.content),
  });

  api.route({
    method: "delete",
    path: "/v1/community/comments/:id",
    operationId: "deleteComment",
    summary: "Delete a comment",
    description: "The author or an admin (others 403).",
    tags,
    auth: write,
    params: s.commentIdParams,
    errors: [404],
    status: 204,
    response: null,
    handler: async ({ auth, params }) => {
      await posts.deleteComment(actorOf(auth), params.id);
      return undefined;
    },
  });

  // ---- discussions ----
  api.route({
    method: "post",
    path: "/v1/community/discussions",
    operationId: "createDiscussion",
    summary: "Start a discussion",
    description: "Also listed as a `discussion` post (`post_id`): like it there; removing that post removes the discussion. " + TEXT_RULES,
    tags,
    auth: write,
    body: s.discussionCreateSchema,
    status: 201,
    response: s.discussionSchema,
    handler: ({ auth, body, transaction }) => discussions.create(actorOf(auth), body, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/community/discussions",
    operationId: "listDiscussions",
    summary: "List discussions",
    description:
      "Pinned first. `order=recent` (default): latest activity (creation or reply) first. `order=popular`: most replies plus likes in the last 7 days (UTC days) first, then latest activity.",
    tags,
    auth: { public: true },
    query: s.discussionsQuery,
    response: s.discussionListSchema,
    handler: ({ query }) => discussions.list(query.order, query),
  });

  api.route({
    method: "get",
    path: "/v1/community/discussions/:id",
    operationId: "getDiscussion",
    summary: "A discussion",
    tags,
    auth: { public: true },
    params: s.discussionIdParams,
    errors: [404],
    response: s.discussionSchema,
    handler: ({ params }) => discussions.get(params.id),
  });

  api.route({
    method: "get",
    path: "/v1/community/discussions/:id/replies",
    operationId: "listReplies",
    summary: "Replies of a discussion",
    description: "Oldest first.",
    tags,
    auth: { public: true },
    params: s.discussionIdParams,
    query: s.pageQuery,
    errors: [404],
    response: s.replyListSchema,
    handler: ({ params, query }) => discussions.replies(params.id, query),
  });

  api.route({
    method: "post",
    path: "/v1/community/discussions/:id/replies",
    operationId: "createReply",
    summary: "Reply to a discussion",
    description: "Moves `replies_count` and `last_activity`. " + TEXT_RULES,
    tags,
    auth: write,
    params: s.discussionIdParams,
    body: s.replyCreateSchema,
    errors: [404],
    status: 201,
    response: s.replySchema,
    handler: ({ auth, params, body, transaction }) => discussions.reply(actorOf(auth), params.id, body.content, transaction),
  });

  for (const pinned of [true, false]) {
    api.route({
      method: pinned ? "post" : "delete",
      path: "/v1/community/discussions/:id/pin",
      operationId: pinned ? "pinDiscussion" : "unpinDiscussion",
      summary: pinned ? "Pin a discussion (admin)" : "Unpin a discussion (admin)",
      description: "Pinned discussions come first in both orders.",
      tags,
      auth: admin,
      params: s.discussionIdParams,
      errors: [404],
      response: s.discussionSchema,
      handler: ({ params }) => discussions.pin(params.id, pinned),
    });
  }

  // ---- challenges ----
  api.route({
    method: "post",
    path: "/v1/community/challenges",
    operationId: "createChallenge",
    summary: "Create a challenge (admin)",
    description: "`deadline` after `starts_at` and in the future. Status follows the dates: upcoming, active, closed.",
    tags,
    auth: admin,
    body: s.challengeCreateSchema,
    status: 201,
    response: s.challengeSchema,
    handler: ({ auth, body, transaction }) => challenges.create(actorOf(auth), body, transaction),
  });

  api.route({
    method: "patch",
    path: "/v1/community/challenges/:id",
    operationId: "updateChallenge",
    summary: "Edit a challenge before it starts (admin)",
    description: "Once it has started: 409 `invalid_state`.",
    tags,
    auth: admin,
    params: s.challengeIdParams,
    body: s.challengePatchSchema,
    errors: [404, 409],
    response: s.challengeSchema,
    handler: ({ params, body }) => challenges.update(params.id, body),
  });

  api.route({
    method: "get",
    path: "/v1/community/challenges",
    operationId: "listChallenges",
    summary: "List challenges",
    description: "Active and upcoming ones by default, ending soonest first; `status=closed` lists closed ones, latest first.",
    tags,
    auth: { public: true },
    query: s.challengesQuery,
    response: s.challengeListSchema,
    handler: ({ query }) => challenges.list(query.status, query),
  });

  api.route({
    method: "get",
    path: "/v1/community/challenges/:id",
    operationId: "getChallenge",
    summary: "A challenge",
    tags,
    auth: { public: true },
    params: s.challengeIdParams,
    errors: [404],
    response: s.challengeSchema,
    handler: ({ params }) => challenges.get(params.id),
  });

  api.route({
    method: "get",
    path: "/v1/community/challenges/:id/submissions",
    operationId: "listSubmissions",
    summary: "Submissions to a challenge",
    description: "Oldest first.",
    tags,
    auth: { public: true },
    params: s.challengeIdParams,
    query: s.pageQuery,
    errors: [404],
    response: s.submissionListSchema,
    handler: ({ params, query }) => challenges.submissions(params.id, query),
  });

  api.route({
    method: "post",
    path: "/v1/community/challenges/:id/submissions",
    operationId: "createSubmission",
    summary: "Join a challenge",
    description: [
      "`{artwork_id?, content?}` by JSON, or `multipart/form-data` with an `image` part (and those fields as text parts): at least one of them. The artwork must be your own (you are its artist: else 403).",
      "One submission per user and challenge (a second: 409 `conflict`), only while the challenge is active (else 409 `invalid_state`). The submission is also a `challenge_submission` post. Fires `challenge.joined` (to the submitter's webhooks, and admins').",
    ].join("\n\n"),
    tags,
    auth: write,
    params: s.challengeIdParams,
    body: s.submissionCreateSchema,
    multipart: { fileField: "image", maxFileBytes: MAX_IMAGE_BYTES, toBody: (fields) => fields, schema: s.submissionCreateFormSchema },
    errors: [404],
    status: 201,
    response: s.submissionSchema,
    handler: ({ auth, params, body, file, transaction }) => challenges.submit(actorOf(auth), params.id, body, file, transaction),
  });

  api.route({
    method: "delete",
    path: "/v1/community/challenges/:id/submissions/:submission_id",
    operationId: "withdrawSubmission",
    summary: "Withdraw a submission",
    description: "The submitter while the challenge is active, or an admin with a `reason`; never a winner (409). Its post is removed with it.",
    tags,
    auth: write,
    params: s.submissionIdParams,
    body: s.removalSchema,
    errors: [404, 409],
    status: 204,
    response: null,
    handler: async ({ auth, params, body }) => {
      await challenges.withdraw(actorOf(auth), params.id, params.submission_id, body.reason);
      return undefined;
    },
  });

  api.route({
    method: "post",
    path: "/v1/community/challenges/:id/winners",
    operationId: "nameChallengeWinners",
    summary: "Name a challenge's winners (admin)",
    description: "After the deadline (before: 409 `invalid_state`), once; `submission_ids` first place first, each a submission to this challenge (else 400).",
    tags,
    auth: admin,
    params: s.challengeIdParams,
    body: s.winnersSchema,
    errors: [404],
    response: s.challengeSchema,
    handler: ({ params, body, transaction }) => challenges.nameWinners(params.id, body.submission_ids, transaction),
  });
}
