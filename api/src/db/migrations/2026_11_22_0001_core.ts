import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create sequence custody_address_index_seq as integer minvalue 0 start 0`.execute(db);

  await db.schema
    .createTable("users")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("username", "text", (c) => c.notNull())
    .addColumn("display_name", "text", (c) => c.notNull())
    .addColumn("email", "text")
    .addColumn("role", "text", (c) => c.notNull().check(sql`role in ('collector', 'artist', 'admin')`))
    .addColumn("status", "text", (c) => c.notNull().defaultTo("active").check(sql`status in ('active', 'suspended')`))
    .addColumn("tier", "text", (c) =>
      c.notNull().defaultTo("bronze").check(sql`tier in ('bronze', 'silver', 'gold', 'platinum')`),
    )
    .addColumn("wallet_address", "text", (c) => c.notNull())
    .addColumn("wallet_kind", "text", (c) => c.notNull().check(sql`wallet_kind in ('siwe', 'custodial')`))
    .addColumn("custody_index", "integer", (c) => c.unique())
    .addColumn("bio", "text")
    .addColumn("location", "text")
    .addColumn("website", "text")
    .addColumn("avatar_url", "text")
    .addColumn("badges", sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn("service_points", "integer", (c) => c.notNull().defaultTo(0).check(sql`service_points >= 0`))
    .addColumn("lifetime_points", "integer", (c) => c.notNull().defaultTo(0).check(sql`lifetime_points >= 0`))
    .addColumn("artworks_count", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("followers_count", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("last_login_at", "timestamptz")
    .addCheckConstraint("users_custody_wallet", sql`(wallet_kind = 'custodial') = (custody_index is not null)`)
    .execute();
  await sql`create unique index users_username_key on users (lower(username))`.execute(db);
  await sql`create unique index users_email_key on users (lower(email)) where email is not null`.execute(db);
  await sql`create unique index users_wallet_address_key on users (lower(wallet_address))`.execute(db);
  await db.schema.createIndex("users_role_status_idx").on("users").columns(["role", "status"]).execute();
  await db.schema.createIndex("users_created_at_idx").on("users").columns(["created_at", "id"]).execute();

  await db.schema
    .createTable("api_keys")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("name", "text")
    .addColumn("secret_hash", "text", (c) => c.notNull().unique())
    .addColumn("secret_hint", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("last_used_at", "timestamptz")
    .addColumn("revoked_at", "timestamptz")
    .execute();
  await db.schema.createIndex("api_keys_user_idx").on("api_keys").columns(["user_id", "created_at"]).execute();

  await db.schema
    .createTable("access_tokens")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("api_key_id", "text", (c) => c.references("api_keys.id"))
    .addColumn("token_hash", "text", (c) => c.notNull().unique())
    .addColumn("scopes", sql`text[]`, (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("revoked_at", "timestamptz")
    .execute();
  await db.schema.createIndex("access_tokens_user_idx").on("access_tokens").column("user_id").execute();
  await db.schema.createIndex("access_tokens_api_key_idx").on("access_tokens").column("api_key_id").execute();
  await db.schema.createIndex("access_tokens_expires_idx").on("access_tokens").column("expires_at").execute();

  await db.schema
    .createTable("siwe_nonces")
    .addColumn("nonce", "text", (c) => c.primaryKey())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("used_at", "timestamptz")
    .execute();
  await db.schema.createIndex("siwe_nonces_expires_idx").on("siwe_nonces").column("expires_at").execute();

  await db.schema
    .createTable("idempotency_keys")
    .addColumn("principal", "text", (c) => c.notNull())
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("request_hash", "text", (c) => c.notNull())
    .addColumn("method", "text", (c) => c.notNull())
    .addColumn("path", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull().check(sql`state in ('in_progress', 'completed')`))
    .addColumn("response_status", "integer")
    .addColumn("response_body", "jsonb")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("locked_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("completed_at", "timestamptz")
    .addPrimaryKeyConstraint("idempotency_keys_pkey", ["principal", "key"])
    .execute();
  await db.schema.createIndex("idempotency_keys_created_idx").on("idempotency_keys").column("created_at").execute();

  // Domain events, written in the same transaction as the change they report (transactional outbox).
  await db.schema
    .createTable("outbox_events")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("event_type", "text", (c) => c.notNull())
    .addColumn("payload", "jsonb", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("dispatched_at", "timestamptz")
    .execute();
  await sql`create index outbox_events_undispatched_idx on outbox_events (created_at) where dispatched_at is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ["outbox_events", "idempotency_keys", "siwe_nonces", "access_tokens", "api_keys", "users"]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
  await sql`drop sequence if exists custody_address_index_seq`.execute(db);
}
