import canonicalize from "canonicalize";
import type { Kysely, Transaction } from "kysely";
import type { Database, Db } from "../db/database.ts";
import type { ProcessPresence } from "../db/presence.ts";
import { ApiError } from "../lib/errors.ts";
import { sha256Hex } from "../lib/secrets.ts";
import { z } from "../openapi/zod.ts";
import * as repo from "./idempotency.repository.ts";

/**
 * An in-progress key older than this belongs to a request that died; a retry may take it over (at
 * once when the process that claimed it is gone: ProcessPresence).
 */
const ABANDONED_AFTER_SECONDS = 120;
/** Keys are remembered for a day, as Stripe does. */
export const IDEMPOTENCY_TTL_HOURS = 24;

/**
 * A key this request holds. `token` is the claim's `locked_at` (as text, microseconds kept): a
 * request that lost its key to a takeover (its process gone, or 120 s past) can no longer complete
 * or free it.
 */
export type ClaimedKey = repo.KeyHold;

export type IdempotencyClaim =
  | { kind: "claimed"; claim: ClaimedKey }
  | { kind: "replay"; status: number; body: unknown };

/**
 * The key was taken over by a retry while this request ran: its transaction rolls back and the key
 * is the retry's (neither stored nor freed here).
 */
export class IdempotencyClaimLost extends ApiError {
  constructor() {
    super(409, "request_in_progress", "A retry with this Idempotency-Key took it over while this request ran; retry to get its answer", {
      headers: { "Retry-After": "1" },
    });
  }
}

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
 * still running is 409, and one after the first's process died runs it again.
 */
export class IdempotencyStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: {
      /** IDEMPOTENCY_CRASH_AFTER_COMMIT (tests): SIGKILL after a unit of work commits, before the answer is sent. */
      crashAfterCommit?: boolean;
      /** This process's presence: its claims are taken over as soon as it is gone (else after 120 s). */
      presence?: ProcessPresence;
    } = {},
  ) {}

  async claim(principal: string, key: string, method: string, path: string, fingerprint: string): Promise<IdempotencyClaim> {
    const token = await repo.claim(this.db, { principal, key, fingerprint, method, path, holder: this.options.presence?.id ?? null }, { ttlHours: IDEMPOTENCY_TTL_HOURS, abandonedAfterSeconds: ABANDONED_AFTER_SECONDS });
    if (token !== undefined) return { kind: "claimed", claim: { principal, key, token } };

    const existing = await repo.find(this.db, principal, key);
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

  /**
   * Stores the answer inside the business transaction `trx` (Stripe's recovery point): the key row
   * is locked by this UPDATE and committed or rolled back with the change, so a crash can never
   * leave a committed change behind a key that is still "in progress". Takes the row lock last, so
   * a concurrent retry waits only for the commit (then replays) instead of for the whole handler.
   */
  private async completeIn(trx: Transaction<Database>, claim: ClaimedKey, status: number, body: unknown): Promise<void> {
    const stored = await repo.storeAnswer(trx, claim, { status, body }, { inProgressOnly: true });
    if (!stored) throw new IdempotencyClaimLost();
  }

  /**
   * A request's unit of work: `work` in one transaction which, when the request holds a key, also
   * stores `answerOf(result)` under it before committing. Without a key it is a plain transaction.
   */
  async transaction<T>(claim: ClaimedKey | null, work: (trx: Transaction<Database>) => Promise<T>, answerOf: (result: T) => { status: number; body: unknown }): Promise<T> {
    if (!claim) return this.db.transaction().execute(work);
    const result = await this.db.transaction().execute(async (trx) => {
      const value = await work(trx);
      const answer = answerOf(value);
      await this.completeIn(trx, claim, answer.status, answer.body);
      return value;
    });
    // The test hook: a crash after the commit, before the answer is sent (IDEMPOTENCY_CRASH_AFTER_COMMIT).
    if (this.options.crashAfterCommit) process.kill(process.pid, "SIGKILL");
    return result;
  }

  /**
   * A unit of work that is atomic on its own (one statement, or a transaction it opens): with a
   * claim, in the transaction that stores its answer (as `transaction`); without one, on its own
   * (no BEGIN and COMMIT round trips around it), which the work is told (`alone`).
   */
  async selfCommitting<T>(claim: ClaimedKey | null, work: (db: Db, how: { alone: boolean }) => Promise<T>, answerOf: (result: T) => { status: number; body: unknown }): Promise<T> {
    return claim ? this.transaction(claim, (trx) => work(trx, { alone: false }), answerOf) : work(this.db, { alone: true });
  }

  /**
   * Stores an answer outside any business transaction: a refusal (4xx) after the change rolled
   * back, the answer of a handler without a unit of work, or a later answer than the one its
   * transaction stored (a handler that learned more after the commit).
   */
  async complete(claim: ClaimedKey, status: number, body: unknown): Promise<void> {
    await repo.storeAnswer(this.db, claim, { status, body }, { inProgressOnly: false });
  }

  /** A server-side failure is not a result: free the key so the client can retry. */
  async release(claim: ClaimedKey): Promise<void> {
    await repo.release(this.db, claim);
  }

  purgeExpired(): Promise<number> {
    return repo.purgeOlderThan(this.db, IDEMPOTENCY_TTL_HOURS);
  }
}

/** The header every POST takes, as documented (route-openapi.ts) and as checked (ApiRouter). */
export const idempotencyHeaders = z.object({
  "Idempotency-Key": z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, "must be 1-255 printable ASCII characters")
    .optional()
    .openapi({
      param: {
        description: `Makes a retry safe: a request with a key used in the last ${IDEMPOTENCY_TTL_HOURS} h gets the first one's answer again (\`Idempotent-Replayed: true\`); the key with another request is 422, while the first still runs 409. 1-255 printable ASCII characters (a UUID).`,
      },
      example: "5f1d7c8e-9a0b-4c3d-8e2f-1a2b3c4d5e6f",
    }),
});
