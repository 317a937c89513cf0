import { type ApiRouter, Reply } from "../../http/route.ts";
import { MAX_IMAGE_BYTES } from "../../lib/images.ts";
import { z } from "../../openapi/zod.ts";
import * as s from "./community.schemas.ts";
import type { PostsService } from "./posts.service.ts";
import { actorOf, TEXT_RULES, tags, write } from "./route-parts.ts";

const deletedSchema = z.object({ post_id: z.string(), removed: z.literal(true), removed_at: z.string() });

/** Posts: create (JSON or with images), list, read, edit, remove; their images, likes and comments. */
export function registerPostsRoutes(api: ApiRouter, posts: PostsService): void {
  api.route({
    method: "post",
    path: "/v1/community/posts",
    operationId: "createPost",
    summary: "Create a post",
    description: [
      "`artwork_share` (or `artwork`) with the `artwork_id` of an artwork that is not deleted (else 400), or `discussion`. Content up to 10,000 characters; up to 10 tags of up to 32. " + TEXT_RULES,
      `JSON, or \`multipart/form-data\` with up to ${s.MAX_POST_IMAGES} file parts named \`images\` (JPEG, PNG, WebP or GIF recognized by content, up to ${MAX_IMAGE_BYTES / 1024 / 1024} MiB each: 415 for other types, 413 above, 400 for a fifth) and the other fields as text parts (\`tags\` as one part per tag, one part holding a JSON array, or \`tags[0]\`, \`tags[1]\`, ...).`,
    ].join("\n\n"),
    tags,
    auth: write,
    body: s.postCreateSchema,
    multipart: { fileField: "images", maxFiles: s.MAX_POST_IMAGES, maxFileBytes: MAX_IMAGE_BYTES, repeatable: ["tags"], toBody: s.postFormToBody, schema: s.postCreateFormSchema },
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
}
