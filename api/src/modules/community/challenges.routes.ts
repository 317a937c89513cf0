import type { ApiRouter } from "../../http/route.ts";
import { MAX_IMAGE_BYTES } from "../../lib/images.ts";
import type { ChallengesService } from "./challenges.service.ts";
import * as s from "./community.schemas.ts";
import { actorOf, admin, tags, write } from "./route-parts.ts";

/** Challenges: admins create, edit and close them with winners; users join with a submission and withdraw it. */
export function registerChallengesRoutes(api: ApiRouter, challenges: ChallengesService): void {
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
      "`{artwork_id?, content?}` by JSON, or `multipart/form-data` with an `image` part (and those fields as text parts): at least one of them. The artwork must be your own: its certificate is held by a wallet of yours (before certification, you registered it), else 403.",
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
