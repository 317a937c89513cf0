export interface WaitForOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Named in the timeout error. */
  what?: string;
}

/**
 * Calls `fn` until it returns something other than undefined, null or false without throwing
 * (assertions inside it may throw), and returns that. After `timeoutMs` (default 10 s) it throws
 * the last error, or a timeout error.
 */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 25, what = "condition" }: WaitForOptions = {},
): Promise<Exclude<T, undefined | null | false>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined && value !== null && value !== false) return value as Exclude<T, undefined | null | false>;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      if (lastError) throw lastError;
      throw new Error(`waitFor: ${what} not met within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * `signal` (a promise the code resolves once something has happened: a drained queue, an idle
 * component), or a rejection naming `what` after `timeoutMs`: a signal that never comes fails the
 * test with its name rather than at the test's timeout.
 */
export async function signalled<T>(signal: Promise<T>, what: string, timeoutMs = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not signalled within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([signal, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What a test records as it goes (a fake's calls, a client's answers, a receiver's requests), and
 * waits on: `until(test, what)` resolves once the records pass `test` (at once if they already
 * do), checked after each `push`; no polling. A condition that never comes fails naming `what`.
 */
export class Recording<T> {
  readonly items: T[] = [];
  private readonly waiters: { test: (items: readonly T[]) => boolean; resolve: () => void }[] = [];

  push(...items: T[]): void {
    this.items.push(...items);
    for (const waiter of [...this.waiters]) {
      if (!waiter.test(this.items)) continue;
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }

  get length(): number {
    return this.items.length;
  }

  until(test: (items: readonly T[]) => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    if (test(this.items)) return Promise.resolve();
    return signalled(new Promise<void>((resolve) => this.waiters.push({ test, resolve })), what, timeoutMs);
  }
}
