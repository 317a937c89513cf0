import { type Kysely, sql } from "kysely";

// Rewards (docs/rewards.md): the points ledger, the catalog and redemptions. Never a negative
// balance (users.service_points >= 0 is checked since the core migration) and never more
// redemptions than stock: both move by conditional UPDATEs, checked here too.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("reward_ledger")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("type", "text", (c) => c.notNull().check(sql`type in ('earned', 'redeemed')`))
    .addColumn("points", "integer", (c) => c.notNull())
    .addColumn("reason", "text", (c) => c.notNull())
    .addColumn("reference_id", "text", (c) => c.notNull())
    // The event and rule (or redemption) that moved the points: each counts once.
    .addColumn("source_key", "text", (c) => c.notNull().unique())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint("reward_ledger_sign", sql`(type = 'earned' and points > 0) or (type = 'redeemed' and points < 0)`)
    .execute();
  await sql`create index reward_ledger_user_idx on reward_ledger (user_id, created_at desc, id desc)`.execute(db);

  await db.schema
    .createTable("rewards")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("points_cost", "integer", (c) => c.notNull().check(sql`points_cost > 0`))
    .addColumn("kind", "text", (c) => c.notNull().check(sql`kind in ('code', 'discount')`))
    .addColumn("discount_pct", "integer", (c) => c.check(sql`discount_pct between 1 and 100`))
    .addColumn("discount_cents", "bigint", (c) => c.check(sql`discount_cents > 0`))
    .addColumn("stock", "integer", (c) => c.check(sql`stock >= 0`))
    .addColumn("redeemed_count", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("active", "boolean", (c) => c.notNull().defaultTo(true))
    .addColumn("created_by", "text", (c) => c.notNull().references("users.id"))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint("rewards_stock", sql`stock is null or redeemed_count <= stock`)
    .addCheckConstraint(
      "rewards_kind",
      sql`(kind = 'code' and discount_pct is null and discount_cents is null) or (kind = 'discount' and (discount_pct is null) <> (discount_cents is null))`,
    )
    .execute();

  await db.schema
    .createTable("reward_redemptions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("reward_id", "text", (c) => c.notNull().references("rewards.id"))
    .addColumn("reward_name", "text", (c) => c.notNull())
    .addColumn("points_spent", "integer", (c) => c.notNull().check(sql`points_spent > 0`))
    .addColumn("activation_code", "text", (c) => c.unique())
    .addColumn("order_id", "text")
    .addColumn("discount_cents", "bigint")
    .addColumn("remaining_balance", "integer", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("used_at", "timestamptz")
    .execute();
  await sql`create index reward_redemptions_user_idx on reward_redemptions (user_id, created_at desc)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("reward_redemptions").ifExists().execute();
  await db.schema.dropTable("rewards").ifExists().execute();
  await db.schema.dropTable("reward_ledger").ifExists().execute();
}
