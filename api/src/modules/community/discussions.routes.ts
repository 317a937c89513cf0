import type { ApiRouter } from "../../http/route.ts";
import * as s from "./community.schemas.ts";
import type { DiscussionsService } from "./discussions.service.ts";
import { actorOf, admin, TEXT_RULES, tags, write } from "./route-parts.ts";

/** Discussions: start, list (recent or popular), read, reply; admins pin them. */
export function registerDiscussionsRoutes(api: ApiRouter, discussions: DiscussionsService): void {
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
}
