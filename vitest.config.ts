import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // test/contracts/** belongs to Hardhat's runner (npm run test:contracts).
    exclude: ["test/contracts/**", "node_modules/**"],
    // One Postgres, one Hardhat node and one deployment for the whole run (test/support/global-setup.ts).
    globalSetup: ["test/support/global-setup.ts"],
    setupFiles: ["test/support/setup-file.ts"],
    pool: "forks",
    fileParallelism: true,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
  },
});
