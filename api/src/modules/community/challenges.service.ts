import type { Kysely } from "kysely";
import type { Database } from "../../db/database.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import type { UploadedFile } from "../../http/multipart.ts";
import { recordEvent } from "../../jobs/outbox.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { centsToUsd, usdToCents } from "../../lib/money.ts";
import { type Page, paginated } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { Actor } from "../../lib/actor.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import * as repo from "./challenges.repository.ts";
import type { ChallengeCreate, ChallengePatch, ChallengeStatus, SubmissionCreate } from "./community.schemas.ts";
import type { PostsService } from "./posts.service.ts";

/**
 * Challenges (docs/decisions.md#states: `upcoming` -> `active` -> `closed`, from `starts_at` and
 * `deadline`, as of the database's clock when read) and their submissions: one per user (a unique
 * index), only while active, each also a `challenge_submission` post; `challenge.joined` is
 * recorded with it. A submission names an artwork only of the submitter's own (its holder, OwnershipService).
 */
export class ChallengesService {
  constructor(private readonly deps: { db: Kysely<Database>; posts: PostsService; ownership: OwnershipService }) {}

  create(actor: Actor, input: ChallengeCreate, transact: Transact = transactOn(this.deps.db)) {
    requireFutureDeadline(input.deadline);
    return transact(async (trx) => {
      const created = await repo.insert(trx, {
        id: newId("challenge"),
        title: input.title,
        theme: input.theme,
        prize_pool_cents: usdToCents(input.prize_pool_usd),
        starts_at: input.starts_at,
        deadline: input.deadline,
        created_by: actor.userId,
      });
      return toChallenge((await repo.find(trx, created.id))!);
    });
  }

  /** Admins edit a challenge until it starts; then 409 invalid_state. */
  async update(id: string, patch: ChallengePatch) {
    return this.deps.db.transaction().execute(async (trx) => {
      const challenge = found(isId("challenge", id) ? await repo.lock(trx, id) : undefined, "Challenge");
      if (challenge.status !== "upcoming") throw ApiError.conflict("invalid_state", `The challenge is ${challenge.status}: it can be edited only before it starts`);
      const startsAt = patch.starts_at ?? challenge.starts_at;
      const deadline = patch.deadline ?? challenge.deadline;
      if (deadline <= startsAt) throw ApiError.validation([{ field: "deadline", code: "invalid_value", message: "must be after starts_at" }]);
      requireFutureDeadline(deadline);
      await repo.update(trx, challenge.id, {
        ...(patch.title !== undefined ? { title: patch.title } : {}),
        ...(patch.theme !== undefined ? { theme: patch.theme } : {}),
        ...(patch.prize_pool_usd !== undefined ? { prize_pool_cents: usdToCents(patch.prize_pool_usd) } : {}),
        starts_at: startsAt,
        deadline,
      });
      return toChallenge((await repo.find(trx, challenge.id))!);
    });
  }

  /** Active and upcoming by default; `status` picks one (closed ones only that way). */
  async list(status: ChallengeStatus | undefined, page: Page) {
    const { rows, total } = await repo.list(this.deps.db, status ? [status] : ["upcoming", "active"], page);
    return paginated(rows.map(toChallenge), page, total);
  }

  async get(id: string) {
    return toChallenge(await this.find(id));
  }

  /**
   * Joins an active challenge with an artwork of the caller's own, a text, an image, or several:
   * at least one. Not active: 409 invalid_state; a second submission: 409 conflict (the unique
   * index decides, also under races). The submission, its post, the count and `challenge.joined`
   * (audience: the submitter) commit together.
   */
  async submit(actor: Actor, id: string, input: SubmissionCreate, file: UploadedFile | undefined, transact: Transact = transactOn(this.deps.db)) {
    const { posts } = this.deps;
    if (input.artwork_id === undefined && input.content === undefined && !file) {
      throw ApiError.validation([{ field: "body", code: "required", message: "send artwork_id, content or an image (multipart), at least one" }]);
    }
    if (input.artwork_id !== undefined) {
      // Its owner is who holds its certificate (docs/ownership-and-money.md), not who made it.
      const holder = await this.deps.ownership.holderOf(await posts.requireVisibleArtwork(input.artwork_id));
      if (holder.user?.id !== actor.userId) throw ApiError.forbidden("A challenge submission may only name an artwork you own: its certificate is in a wallet of yours (before certification, you registered it)");
    }
    const postId = newId("post");
    const submissionId = newId("submission");
    return posts.withImages(postId, file ? [file] : [], (images) =>
      transact(async (trx) => {
        const challenge = found(isId("challenge", id) ? await repo.lock(trx, id) : undefined, "Challenge");
        if (challenge.status !== "active") throw ApiError.conflict("invalid_state", `The challenge is ${challenge.status}: submissions are accepted only while it is active`);
        await posts.insertPost(trx, {
          id: postId,
          type: "challenge_submission",
          author_id: actor.userId,
          content: input.content ?? "",
          artwork_id: input.artwork_id ?? null,
          images: JSON.stringify(images),
          challenge_id: challenge.id,
          submission_id: submissionId,
        });
        const submission = await repo.insertSubmission(trx, { id: submissionId, challenge_id: challenge.id, user_id: actor.userId, post_id: postId, artwork_id: input.artwork_id ?? null });
        if (!submission) throw ApiError.conflict("conflict", "You have already submitted to this challenge: one submission per user");
        await repo.adjustSubmissions(trx, challenge.id, 1);
        await recordEvent(trx, "challenge.joined", { challenge_id: challenge.id, user_id: actor.userId, submission_id: submission.id, joined_at: iso(submission.created_at) }, [actor.userId]);
        return this.toSubmission({ ...submission, content: input.content ?? "", images });
      }),
    );
  }

