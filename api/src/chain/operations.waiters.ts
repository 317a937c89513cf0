import { EventEmitter } from "node:events";

/** The event that ends every wait (release). */
const RELEASED = Symbol("released");

/** Who waits for an operation to be confirmed: woken when this process confirms it, else re-checking. */
export class ConfirmationWaiters {
  /** Emits an operation's key once this process confirmed it. */
  readonly confirmations = new EventEmitter();
  private released = false;

  constructor() {
    this.confirmations.setMaxListeners(0);
  }

  /**
   * Wakes every waiter for good (its request answers with the state it has, e.g. 202 pending):
   * a stopping server does not hold its answers until their waits run out.
   */
  release(): void {
    this.released = true;
    this.confirmations.emit(RELEASED);
  }

  /** Wakes the waiters of the operations this process has just confirmed. */
  announce(keys: readonly string[]): void {
    for (const key of keys) this.confirmations.emit(key);
  }

  /**
   * Waits until `done()` holds, at most `timeoutMs`; whether it did. Woken at once when this process
   * confirms `key`; otherwise re-checked with backoff (50 ms doubling to 500 ms), since another
   * process may confirm it. A request that answers once its chain write is done waits here.
   */
  async waitFor(key: string, done: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (let pause = 50; ; pause = Math.min(pause * 2, 500)) {
      if (await done()) return true;
      const left = deadline - Date.now();
      if (left <= 0 || this.released) return false;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.confirmations.off(key, wake);
          this.confirmations.off(RELEASED, wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, pause));
        this.confirmations.once(key, wake);
        this.confirmations.once(RELEASED, wake);
      });
    }
  }
}
