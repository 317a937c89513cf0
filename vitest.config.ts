import { defineConfig } from "vitest/config";

/**
 * The slow tier: whole stacks booted with `npm start`, processes killed with SIGKILL, outages and
 * faults (a reorg on a chain of its own, image servers that hang), several API processes, the seed
 * tool, the SDK packed and installed as an integrator gets it. TEST_TIER=fast (`npm test`) leaves it out,
 * TEST_TIER=slow runs it alone (`npm run test:full` runs both, the slow tier one file at a time);
 * a plain `npx vitest run [files]` runs any file.
 */
export const SLOW_TIER = [
  "test/e2e/**",
  "test/api/*-crash.test.ts",
  "test/indexer/reorg.test.ts",
  "test/api/artworks-image-fetch.test.ts",
  "test/tools/seed.test.ts",
  "test/api/sdk-package.test.ts",
];
const tier = process.env.TEST_TIER;

export default defineConfig({
  test: {
    include: tier === "slow" ? SLOW_TIER.map((glob) => (glob.endsWith("**") ? `${glob}/*.test.ts` : glob)) : ["test/**/*.test.ts"],
    // test/contracts/** belongs to Hardhat's runner (npm run test:contracts).
    exclude: ["test/contracts/**", "node_modules/**", ...(tier === "fast" ? SLOW_TIER : [])],
    // One Postgres, one Hardhat node and one deployment for the whole run (test/support/global-setup.ts).
    globalSetup: ["test/support/global-setup.ts"],
    setupFiles: ["test/support/setup-file.ts"],
    pool: "forks",
    fileParallelism: true,
    // In the fast tier a worker runs file after file, importing the API once rather than once a file
    // (about half the tier's CPU went to those imports). Each file still starts its own servers on a
    // database of its own, and gets a custody wallet of its own (setup-file.ts). Other runs (the slow
    // tier's whole stacks and crashes among them) keep a process a file.
    isolate: tier !== "fast",
    // Most files wait on the chain, the indexer and HTTP rather than compute: on 2 cores three
    // files at a time finish sooner than vitest's default of one (cores - 1). TEST_WORKERS overrides.
    maxWorkers: Number(process.env.TEST_WORKERS ?? 3),
    testTimeout: 30_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
  },
});
