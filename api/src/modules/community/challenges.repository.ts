import { type Insertable, sql, type Transaction, type Updateable } from "kysely";
import type { Database, Db } from "../../db/database.ts";
import { type Page, paginate } from "../../lib/pagination.ts";
import type { ChallengeStatus } from "./community.schemas.ts";
import type { Challenge, CommunityChallengesTable, CommunitySubmissionsTable, PostImage, Submission } from "./community.tables.ts";

/** A challenge with its status as of the database's clock now (never stored, so never stale). */
export type ChallengeWithStatus = Challenge & { status: ChallengeStatus; winners: string[] };

/** A submission with its post's text and image. */
export type SubmissionWithPost = Submission & { content: string; images: PostImage[] };

const status = sql<ChallengeStatus>`case when now() < c.starts_at then 'upcoming' when now() < c.deadline then 'active' else 'closed' end`;
const winners = sql<string[]>`coalesce((select array_agg(s.id order by s.winner_rank) from community_submissions s where s.challenge_id = c.id and s.winner_rank is not null), '{}')`;

function withStatus(db: Db) {
  return db.selectFrom("community_challenges as c").selectAll("c").select([status.as("status"), winners.as("winners")]);
}

export function insert(db: Db, challenge: Insertable<CommunityChallengesTable>): Promise<Challenge> {
  return db.insertInto("community_challenges").values(challenge).returningAll().executeTakeFirstOrThrow();
}

export function find(db: Db, id: string): Promise<ChallengeWithStatus | undefined> {
  return withStatus(db).where("c.id", "=", id).executeTakeFirst();
}

/** The challenge locked, with its status as of this transaction's clock. */
export function lock(trx: Transaction<Database>, id: string): Promise<ChallengeWithStatus | undefined> {
  return withStatus(trx).where("c.id", "=", id).forUpdate("c").executeTakeFirst();
}

export async function update(db: Db, id: string, patch: Updateable<CommunityChallengesTable>): Promise<void> {
  await db.updateTable("community_challenges").set({ ...patch, updated_at: sql<Date>`now()` }).where("id", "=", id).execute();
}

/** `statuses` by the dates (indexed by deadline): ending soonest first, closed ones latest first. */
export function list(db: Db, statuses: readonly ChallengeStatus[], page: Page): Promise<{ rows: ChallengeWithStatus[]; total: number }> {
  let query = db.selectFrom("community_challenges as c");
  const open = statuses.includes("upcoming") || statuses.includes("active");
  if (!statuses.includes("closed")) query = query.where("c.deadline", ">", sql<Date>`now()`);
  if (!open) query = query.where("c.deadline", "<=", sql<Date>`now()`);
  if (statuses.length === 1 && statuses[0] === "upcoming") query = query.where("c.starts_at", ">", sql<Date>`now()`);
  if (statuses.length === 1 && statuses[0] === "active") query = query.where("c.starts_at", "<=", sql<Date>`now()`);
  return paginate(query, page, (q) => q.selectAll("c").select([status.as("status"), winners.as("winners")]).orderBy("c.deadline", open ? "asc" : "desc").orderBy("c.id", open ? "asc" : "desc"));
}

/** Inserts the submission unless the user has one for the challenge (the unique index): undefined then. */
export function insertSubmission(db: Db, submission: Insertable<CommunitySubmissionsTable>): Promise<Submission | undefined> {
  return db
    .insertInto("community_submissions")
    .values(submission)
    .onConflict((oc) => oc.columns(["challenge_id", "user_id"]).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export async function adjustSubmissions(db: Db, challengeId: string, delta: number): Promise<void> {
  await db
    .updateTable("community_challenges")
    .set((eb) => ({ submissions_count: eb("submissions_count", "+", delta) }))
    .where("id", "=", challengeId)
    .execute();
}

function submissionsWithPost(db: Db) {
  return db.selectFrom("community_submissions as s").innerJoin("community_posts as p", "p.id", "s.post_id");
}

export function findSubmission(db: Db, challengeId: string, id: string): Promise<SubmissionWithPost | undefined> {
  return submissionsWithPost(db).selectAll("s").select(["p.content", "p.images"]).where("s.challenge_id", "=", challengeId).where("s.id", "=", id).executeTakeFirst();
}

export function listSubmissions(db: Db, challengeId: string, page: Page): Promise<{ rows: SubmissionWithPost[]; total: number }> {
  return paginate(submissionsWithPost(db).where("s.challenge_id", "=", challengeId), page, (q) =>
    q.selectAll("s").select(["p.content", "p.images"]).orderBy("s.created_at", "asc").orderBy("s.id", "asc"),
  );
}

export async function deleteSubmission(db: Db, id: string): Promise<void> {
  await db.deleteFrom("community_submissions").where("id", "=", id).execute();
}

/** The user of each of the submissions, by id. */
export async function submittersOf(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
  const rows = await db.selectFrom("community_submissions").select(["id", "user_id"]).where("id", "in", ids).execute();
  return new Map(rows.map((r) => [r.id, r.user_id]));
}

/** Ranks the named submissions 1.. in order; how many of them belong to the challenge. */
export async function setWinners(db: Db, challengeId: string, submissionIds: readonly string[]): Promise<number> {
  let ranked = 0;
  for (const [i, id] of submissionIds.entries()) {
    const r = await db.updateTable("community_submissions").set({ winner_rank: i + 1 }).where("challenge_id", "=", challengeId).where("id", "=", id).executeTakeFirst();
    ranked += Number(r.numUpdatedRows);
  }
  await db.updateTable("community_challenges").set({ winners_named_at: sql<Date>`now()`, updated_at: sql<Date>`now()` }).where("id", "=", challengeId).execute();
  return ranked;
}

/** Challenges whose deadline passed, within [from, to) when given. */
export async function countClosed(db: Db, range: { from?: Date; to?: Date }): Promise<number> {
  let query = db.selectFrom("community_challenges").select(sql<string>`count(*)`.as("n")).where("deadline", "<=", sql<Date>`now()`);
  if (range.from) query = query.where("deadline", ">=", range.from);
  if (range.to) query = query.where("deadline", "<", range.to);
  return Number((await query.executeTakeFirstOrThrow()).n);
}
