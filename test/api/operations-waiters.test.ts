/** Who waits for a chain operation (api/src/chain/operations.waiters.ts): a stopping server's waits end at once. */
import { describe, expect, it } from "vitest";
import { ConfirmationWaiters } from "../../api/src/chain/operations.waiters.ts";

describe("ConfirmationWaiters.release", () => {
  it("ends the waits under way and later ones with what holds, though their timeouts are a minute off", async () => {
    const waiters = new ConfirmationWaiters();
    let checks = 0;
    let started!: () => void;
    const checked = new Promise<void>((resolve) => (started = resolve));
    const underWay = waiters.waitFor("certify:a", async () => {
      checks += 1;
      started();
      return false;
    }, 60_000);
    await checked;
    waiters.release();
    expect(await underWay).toBe(false);
    // Checked once more on waking: the answer says the state as it is then.
    expect(checks).toBe(2);

    expect(await waiters.waitFor("certify:b", async () => false, 60_000)).toBe(false);
    expect(await waiters.waitFor("certify:c", async () => true, 60_000)).toBe(true);
  }, 10_000);
});