  async submissions(id: string, page: Page) {
    const challenge = await this.find(id);
    const { rows, total } = await repo.listSubmissions(this.deps.db, challenge.id, page);
    return paginated(
      rows.map((s) => this.toSubmission(s)),
      page,
      total,
    );
  }

  /**
   * The submitter withdraws a submission while the challenge is active; an admin removes any (with
   * a reason) that is not a winner. Its post is removed with it and the count moves.
   */
  async withdraw(actor: Actor, id: string, submissionId: string, reason: string | undefined) {
    return this.deps.db.transaction().execute(async (trx) => {
      const challenge = found(isId("challenge", id) ? await repo.lock(trx, id) : undefined, "Challenge");
      const submission = found(isId("submission", submissionId) ? await repo.findSubmission(trx, challenge.id, submissionId) : undefined, "Submission");
      const own = submission.user_id === actor.userId;
      if (!own && actor.role !== "admin") throw ApiError.forbidden("Only the submitter or an admin may withdraw this submission");
      if (!own && !reason) throw ApiError.validation([{ field: "reason", code: "required", message: "an admin removing another's submission gives the reason" }]);
      if (own && actor.role !== "admin" && challenge.status !== "active") throw ApiError.conflict("invalid_state", `The challenge is ${challenge.status}: submissions can be withdrawn only while it is active`);
      if (submission.winner_rank !== null) throw ApiError.conflict("invalid_state", "A winning submission cannot be withdrawn");
      await repo.deleteSubmission(trx, submission.id);
      await this.deps.posts.removePost(trx, submission.post_id, actor.userId, reason ?? null);
      await recordEvent(trx, "challenge.withdrawn", { challenge_id: challenge.id, user_id: submission.user_id, submission_id: submission.id, withdrawn_by: actor.userId, withdrawn_at: iso(new Date()) }, [submission.user_id]);
      await repo.adjustSubmissions(trx, challenge.id, -1);
    });
  }

  /** Admins name the winners, first place first, once the deadline has passed (before: 409), once. */
  nameWinners(id: string, submissionIds: string[], transact: Transact = transactOn(this.deps.db)) {
    return transact(async (trx) => {
      const challenge = found(isId("challenge", id) ? await repo.lock(trx, id) : undefined, "Challenge");
      if (challenge.status !== "closed") throw ApiError.conflict("invalid_state", `The challenge is ${challenge.status}: winners are named after its deadline`);
      if (challenge.winners_named_at) throw ApiError.conflict("invalid_state", "The challenge's winners are named already");
      const ranked = await repo.setWinners(trx, challenge.id, submissionIds);
      if (ranked !== submissionIds.length) throw ApiError.validation([{ field: "submission_ids", code: "not_found", message: "every id must be a submission to this challenge" }]);
      // Internal (not a webhook event): the winners and their places, for rewards.
      const userOf = await repo.submittersOf(trx, submissionIds);
      const winners = submissionIds.map((submissionId, i) => ({ submission_id: submissionId, user_id: userOf.get(submissionId)!, rank: i + 1 }));
      await recordEvent(trx, "challenge.winners_named", { challenge_id: challenge.id, winners }, winners.map((w) => w.user_id));
      return toChallenge((await repo.find(trx, challenge.id))!);
    });
  }

  /** Challenges whose deadline has passed (within [from, to) when given): the admin report's `challenges_completed`. */
  countClosed(range: { from?: Date; to?: Date } = {}): Promise<number> {
    return repo.countClosed(this.deps.db, range);
  }

  private async find(id: string) {
    return found(isId("challenge", id) ? await repo.find(this.deps.db, id) : undefined, "Challenge");
  }

  private toSubmission(s: repo.SubmissionWithPost) {
    return {
      submission_id: s.id,
      challenge_id: s.challenge_id,
      user_id: s.user_id,
      post_id: s.post_id,
      artwork_id: s.artwork_id,
      content: s.content === "" ? null : s.content,
      image_url: s.images.length > 0 ? this.deps.posts.imageUrl(s.post_id, 1) : null,
      winner_rank: s.winner_rank,
      created_at: iso(s.created_at),
    };
  }
}

function requireFutureDeadline(deadline: Date): void {
  if (deadline.getTime() <= Date.now()) throw ApiError.validation([{ field: "deadline", code: "invalid_value", message: "must be in the future" }]);
}

function toChallenge(c: repo.ChallengeWithStatus) {
  return {
    challenge_id: c.id,
    title: c.title,
    theme: c.theme,
    prize_pool_usd: centsToUsd(c.prize_pool_cents),
    submissions_count: c.submissions_count,
    starts_at: iso(c.starts_at),
    deadline: iso(c.deadline),
    status: c.status,
    winners: c.winners,
    created_at: iso(c.created_at),
  };
}
