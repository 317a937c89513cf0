import canonicalize from "canonicalize";
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/database.ts";
import { ApiError } from "../lib/errors.ts";
import { sha256Hex } from "../lib/secrets.ts";

/** An in-progress key older than this belongs to a request that died; a retry may take it over. */
const ABANDONED_AFTER_SECONDS = 120;
/** Keys are remembered for a day, as Stripe does. */
export const IDEMPOTENCY_TTL_HOURS = 24;

export type IdempotencyClaim =
  | { kind: "claimed" }
  | { kind: "replay"; status: number; body: unknown };

/**
 * The request a key stands for. Keys belong to the user, so the caller's scopes count too: a replay
 * never hands a token what a token with other scopes was given (an API key capped at those scopes).
 */
export function requestFingerprint(method: string, path: string, body: unknown, scopes: readonly string[] = []): string {
  const granted = scopes.length > 0 ? ` ${[...scopes].sort().join(",")}` : "";
  return sha256Hex(`${method} ${path}${granted}\n${canonicalize(body ?? null) ?? "null"}`);
}

/**
 * Stripe semantics: the first request with a key runs and its response is stored; a retry with the
 * same key and body gets the stored response; a different body is 422; a retry while the first is
 * still running is 409.
 */
export class IdempotencyStore {
  constructor(private readonly db: Kysely<Database>) {}

  async claim(principal: string, key: string, method: string, path: string, fingerprint: string): Promise<IdempotencyClaim> {
    const inserted = await this.db
      .insertInto("idempotency_keys")
      .values({ principal, key, request_hash: fingerprint, method, path, state: "in_progress", response_status: null, response_body: null, locked_at: sql<Date>`now()` })
      .onConflict((oc) =>
        // Take over an expired or abandoned key in the same statement, so two retries cannot both win.
        oc.columns(["principal", "key"]).doUpdateSet({
          request_hash: fingerprint,
          method,
          path,
          state: "in_progress",
          response_status: null,
          response_body: null,
          created_at: sql<Date>`now()`,
          locked_at: sql<Date>`now()`,
          completed_at: null,
        }).where((eb) =>
          eb.or([
            eb("idempotency_keys.created_at", "<", sql<Date>`now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`),
            eb.and([
              eb("idempotency_keys.state", "=", "in_progress"),
              eb("idempotency_keys.request_hash", "=", fingerprint),
              eb("idempotency_keys.locked_at", "<", sql<Date>`now() - make_interval(secs => ${ABANDONED_AFTER_SECONDS})`),
            ]),
          ]),
        ),
      )
      .returning("key")
      .executeTakeFirst();
    if (inserted) return { kind: "claimed" };

    const existing = await this.db
      .selectFrom("idempotency_keys")
      .selectAll()
      .where("principal", "=", principal)
      .where("key", "=", key)
      .executeTakeFirst();
    if (!existing) return this.claim(principal, key, method, path, fingerprint); // deleted meanwhile
    if (existing.request_hash !== fingerprint) {
      throw new ApiError(422, "idempotency_key_reused", "This Idempotency-Key was used with a different request; use a new key for a new request");
    }
    if (existing.state === "in_progress") {
      throw new ApiError(409, "request_in_progress", "A request with this Idempotency-Key is still in progress; retry later", {
        headers: { "Retry-After": "1" },
      });
    }
    return { kind: "replay", status: existing.response_status ?? 200, body: existing.response_body };
  }

  async complete(principal: string, key: string, status: number, body: unknown): Promise<void> {
    await this.db
      .updateTable("idempotency_keys")
      .set({ state: "completed", response_status: status, response_body: JSON.stringify(body ?? null), completed_at: sql<Date>`now()` })
      .where("principal", "=", principal)
      .where("key", "=", key)
      .execute();
  }

  /** A server-side failure is not a result: free the key so the client can retry. */
  async release(principal: string, key: string): Promise<void> {
    await this.db.deleteFrom("idempotency_keys").where("principal", "=", principal).where("key", "=", key).execute();
  }

  async purgeExpired(): Promise<number> {
    const res = await this.db
      .deleteFrom("idempotency_keys")
      .where("created_at", "<", sql<Date>`now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`)
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
