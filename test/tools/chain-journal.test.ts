/**
 * The local chain's journal on Hardhat nodes of this file's own: what the recorder writes while
 * the chain moves (the node's own accounts, a wallet's signed transfers of three types, a block of
 * several transactions, an empty block, the stack's recorded cheat call, a snapshot reverted)
 * brings a new node started at the journal's genesis time back to the same block hash, balances
 * and clock; a chain changed from outside (hardhat_setBalance, an impersonated account) is refused,
 * naming the block.
 */
import { mkdtempSync } from "node:fs";
import path from "node:path";
import { type Address, createPublicClient, createWalletClient, type Hex, http, parseEther, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { hardhat } from "viem/chains";
import { afterEach, expect, it } from "vitest";
import { bringClockToPresent, type HardhatNode, startHardhatNode } from "../../tools/stack/chain.ts";
import { chainJournalFile, ChainJournalWriter, readChainJournal } from "../../tools/stack/chain-journal.ts";
import { ChainRecorder } from "../../tools/stack/chain-recorder.ts";
import { ChainReplayError, replayChainJournal } from "../../tools/stack/chain-replay.ts";
import { freePort } from "../../tools/stack/processes.ts";
import { testEnvironment } from "../support/environment.ts";

const nodes: HardhatNode[] = [];
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((node) => node.stop()));
});

async function startNode(genesisTime?: Date) {
  const port = await freePort();
  const node = await startHardhatNode({ port, logFile: path.join(testEnvironment().tempDir, `hardhat-node-journal-${port}.log`), detached: false, genesisTime });
  nodes.push(node);
  const publicClient = createPublicClient({ chain: hardhat, transport: http(node.rpcUrl) });
  const request = (method: string, params: unknown[] = []) => publicClient.request({ method, params } as never) as Promise<unknown>;
  return { node, publicClient, request, wallet: (key: Hex) => createWalletClient({ account: privateKeyToAccount(key), chain: hardhat, transport: http(node.rpcUrl) }) };
}

/** A node of its own with a recorder writing a journal in a data dir of its own. */
async function recordedNode(genesisTime?: Date) {
  const chain = await startNode(genesisTime);
  const dataDir = mkdtempSync(path.join(testEnvironment().tempDir, "chain-journal-"));
  const genesis = await chain.publicClient.getBlock({ blockNumber: 0n });
  const writer = ChainJournalWriter.create(chainJournalFile(dataDir), { type: "genesis", chainId: 31337, hash: genesis.hash, timestamp: Number(genesis.timestamp) });
  const recorder = new ChainRecorder({ rpcUrl: chain.node.rpcUrl, wsUrl: chain.node.wsUrl, writer, hashes: [genesis.hash], log: () => {} });
  recorder.start();
  return { ...chain, dataDir, recorder };
}

const devAccount = (chain: Awaited<ReturnType<typeof startNode>>) =>
  createWalletClient({ chain: hardhat, transport: http(chain.node.rpcUrl) });

