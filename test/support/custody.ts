import { english, generateMnemonic } from "viem/accounts";

/**
 * The custody wallet of the test servers the current test file starts (tests derive users' keys from
 * it to act as their wallets). One per file: every file's users count custody indexes from 0 in a
 * database of their own, on the run's one chain, and a worker runs several files (vitest.config.ts
 * isolate), so a mnemonic shared by two files would give their users the same addresses. Kept on
 * globalThis: setup-file.ts renews it before each file, whichever instance of this module it loads.
 */
const KEY = Symbol.for("art-platform.test.custodyMnemonic");
const state = globalThis as { [KEY]?: string };

export function custodyMnemonic(): string {
  return (state[KEY] ??= generateMnemonic(english));
}

/** A new custody wallet for the next test file (test/support/setup-file.ts). */
export function renewCustodyMnemonic(): void {
  state[KEY] = generateMnemonic(english);
}
