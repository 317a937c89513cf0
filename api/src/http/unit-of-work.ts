import type { Transact } from "../db/transact.ts";
import { ApiError } from "../lib/errors.ts";
import { type ClaimedKey, IdempotencyClaimLost, type IdempotencyStore } from "./idempotency.ts";

/** A result as HTTP: its status and body. */
export interface Answer {
  status: number;
  body: unknown;
}

/**
 * A write request's unit of work (`transaction`, one per request) and the Idempotency-Key it
 * claimed, if any, which the request's outcome settles: its answer (or a 4xx refusal) is stored,
 * bytes or a 5xx free the key, and an answer stored by the transaction stands against any failure.
 */
export class RequestUnitOfWork {
  readonly transaction: Transact;
  /** Set once the unit of work committed: its answer is stored, and nothing after it may free the key. */
  private committed: { result: unknown } | null = null;
  private used = false;

  constructor(
    private readonly idempotency: IdempotencyStore,
    private readonly claim: ClaimedKey | null,
    answerOf: (value: unknown) => Answer,
    /** The route, `POST /v1/artworks`, for the error of a second unit of work. */
    route: string,
  ) {
    const once = async <T>(run: () => Promise<T>): Promise<T> => {
      if (this.used) throw new Error(`${route} ran a second unit of work: one transaction per request`);
      this.used = true;
      const result = await run();
      this.committed = claim ? { result } : null;
      return result;
    };
    const transaction: Transact = (work) => once(() => idempotency.transaction(claim, work, answerOf));
    transaction.selfCommitting = (work) => once(() => idempotency.selfCommitting(claim, work, answerOf));
    this.transaction = transaction;
  }

  /** The handler answered JSON: stored under the key unless its unit of work stored this very result. */
  async answered(result: unknown, answer: Answer): Promise<void> {
    if (this.claim && (!this.committed || this.committed.result !== result)) await this.idempotency.complete(this.claim, answer.status, answer.body ?? null);
  }

  /** Bytes are not stored for replay: a key used with such a route stays free for a retry. */
  async answeredBytes(): Promise<void> {
    if (this.claim && !this.committed) await this.idempotency.release(this.claim);
  }

  /** After the commit the stored answer stands; a lost key is the retry's that took it over. */
  async failed(err: unknown, problemOf: (err: ApiError) => unknown): Promise<void> {
    if (!this.claim || this.committed || err instanceof IdempotencyClaimLost) return;
    if (err instanceof ApiError && err.status < 500) await this.idempotency.complete(this.claim, err.status, problemOf(err));
    else await this.idempotency.release(this.claim);
  }
}
