/**
 * The move of points off `users` into the rewards module's own ledger and balances
 * (migration 2026_11_27_0030), on a real Postgres holding rows written before it: every balance is
 * kept, each earning's source is read from its key, a balance the ledger did not explain opens
 * with an adjustment, and `users` no longer has the columns.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { migrateToLatest } from "../../api/src/db/migrate.ts";
import { moduleMigrations } from "../../api/src/modules/index.ts";
import { useDatabaseMigratedUpTo } from "../support/migration-database.ts";

const database = useDatabaseMigratedUpTo("rewards_mig", "2026_11_27_0022_artwork_summaries");

describe("rewards ledger migration", () => {
  it("keeps every balance, reads each earning's source from its key, and opens an unexplained balance with an adjustment", async () => {
    const { db } = database;
    const user = (id: string, points: number, lifetime: number, tier: string) =>
      sql`insert into users (id, username, display_name, email, role, status, wallet_address, wallet_kind, service_points, lifetime_points, tier)
        values (${id}, ${id}, ${id}, ${`${id}@example.test`}, 'collector', 'active', ${`0x${randomBytes(20).toString("hex")}`}, 'siwe', ${points}, ${lifetime}, ${tier})`.execute(db);
    const row = (id: string, userId: string, type: string, points: number, reference: string, key: string) =>
      sql`insert into reward_ledger (id, user_id, type, points, reason, reference_id, source_key) values (${id}, ${userId}, ${type}, ${points}, 'before', ${reference}, ${key})`.execute(db);
    await user("usr_a", 1_035, 1_085, "silver");
    await user("usr_b", 70, 70, "bronze");
    await user("usr_c", 0, 0, "bronze");
    // usr_a: a sale (bought), a certification, a challenge win, and a redemption of 50.
    await row("rev_1", "usr_a", "earned", 1_000, "txn_1", "evt_1:bought:usr_a");
    await row("rev_2", "usr_a", "earned", 50, "art_1", "evt_2:certified:usr_a");
    await row("rev_3", "usr_a", "earned", 35, "sub_1", "evt_3:won:3:usr_a");
    await row("rev_4", "usr_a", "redeemed", -50, "rdm_1", "redemption:rdm_1");
    // usr_b: a post of 10, but a balance of 70 the ledger does not explain.
    await row("rev_5", "usr_b", "earned", 10, "pst_1", "evt_4:post:usr_b");

    await migrateToLatest(db, moduleMigrations);

    const balances = (await sql<{ user_id: string; service_points: number; lifetime_points: number; tier: string }>`select * from reward_balances order by user_id`.execute(db)).rows;
    expect(balances.map(({ user_id, service_points, lifetime_points, tier }) => ({ user_id, service_points, lifetime_points, tier }))).toEqual([
      { user_id: "usr_a", service_points: 1_035, lifetime_points: 1_085, tier: "silver" },
      { user_id: "usr_b", service_points: 70, lifetime_points: 70, tier: "bronze" },
    ]);
    const ledger = (await sql<{ id: string; type: string; points: number; source_type: string; source_id: string; rule: string | null }>`
      select id, type, points, source_type, source_id, rule from reward_ledger order by user_id, id`.execute(db)).rows;
    expect(ledger).toEqual([
      { id: "rev_1", type: "earned", points: 1_000, source_type: "sale", source_id: "txn_1", rule: "bought" },
      { id: "rev_2", type: "earned", points: 50, source_type: "certification", source_id: "art_1", rule: "certified" },
      { id: "rev_3", type: "earned", points: 35, source_type: "challenge_win", source_id: "sub_1", rule: "won" },
      { id: "rev_4", type: "redeemed", points: -50, source_type: "redemption", source_id: "rdm_1", rule: null },
      { id: "rev_5", type: "earned", points: 10, source_type: "post", source_id: "pst_1", rule: "post" },
      { id: "rev_adjust_usr_b", type: "adjustment", points: 60, source_type: "adjustment", source_id: "usr_b", rule: null },
    ]);
    // Every balance is its ledger's sum now.
    const sums = (await sql<{ user_id: string; points: number }>`select user_id, sum(points)::int as points from reward_ledger group by user_id order by user_id`.execute(db)).rows;
    expect(sums).toEqual([
      { user_id: "usr_a", points: 1_035 },
      { user_id: "usr_b", points: 70 },
    ]);
    const sources = (await sql<{ source_type: string; source_id: string; rule: string; points: number; state: string }>`
      select source_type, source_id, rule, points, state from reward_sources where user_id = 'usr_a' order by source_type`.execute(db)).rows;
    expect(sources).toEqual([
      { source_type: "certification", source_id: "art_1", rule: "certified", points: 50, state: "standing" },
      { source_type: "challenge_win", source_id: "sub_1", rule: "won", points: 35, state: "standing" },
      { source_type: "sale", source_id: "txn_1", rule: "bought", points: 1_000, state: "standing" },
    ]);
    const columns = (await sql<{ column_name: string }>`select column_name from information_schema.columns where table_name = 'users' and column_name in ('service_points', 'lifetime_points', 'tier')`.execute(db)).rows;
    expect(columns).toEqual([]);
    // The users module's view: a user with no balance row reads as nothing yet.
    expect((await sql<{ user_id: string }>`select user_id from reward_standings where user_id = 'usr_c'`.execute(db)).rows).toEqual([]);
  });
});
