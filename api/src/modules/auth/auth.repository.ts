import { sql } from "kysely";
import type { Database, Db } from "../../db/database.ts";

// A user's role and status come from the users module's `user_access` view, in the credential's
// own statement; logins are recorded through it too (UsersViews).
export function findTokenByHash(db: Db, tokenHash: string) {
  return db
    .selectFrom("access_tokens as t")
    .innerJoin("user_access as u", "u.id", "t.user_id")
    .leftJoin("api_keys as k", "k.id", "t.api_key_id")
    .select([
      "t.id",
      "t.user_id",
      "t.api_key_id",
      "t.scopes",
      "t.expires_at",
      "t.revoked_at",
      "u.role",
      "u.status",
      "k.revoked_at as api_key_revoked_at",
    ])
    .where("t.token_hash", "=", tokenHash)
    .executeTakeFirst();
}

export function findApiKeyByHash(db: Db, secretHash: string) {
  return db
    .selectFrom("api_keys as k")
    .innerJoin("user_access as u", "u.id", "k.user_id")
    .select(["k.id", "k.user_id", "k.revoked_at", "k.scopes", "u.role", "u.status"])
    .where("k.secret_hash", "=", secretHash)
    .executeTakeFirst();
}

export async function insertToken(
  db: Db,
  row: { id: string; user_id: string; api_key_id: string | null; token_hash: string; scopes: string[]; expires_at: Date },
) {
  return db.insertInto("access_tokens").values(row).returning(["id", "created_at", "expires_at"]).executeTakeFirstOrThrow();
}