it("brings the chain back block for block: signed transfers, several transactions a block, the recorded call, a reverted snapshot; the clock comes back to now", async () => {
  const hourAgo = new Date(Math.floor(Date.now() / 1000 - 3600) * 1000);
  const first = await recordedNode(hourAgo);
  const [deployer] = await devAccount(first).getAddresses();
  const walletKey = generatePrivateKey();
  const wallet = first.wallet(walletKey);
  const funded: Address = privateKeyToAccount(generatePrivateKey()).address;

  await devAccount(first).sendTransaction({ account: deployer!, to: wallet.account.address, value: parseEther("5") });
  await first.recorder.recordCall("hardhat_setBalance", [funded, toHex(parseEther("42"))]);
  for (const type of ["legacy", "eip2930", "eip1559"] as const) await wallet.sendTransaction({ to: funded, value: 1n, type });
  await first.request("evm_mine");
  await first.request("evm_setAutomine", [false]);
  await wallet.sendTransaction({ to: funded, value: 2n, maxPriorityFeePerGas: 1n });
  await devAccount(first).sendTransaction({ account: deployer!, to: funded, value: 3n });
  await wallet.sendTransaction({ to: funded, value: 4n, maxPriorityFeePerGas: 1n });
  await first.request("evm_mine");
  await first.request("evm_setAutomine", [true]);
  await first.recorder.flush();
  const beforeSnapshot = await first.publicClient.getBlockNumber();
  const snapshot = await first.request("evm_snapshot");
  await wallet.sendTransaction({ to: funded, value: 1000n });
  await first.recorder.flush();
  expect(await first.request("evm_revert", [snapshot])).toBe(true);
  await wallet.sendTransaction({ to: funded, value: 5n });
  await first.recorder.stop();

  const head = await first.publicClient.getBlock();
  expect(head.number).toBe(beforeSnapshot + 1n);
  const balances = async (chain: { publicClient: typeof first.publicClient }) =>
    Promise.all([funded, wallet.account.address, deployer!].map((address) => chain.publicClient.getBalance({ address })));
  const expected = await balances(first);
  expect(expected[0]).toBe(parseEther("42") + 1n + 1n + 1n + 2n + 3n + 4n + 5n);

  const journal = readChainJournal(first.dataDir)!;
  expect(journal.problem).toBeNull();
  expect(journal.hashes).toHaveLength(Number(head.number) + 1);
  expect(journal.hashes.at(-1)).toBe(head.hash);
  const blocks = journal.entries.filter((entry) => entry.type === "block");
  expect(blocks.map((block) => block.transactions.length)).toContain(3);
  expect(journal.entries.filter((entry) => entry.type === "call")).toEqual([{ type: "call", method: "hardhat_setBalance", params: [funded, toHex(parseEther("42"))] }]);

  const second = await startNode(new Date(journal.genesis.timestamp * 1000));
  expect(await replayChainJournal(second.node.rpcUrl, journal)).toBe(Number(head.number));
  const replayed = await second.publicClient.getBlock();
  expect({ number: replayed.number, hash: replayed.hash }).toEqual({ number: head.number, hash: head.hash });
  expect(await balances(second)).toEqual(expected);

  // Replayed at their hour-old timestamps; then the next block is stamped now.
  expect(Number(replayed.timestamp)).toBeLessThan(Date.now() / 1000 - 3000);
  await bringClockToPresent(second.node.rpcUrl);
  await second.request("evm_mine");
  const next = await second.publicClient.getBlock();
  expect(Math.abs(Number(next.timestamp) - Date.now() / 1000)).toBeLessThan(5);
}, 60_000);

it("refuses a chain whose state was changed from outside the stack, naming the first block that differs", async () => {
  const first = await recordedNode();
  const [deployer] = await devAccount(first).getAddresses();
  const someone = privateKeyToAccount(generatePrivateKey()).address;
  await devAccount(first).sendTransaction({ account: deployer!, to: someone, value: 1n });
  await first.request("hardhat_setBalance", [someone, toHex(parseEther("7"))]);
  await devAccount(first).sendTransaction({ account: deployer!, to: someone, value: 1n });
  await devAccount(first).sendTransaction({ account: deployer!, to: someone, value: 1n });
  await first.recorder.stop();

  const journal = readChainJournal(first.dataDir)!;
  const second = await startNode(new Date(journal.genesis.timestamp * 1000));
  const error = await replayChainJournal(second.node.rpcUrl, journal).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ChainReplayError);
  expect((error as Error).message).toMatch(new RegExp(`^block 2 came out as 0x[0-9a-f]{64} where the journal recorded ${journal.hashes[2]}`));
}, 60_000);

it("marks an impersonated account's transaction as one that cannot be sent again, and refuses to replay it", async () => {
  const first = await recordedNode();
  const impersonated = privateKeyToAccount(generatePrivateKey()).address;
  await first.request("hardhat_setBalance", [impersonated, toHex(parseEther("1"))]);
  await first.request("hardhat_impersonateAccount", [impersonated]);
  await createWalletClient({ chain: hardhat, transport: http(first.node.rpcUrl) }).sendTransaction({ account: impersonated, to: impersonated, value: 1n });
  await first.recorder.stop();

  const journal = readChainJournal(first.dataDir)!;
  const [block] = journal.entries.filter((entry) => entry.type === "block");
  expect(block?.unreplayable).toMatch(/was not signed by its sender .*impersonated/);
  const second = await startNode(new Date(journal.genesis.timestamp * 1000));
  await expect(replayChainJournal(second.node.rpcUrl, journal)).rejects.toThrow(/^block 1 cannot be replayed: transaction 0x[0-9a-f]{64} was not signed by its sender/);
}, 60_000);
