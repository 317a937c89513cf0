export type Fetch = (request: Request) => Promise<Response>;

export interface RetryOptions {
  /** Retries after the first attempt (default 2; 0 turns retrying off). */
  maxRetries?: number | undefined;
  /** First backoff when the API names no delay; doubled each retry, ±25 % (default 500 ms). */
  baseDelayMs?: number | undefined;
  /** A longer Retry-After is not waited for: the answer is returned (and raised) as it is (default 30 s). */
  maxDelayMs?: number | undefined;
  sleep?: ((ms: number) => Promise<void>) | undefined;
}

/** Methods a retry cannot repeat the effect of; a POST is one only with an Idempotency-Key. */
const REPEATABLE = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);
const TRANSIENT_STATUSES = new Set([429, 502, 503, 504]);

/**
 * `fetch` with retries of what is safe to repeat: a lost connection, 429 and 502-504 (after their
 * Retry-After), and 409 `request_in_progress` (the first attempt of the same Idempotency-Key is
 * still running; the retry gets its stored answer). Each attempt sends a copy of the request, so
 * the body is sent whole every time and the key is the same.
 */
export function retryingFetch(fetch: Fetch, options: RetryOptions = {}): Fetch {
  const maxRetries = options.maxRetries ?? 2;
  const baseDelayMs = options.baseDelayMs ?? 500;
  const maxDelayMs = options.maxDelayMs ?? 30_000;
  const sleep = options.sleep ?? ((ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const backoff = (retry: number) => baseDelayMs * 2 ** retry * (0.75 + Math.random() * 0.5);

  return async (request) => {
    const repeatable = REPEATABLE.has(request.method) || (request.method === "POST" && request.headers.has("Idempotency-Key"));
    for (let retry = 0; ; retry++) {
      const last = !repeatable || retry >= maxRetries;
      let response: Response;
      try {
        response = await fetch(last ? request : request.clone());
      } catch (error) {
        if (last || request.signal.aborted) throw error;
        await sleep(backoff(retry));
        continue;
      }
      if (last) return response;
      const delay = await retryDelay(response, backoff(retry));
      if (delay === null || delay > maxDelayMs) return response;
      await response.body?.cancel();
      await sleep(delay);
    }
  };
}

/** How long to wait before repeating after `response`, or null when it is an answer to keep. */
async function retryDelay(response: Response, backoffMs: number): Promise<number | null> {
  if (response.status === 409) {
    const body = (await response.clone().json().catch(() => null)) as { code?: string } | null;
    return body?.code === "request_in_progress" ? backoffMs : null;
  }
  if (!TRANSIENT_STATUSES.has(response.status)) return null;
  const retryAfter = response.headers.get("Retry-After");
  if (retryAfter === null) return backoffMs;
  const seconds = /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : (Date.parse(retryAfter) - Date.now()) / 1000;
  return Number.isFinite(seconds) ? Math.max(0, seconds * 1000) : backoffMs;
}
