/**
 * Reorgs: on a Hardhat node of its own (evm_snapshot/evm_revert would disturb the run's shared
 * chain) and a database of its own (Ponder's RPC cache is keyed by chain id, which the two nodes
 * share), a certification that a reorg removes must leave the views, and the replacing block's
 * events must take its place.
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import type { Kysely } from "kysely";
import { createPublicClient, createWalletClient, type Hex, http, keccak256, toHex, zeroAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import type { IndexerViews } from "../../api/src/chain/indexer-schema.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { type HardhatNode, readChainIdentity, startHardhatNode } from "../../tools/stack/chain.ts";
import { deployExchange, deployPlatform } from "../../tools/stack/deploy.ts";
import { dropDatabase, ensureDatabase, withDatabase } from "../../tools/stack/postgres.ts";
import { freePort } from "../../tools/stack/processes.ts";
import { testEnvironment } from "../support/environment.ts";
import { startIndexerForTest, type TestIndexer } from "../support/indexer.ts";
import { waitFor } from "../support/wait.ts";

const env = testEnvironment();
const databaseName = `test_reorg_${randomBytes(4).toString("hex")}`;
let node: HardhatNode;
let artCertificate: Hex;
let indexer: TestIndexer;
let db: ReturnType<typeof createDb>;
let views: Kysely<IndexerViews>;

beforeAll(async () => {
  const [started] = await Promise.all([
    startHardhatNode({ port: await freePort(), logFile: path.join(env.tempDir, `hardhat-node-${databaseName}.log`), detached: false }),
    ensureDatabase(env.serverUrl, databaseName),
  ]);
  node = started;
  const identity = await readChainIdentity(node.rpcUrl);
  const relayer = privateKeyToAccount(env.relayerPrivateKey).address;
  const deployOptions = { rpcUrl: node.rpcUrl, deploymentId: `test-${databaseName}`, logFile: path.join(env.tempDir, `ignition-${databaseName}.log`) };
  const deployment = await deployPlatform({ ...deployOptions, relayer, sharesUri: "http://127.0.0.1:3000/v1/fractional/metadata/{id}.json" });
  const { artExchange } = await deployExchange({ ...deployOptions, certificate: deployment.artCertificate, orderSigner: relayer });
  artCertificate = deployment.artCertificate;
  const databaseUrl = withDatabase(env.serverUrl, databaseName);
  indexer = await startIndexerForTest({
    target: {
      databaseUrl,
      rpcUrl: node.rpcUrl,
      wsUrl: node.wsUrl,
      ...identity,
      artCertificate: deployment.artCertificate,
      artShares: deployment.artShares,
      artMarket: deployment.artMarket,
      auditAnchor: deployment.auditAnchor,
      artExchange,
      startBlock: deployment.startBlock,
    },
  });
  db = createDb(databaseUrl, 2);
  views = db.withTables<IndexerViews>().withSchema(indexer.viewsSchema) as unknown as Kysely<IndexerViews>;
}, 120_000);

afterAll(async () => {
  await indexer?.stop();
  await db?.destroy();
  await node?.stop();
  await dropDatabase(env.serverUrl, databaseName).catch(() => {});
});

it("rolls back the rows of blocks a reorg removed", async () => {
  const client = createPublicClient({ transport: http(node.rpcUrl) });
  const wallet = createWalletClient({ account: privateKeyToAccount(env.relayerPrivateKey), transport: http(node.rpcUrl) });
  const rpc = (method: string, params: unknown[] = []) => client.request({ method, params } as never) as Promise<unknown>;
  const certify = async (artworkId: string) => {
    const hash = await wallet.writeContract({
      address: artCertificate,
      abi: artCertificateAbi,
      functionName: "certify",
      args: [wallet.account.address, artworkId, keccak256(toHex(artworkId)), `ipfs://${artworkId}`, zeroAddress, 0n],
      chain: null,
    });
    return client.waitForTransactionReceipt({ hash, pollingInterval: 5 });
  };
  const certificateOf = (artworkId: string) =>
    views.selectFrom("certificate").selectAll().where("artwork_id", "=", artworkId).executeTakeFirst();
  const transfersOf = async (tokenId: bigint) =>
    views.selectFrom("certificate_transfer").select("tx_hash").where("token_id", "=", tokenId).execute();

  const snapshot = await rpc("evm_snapshot");
  const orphaned = await certify("art_orphaned");
  const before = await waitFor(() => certificateOf("art_orphaned"), { what: "the certificate of the block to be orphaned" });
  expect(before.block_number).toBe(orphaned.blockNumber);

  // The orphaned block is replaced by one at the same height with another certification of token 1.
  expect(await rpc("evm_revert", [snapshot])).toBe(true);
  const replacing = await certify("art_canonical");
  expect(replacing.blockNumber).toBe(orphaned.blockNumber);
  expect(replacing.blockHash).not.toBe(orphaned.blockHash);
  await rpc("evm_mine");

  const canonical = await waitFor(() => certificateOf("art_canonical"), { what: "the certificate of the replacing block" });
  expect(canonical).toMatchObject({ token_id: before.token_id, tx_hash: replacing.transactionHash });
  expect(await certificateOf("art_orphaned")).toBeUndefined();
  expect((await transfersOf(canonical.token_id)).map((t) => t.tx_hash)).toEqual([replacing.transactionHash]);
});
