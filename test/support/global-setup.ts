/**
 * Once per `vitest run`: a Postgres database, a Hardhat node and the deployed contracts, shared by
 * every test file through `inject("testEnvironment")` (see environment.ts). Tests create their own
 * data, so they can share them and run in parallel. The indexer is not started here: tests that
 * need one call startIndexerForTest() (indexer.ts).
 *
 * Postgres: TEST_DATABASE_URL (a server URL; a fresh database `test_<random>` is created there and
 * dropped at teardown), else an embedded Postgres in a temporary directory, without fsync.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { createDb } from "../../api/src/db/connection.ts";
import { conformanceDir, coverageReport } from "./conformance.ts";
import { migrateToLatest } from "../../api/src/db/migrate.ts";
import { moduleMigrations } from "../../api/src/modules/index.ts";
import { readChainIdentity, startHardhatNode } from "../../tools/stack/chain.ts";
import { recordChainDeployment } from "../../api/src/chain/chain-identity.ts";
import { deployExchange, deployPlatform } from "../../tools/stack/deploy.ts";
import { dropDatabase, ensureDatabase, startEmbeddedPostgres, withDatabase } from "../../tools/stack/postgres.ts";
import { freePort } from "../../tools/stack/processes.ts";
import { HARDHAT_ACCOUNT_0_KEY } from "../../tools/stack/settings.ts";
import type { TestEnvironment } from "./environment.ts";

const RELAYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"; // account #0, the key below

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = performance.now();
  const timings: Record<string, number> = {};
  const time = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const t = performance.now();
    try {
      return await fn();
    } finally {
      timings[name] = Math.round(performance.now() - t);
    }
  };
  const tempDir = mkdtempSync(path.join(os.tmpdir(), "art-platform-test-"));
  const cleanups: Array<() => Promise<void>> = [];
  const teardown = async () => {
    const conformance = conformanceSummary(tempDir);
    for (const cleanup of cleanups.reverse()) await cleanup().catch((e: Error) => console.error(`[test harness] ${e.message}`));
    if (process.env.KEEP_TEST_DIR !== "1") rmSync(tempDir, { recursive: true, force: true });
    if (conformance) throw new Error(conformance);
  };

  try {
    const database = time("postgres", async () => {
      const name = `test_${randomBytes(6).toString("hex")}`;
      let serverUrl: string;
      if (process.env.TEST_DATABASE_URL) {
        serverUrl = withDatabase(process.env.TEST_DATABASE_URL, "postgres");
      } else {
        const pg = await startEmbeddedPostgres({
          dataDir: path.join(tempDir, "postgres"),
          port: await freePort(),
          logFile: path.join(tempDir, "postgres.log"),
          durable: false,
          detached: false,
        });
        cleanups.push(() => pg.stop());
        serverUrl = pg.url("postgres");
      }
      await ensureDatabase(serverUrl, name);
      if (process.env.TEST_DATABASE_URL) cleanups.push(() => dropDatabase(serverUrl, name));
      const databaseUrl = withDatabase(serverUrl, name);
      const db = createDb(databaseUrl, 2);
      try {
        await migrateToLatest(db, moduleMigrations);
      } finally {
        await db.destroy();
      }
      return { serverUrl, databaseUrl };
    });

    const chain = time("chain", async () => {
      const node = await startHardhatNode({ port: await freePort(), logFile: path.join(tempDir, "hardhat-node.log"), detached: false });
      cleanups.push(() => node.stop());
      const identity = await readChainIdentity(node.rpcUrl);
      const deploymentId = `test-${randomBytes(6).toString("hex")}`;
      const logFile = path.join(tempDir, "ignition.log");
      const deployment = await deployPlatform({
        rpcUrl: node.rpcUrl,
        relayer: RELAYER,
        sharesUri: "http://127.0.0.1:3000/v1/fractional/metadata/{id}.json",
        deploymentId,
        logFile,
      });
      const exchange = await deployExchange({ rpcUrl: node.rpcUrl, certificate: deployment.artCertificate, orderSigner: RELAYER, deploymentId, logFile });
      return { node, identity, deployment, exchange };
    });

    // Both settle before anything is torn down, so no cleanup is registered after teardown ran.
    const [databaseResult, chainResult] = await Promise.allSettled([database, chain]);
    if (databaseResult.status === "rejected") throw databaseResult.reason;
    if (chainResult.status === "rejected") throw chainResult.reason;
    const { serverUrl, databaseUrl } = databaseResult.value;
    const { node, identity, deployment, exchange } = chainResult.value;
    const db = createDb(databaseUrl, 1);
    await recordChainDeployment(db, { ...identity, ...deployment, ...exchange }).finally(() => db.destroy());

    const environment: TestEnvironment = {
      databaseUrl,
      serverUrl,
      rpcUrl: node.rpcUrl,
      wsUrl: node.wsUrl,
      chainId: identity.chainId,
      genesisHash: identity.genesisHash,
      artCertificateAddress: deployment.artCertificate,
      artSharesAddress: deployment.artShares,
      artMarketAddress: deployment.artMarket,
      auditAnchorAddress: deployment.auditAnchor,
      artForwarderAddress: deployment.artForwarder,
      artExchangeAddress: exchange.artExchange,
      paymentTokenAddress: exchange.paymentToken,
      startBlock: deployment.startBlock,
      relayerPrivateKey: HARDHAT_ACCOUNT_0_KEY,
      tempDir,
    };
    project.provide("testEnvironment", environment);
    console.log(
      `[test harness] ready in ${Math.round(performance.now() - started)} ms ` +
        `(postgres+migrations ${timings.postgres} ms, hardhat node+deploy ${timings.chain} ms; logs in ${tempDir})`,
    );
  } catch (error) {
    await teardown();
    throw error;
  }
  return teardown;
}

/**
 * The run's conformance coverage (test/support/conformance.ts), printed; with
 * CONFORMANCE_COVERAGE=required (`npm test`), what fails the run: an operation the suite never got
 * a documented success or refusal from, or a violation recorded. Null when nothing fails.
 */
function conformanceSummary(tempDir: string): string | null {
  const report = coverageReport(conformanceDir(tempDir));
  if (report.answered === 0) return null;
  console.log(
    `[conformance] ${report.answers} answers checked (${report.statuses} operation and status pairs); ${report.answered} of ${report.operations} operations answered; without a documented success: ${report.noSuccess.length}, ` +
      `without a documented refusal: ${report.noRefusal.length}; violations recorded: ${report.violations.length}`,
  );
  if (process.env.CONFORMANCE === "record" && report.violations.length) console.log(report.violations.join("\n"));
  if (process.env.CONFORMANCE_COVERAGE !== "required") return null;
  const gaps = [...report.noSuccess.map((id) => `${id}: no documented success`), ...report.noRefusal.map((id) => `${id}: no documented refusal`), ...report.violations];
  return gaps.length ? `The suite does not cover every operation both ways, or got undocumented answers (test/support/conformance.ts):\n- ${gaps.join("\n- ")}` : null;
}
