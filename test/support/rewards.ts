/**
 * Reading the rewards ledger as a user does (docs/rewards.md): the balance and every page of the
 * history over HTTP, and the outbox drained, the fact after which every earning and reversal of the
 * events recorded since a moment has been written.
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../../api/src/db/database.ts";
import type { TestApi, TestUser } from "./api.ts";
import { waitFor } from "./wait.ts";

export interface RewardsBalance {
  service_points: number;
  lifetime_earned: number;
  tier: string;
}

/** A row of `GET /v1/rewards/history`. */
export interface HistoryRow {
  event_id: string;
  type: "earned" | "reversal" | "redeemed" | "redemption_reversed" | "adjustment";
  points: number;
  reason: string;
  reference_id: string;
  source: { type: string; id: string } | null;
  rule: string | null;
  created_at: string;
}

export async function rewardsBalance(api: Pick<TestApi, "request">, user: Pick<TestUser, "id" | "token">): Promise<RewardsBalance> {
  const res = await api.request("GET", "/v1/rewards/balance", { token: user.token });
  if (res.status !== 200) throw new Error(`balance of ${user.id}: ${res.status} ${res.text}`);
  return res.body;
}

/** Every row of the user's history, newest first (all pages). */
export async function rewardsHistory(api: Pick<TestApi, "request">, user: Pick<TestUser, "id" | "token">): Promise<HistoryRow[]> {
  const rows: HistoryRow[] = [];
  for (let page = 1; ; page++) {
    const res = await api.request("GET", `/v1/rewards/history?limit=100&page=${page}`, { token: user.token });
    if (res.status !== 200) throw new Error(`history of ${user.id}: ${res.status} ${res.text}`);
    rows.push(...res.body.data);
    if (!res.body.pagination.has_more) return rows;
  }
}

/** The rows of `history` whose source is `{type, id}`. */
export const rowsOfSource = (history: HistoryRow[], type: string, id: string) => history.filter((h) => h.source?.type === type && h.source.id === id);

/** The database's clock now: events recorded from then on are `created_at >=` it. */
export async function databaseNow(db: Kysely<Database>): Promise<Date> {
  const { rows } = await sql<{ now: Date }>`select now() as now`.execute(db);
  return rows[0]!.now;
}

/**
 * Waits until every event recorded since `since` has been handed to its subscribers, those the
 * handlers record meanwhile too. Events a subscriber keeps failing are named in the error.
 */
export async function outboxDrained(db: Kysely<Database>, since: Date, timeoutMs = 15_000): Promise<void> {
  await waitFor(
    async () => {
      const waiting = await db
        .selectFrom("outbox_events")
        .select(["id", "event_type", "dispatch_attempts", "dispatch_error"])
        .where("dispatched_at", "is", null)
        .where("created_at", ">=", since)
        .execute();
      const failing = waiting.filter((e) => e.dispatch_attempts > 0);
      if (failing.length > 0) throw new Error(`outbox events failing: ${failing.map((e) => `${e.event_type} ${e.id} (${e.dispatch_attempts}): ${e.dispatch_error}`).join("; ")}`);
      return waiting.length === 0;
    },
    { timeoutMs, what: "the outbox drained" },
  );
}