export async function revokeToken(db: Db, tokenId: string): Promise<Date> {
  const row = await db
    .updateTable("access_tokens")
    .set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` })
    .where("id", "=", tokenId)
    .returning("revoked_at")
    .executeTakeFirstOrThrow();
  return row.revoked_at as Date;
}

/**
 * An API key's exchanges touch `last_used_at` and its user's `last_login_at` to the minute: rows
 * touched within the last minute are left alone, so that a client exchanging its key many times a
 * second does not serialize every exchange on those rows' locks (nor write a row version each
 * time). A SIWE sign-in records its login exactly (`touchLogin`).
 */
const TOUCH_GRANULARITY = sql`interval '1 minute'`;
const notSinceAMinute = (column: string) => sql<boolean>`(${sql.ref(column)} is null or ${sql.ref(column)} < now() - ${TOUCH_GRANULARITY})`;

/**
 * Tokens exchanged for API keys (one, or the exchanges under way together: GroupedWrites), with each
 * key's last use and each user's last login recorded to the minute, in one statement; answers each
 * row's id and expiry.
 */
export async function insertTokensForApiKeys(
  db: Db,
  rows: { id: string; user_id: string; api_key_id: string; token_hash: string; scopes: string[]; expires_at: Date }[],
): Promise<{ id: string; expires_at: Date }[]> {
  const result = await sql<{ id: string; expires_at: Date }>`
    with input as (
      select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        as r(id text, user_id text, api_key_id text, token_hash text, scopes text[], expires_at timestamptz)
    ),
    key_used as (
      update api_keys set last_used_at = now()
      where id in (select api_key_id from input) and ${notSinceAMinute("last_used_at")}
      returning id
    ),
    logged_in as (
      update user_access set last_login_at = now()
      where id in (select user_id from input) and ${notSinceAMinute("last_login_at")}
      returning id
    )
    insert into access_tokens (id, user_id, api_key_id, token_hash, scopes, expires_at)
    select id, user_id, api_key_id, token_hash, scopes, expires_at from input
    returning id, expires_at`.execute(db);
  return result.rows;
}

export async function touchLogin(db: Db, userId: string): Promise<void> {
  await db.updateTable("user_access").set({ last_login_at: sql<Date>`now()` }).where("id", "=", userId).execute();
}

export async function insertApiKey(
  db: Db,
  row: { id: string; user_id: string; name: string | null; secret_hash: string; secret_hint: string; scopes: string[] | null; parent_api_key_id: string | null },
) {
  return db.insertInto("api_keys").values(row).returning(["id", "name", "secret_hint", "scopes", "parent_api_key_id", "created_at"]).executeTakeFirstOrThrow();
}

/**
 * Locks a live key against revocation until the transaction ends (false when it is revoked): a key
 * made meanwhile from its tokens is then committed before the revocation looks for its descendants.
 */
export async function lockLiveApiKey(db: Db, apiKeyId: string): Promise<boolean> {
  const row = await db.selectFrom("api_keys").select("id").where("id", "=", apiKeyId).where("revoked_at", "is", null).forShare().executeTakeFirst();
  return row !== undefined;
}

export function listApiKeys(db: Db, userId: string) {
  return db
    .selectFrom("api_keys")
    .select(["id", "name", "secret_hint", "scopes", "parent_api_key_id", "created_at", "last_used_at"])
    .where("user_id", "=", userId)
    .where("revoked_at", "is", null)
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .execute();
}

/** Revokes the key, the keys made with its tokens (transitively), and every token of all of them, at once. */
export async function revokeApiKey(db: Db, userId: string, apiKeyId: string): Promise<Date | null> {
  const row = await db
    .updateTable("api_keys")
    .set({ revoked_at: sql<Date>`now()` })
    .where("id", "=", apiKeyId)
    .where("user_id", "=", userId)
    .where("revoked_at", "is", null)
    .returning("revoked_at")
    .executeTakeFirst();
  if (!row) return null;
  await revokeDescendants(db, [apiKeyId]);
  return row.revoked_at as Date;
}

/**
 * Revokes the user's live credentials that hold any of `scopes`: its keys capped with one of them
 * (a key without a cap of its own holds its role's, and is left), with the keys made with their
 * tokens and every token of those (as revokeApiKey), and its unexpired tokens holding one of them.
 */
export async function revokeCredentialsHolding(db: Db, userId: string, scopes: readonly string[]): Promise<void> {
  const holding = (column: string) => sql<boolean>`${sql.ref(column)} && ${[...scopes]}::text[]`;
  const keys = await db
    .updateTable("api_keys")
    .set({ revoked_at: sql<Date>`now()` })
    .where("user_id", "=", userId)
    .where("revoked_at", "is", null)
    .where(holding("scopes"))
    .returning("id")
    .execute();
  await revokeDescendants(db, keys.map((k) => k.id));
  await db
    .updateTable("access_tokens")
    .set({ revoked_at: sql<Date>`now()` })
    .where("user_id", "=", userId)
    .where("revoked_at", "is", null)
    .where("expires_at", ">", sql<Date>`now()`)
    .where(holding("scopes"))
    .execute();
}

/**
 * Revokes the keys made with the tokens of the (just revoked) keys `roots`, transitively, and every
 * token of all of them. One generation per statement, each with a fresh snapshot: a key being made
 * from one of them holds its parent's row (lockLiveApiKey), so it is committed, and found, by the
 * next statement.
 */
async function revokeDescendants(db: Db, roots: string[]): Promise<void> {
  if (roots.length === 0) return;
  const revoked = [...roots];
  for (let generation = roots; generation.length > 0; ) {
    const children = await db
      .updateTable("api_keys")
      .set({ revoked_at: sql<Date>`now()` })
      .where("parent_api_key_id", "in", generation)
      .where("revoked_at", "is", null)
      .returning("id")
      .execute();
    generation = children.map((c) => c.id);
    revoked.push(...generation);
  }
  await db
    .updateTable("access_tokens")
    .set({ revoked_at: sql<Date>`now()` })
    .where("api_key_id", "in", revoked)
    .where("revoked_at", "is", null)
    .execute();
}

export async function insertNonce(db: Db, nonce: string, expiresAt: Date): Promise<void> {
  await db.insertInto("siwe_nonces").values({ nonce, expires_at: expiresAt }).execute();
}

/** Marks the nonce used; false when it is unknown, expired or already used (single use under races). */
export async function consumeNonce(db: Db, nonce: string): Promise<boolean> {
  const row = await db
    .updateTable("siwe_nonces")
    .set({ used_at: sql<Date>`now()` })
    .where("nonce", "=", nonce)
    .where("used_at", "is", null)
    .where("expires_at", ">", sql<Date>`now()`)
    .returning("nonce")
    .executeTakeFirst();
  return row !== undefined;
}

export async function purgeExpiredCredentials(db: Db): Promise<void> {
  await db.deleteFrom("siwe_nonces").where("expires_at", "<", sql<Date>`now() - interval '1 day'`).execute();
  await db.deleteFrom("access_tokens").where("expires_at", "<", sql<Date>`now() - interval '30 days'`).execute();
}
