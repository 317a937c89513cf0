/**
 * A database never serves a chain it did not come from: a new local chain (its journal gone) with
 * an old embedded database moves the database aside; an external database recorded for another
 * chain is refused. (A kept chain, brought back from its journal, keeps its database:
 * stack-restart.test.ts.)
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { testEnvironment } from "../support/environment.ts";
import { apiError, sdk } from "../support/sdk.ts";
import { bootStack } from "../support/stack.ts";

describe("chain identity", () => {
  it("refuses to start on an external database that belongs to another chain", async () => {
    // The run's database is recorded for the harness's chain; this stack starts a fresh Hardhat node.
    const error = await bootStack({ env: { DATABASE_URL: testEnvironment().databaseUrl } }).then(
      async (stack) => {
        await stack.dispose();
        return null;
      },
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error!.message).toMatch(/refusing to start: the database belongs to a chain with genesis block/);
  }, 120_000);

  it("moves an old local database aside when the local chain is new, and starts clean", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "art-platform-identity-"));
    try {
      const first = await bootStack({ env: { DATA_DIR: dataDir } });
      const firstKey = first.adminApiKey;
      expect((await first.stop()).code).toBe(0);
      // Without its journal the local chain cannot come back: the next start runs a new one.
      rmSync(path.join(dataDir, "chain"), { recursive: true });

      const second = await bootStack({ env: { DATA_DIR: dataDir } });
      try {
        expect(second.output()).toMatch(/The local database belongs to another chain \(the database belongs to a chain with genesis block/);
        expect(second.output()).toMatch(/Moved it aside to \S*archive\/\S+\/postgres and starting with an empty database/);
        expect(second.output()).toMatch(/Archived:\s+\S+ \(the earlier data; the database belonged to another chain/);
        const archived = readdirSync(path.join(dataDir, "archive"));
        expect(archived).toHaveLength(1);
        expect(readdirSync(path.join(dataDir, "archive", archived[0]!))).toEqual(["postgres"]);
        expect(existsSync(path.join(dataDir, "archive", archived[0]!, "postgres", "PG_VERSION"))).toBe(true);
        // A clean database: a new admin, and the old key no longer works.
        expect(second.adminApiKey).toMatch(/\S{20,}/);
        expect(second.adminApiKey).not.toBe(firstKey);
        const old = await apiError(sdk(second.url).POST("/v1/auth/token", { body: { api_key: firstKey!, scope: ["read"] } }));
        expect(old.status).toBe(401);
      } finally {
        await second.dispose();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);
});
