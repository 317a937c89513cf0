/**
 * Two worker processes signing with one relayer key: two Relayer instances, each with a database
 * pool of its own (as two processes have), send concurrently through the shared Hardhat node. With
 * `sharedNonces` they take the account's advisory lock in turn: every transaction is mined, on
 * distinct consecutive nonces, none replaced or refused.
 */
import { randomBytes } from "node:crypto";
import pino from "pino";
import { keccak256, toBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { createChainClients } from "../../api/src/chain/clients.ts";
import { Relayer } from "../../api/src/chain/relayer.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { freshRelayerKey, publicClient } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";

const env = testEnvironment();
const logger = pino({ level: "silent" });
const pools = [createDb(env.databaseUrl, 2), createDb(env.databaseUrl, 2)];
let key: `0x${string}`;

beforeAll(async () => {
  key = await freshRelayerKey();
});
afterAll(async () => {
  for (const db of pools) await db.destroy();
});

function relayerOn(db: (typeof pools)[number]): Relayer {
  // Clients of its own too: nothing shared but the database and the node, as between processes.
  const { chain, publicClient, relayerAccount } = createChainClients({ rpcUrl: env.rpcUrl, chainId: env.chainId, relayerPrivateKey: key });
  return new Relayer({ publicClient, account: relayerAccount, chain, logger, receiptTimeoutMs: 20_000, sharedNonces: db });
}

it("sends from two relayers with one key and two pools concurrently: all mined, distinct consecutive nonces, nothing replaced", async () => {
  const address = privateKeyToAccount(key).address;
  const client = publicClient();
  const startNonce = await client.getTransactionCount({ address, blockTag: "pending" });
  const [a, b] = pools.map(relayerOn);
  const run = randomBytes(4).toString("hex");
  const certify = (relayer: Relayer, i: number) => {
    const artworkId = `art_shared_${run}_${i}`;
    return relayer.write({
      address: env.artCertificateAddress,
      abi: artCertificateAbi,
      functionName: "certify",
      args: [address, artworkId, keccak256(toBytes(artworkId)), `https://example.test/${artworkId}`, address, 500n],
      label: `certify ${artworkId}`,
    });
  };
  const n = 15;
  const results = await Promise.all(Array.from({ length: 2 * n }, (_, i) => certify(i % 2 === 0 ? a! : b!, i)));

  expect(results.every((r) => r.receipt.status === "success")).toBe(true);
  const nonces = results.map((r) => r.nonce).sort((x, y) => x - y);
  expect(nonces).toEqual(Array.from({ length: 2 * n }, (_, i) => startNonce + i));
  expect(new Set(results.map((r) => r.hash)).size).toBe(2 * n);
  // Every transaction sent is the one mined with its nonce (no replacement by the other relayer).
  for (const r of results) expect((await client.getTransaction({ hash: r.hash })).nonce).toBe(r.nonce);
  expect(await client.getTransactionCount({ address })).toBe(startNonce + 2 * n);
}, 60_000);
