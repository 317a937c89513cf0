/**
 * The local chain's journaled RPC (tools/stack/journaled-rpc.ts) on a Hardhat node of this file's
 * own: an answer that could tell of a block comes only once the journal holds it (the recorder's
 * reads are held at a gate the test opens: the node has mined, the client still waits); cheats
 * through it are journaled in place and replay; a journal that cannot be written withholds the
 * node's answer; websockets pass through.
 */
import { mkdtempSync } from "node:fs";
import path from "node:path";
import { createPublicClient, createWalletClient, http, parseEther, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { hardhat } from "viem/chains";
import { afterEach, expect, it } from "vitest";
import { type HardhatNode, startHardhatNode } from "../../tools/stack/chain.ts";
import { chainJournalFile, ChainJournalWriter, readChainJournal } from "../../tools/stack/chain-journal.ts";
import { ChainRecorder } from "../../tools/stack/chain-recorder.ts";
import { replayChainJournal } from "../../tools/stack/chain-replay.ts";
import { type JournaledRpc, startJournaledRpc } from "../../tools/stack/journaled-rpc.ts";
import { freePort } from "../../tools/stack/processes.ts";
import { testEnvironment } from "../support/environment.ts";
import { type JsonRpcCall, type JsonRpcProxy, startJsonRpcProxy } from "../support/rpc-proxy.ts";
import { Recording } from "../support/wait.ts";

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

async function startNode(genesisTime?: Date): Promise<HardhatNode> {
  const port = await freePort();
  const node = await startHardhatNode({ port, logFile: path.join(testEnvironment().tempDir, `hardhat-node-rpc-${port}.log`), detached: false, genesisTime });
  cleanups.push(() => node.stop());
  return node;
}

/** Holds the recorder's block reads while closed: the journal cannot catch up until the test opens it. */
class Gate {
  readonly held = new Recording<JsonRpcCall>();
  private closed = false;
  private opened: Promise<void> = Promise.resolve();
  private release: () => void = () => {};

  close(): void {
    this.closed = true;
    this.opened = new Promise<void>((resolve) => (this.release = resolve));
  }

  open(): void {
    this.closed = false;
    this.release();
  }

  async pass(calls: JsonRpcCall[]): Promise<"forward"> {
    if (this.closed && calls.some((c) => c.method === "eth_getBlockByNumber")) {
      this.held.push(...calls);
      await this.opened;
    }
    return "forward";
  }
}

/** A node, its recorder (reading the node through a gate) and the journaled RPC in front of it. */
async function journaledNode() {
  const node = await startNode();
  const gate = new Gate();
  const recorderView: JsonRpcProxy = await startJsonRpcProxy(node.rpcUrl, (calls) => gate.pass(calls));
  cleanups.push(() => recorderView.close());
  const dataDir = mkdtempSync(path.join(testEnvironment().tempDir, "journaled-rpc-"));
  const direct = createPublicClient({ chain: hardhat, transport: http(node.rpcUrl) });
  const genesis = await direct.getBlock({ blockNumber: 0n });
  const writer = ChainJournalWriter.create(chainJournalFile(dataDir), { type: "genesis", chainId: 31337, hash: genesis.hash, timestamp: Number(genesis.timestamp) });
  // Not started (no websocket wake-ups, no poll): only the RPC's own catch-ups write.
  const recorder = new ChainRecorder({ rpcUrl: recorderView.url, wsUrl: node.wsUrl, writer, hashes: [genesis.hash], log: () => {} });
  const rpc: JournaledRpc = await startJournaledRpc({ nodeUrl: node.rpcUrl, port: await freePort(), recorder, log: () => {} });
  cleanups.push(() => recorder.stop(), () => rpc.stop());
  const client = createPublicClient({ chain: hardhat, transport: http(rpc.url) });
  const journaledBlocks = () => (readChainJournal(dataDir)?.entries ?? []).flatMap((e) => (e.type === "block" ? [e.number] : []));
  return { node, rpc, recorder, direct, client, dataDir, gate, journaledBlocks, genesisTime: new Date(Number(genesis.timestamp) * 1000) };
}

/** Settles `promise` into a flag the test can read while it is pending. */
function track<T>(promise: Promise<T>) {
  const state = { settled: false, value: undefined as T | undefined, error: undefined as unknown };
  const done = promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  );
  return { state, done };
}

it("answers a transaction only once the journal holds its block: the node has mined it, the sender still waits", async () => {
  const chain = await journaledNode();
  const wallet = createWalletClient({ account: privateKeyToAccount(generatePrivateKey()), chain: hardhat, transport: http(chain.rpc.url) });
  await chain.client.request({ method: "hardhat_setBalance", params: [wallet.account.address, toHex(parseEther("1"))] } as never);
  const before = await chain.direct.getBlockNumber({ cacheTime: 0 });

  // Signed first (its nonce and fees read with the gate open), then sent with the gate closed.
  const signed = await wallet.signTransaction(await wallet.prepareTransactionRequest({ to: wallet.account.address, value: 1n }));
  chain.gate.close();
  const sent = track(chain.client.sendRawTransaction({ serializedTransaction: signed }));
  // The node mined it, and the RPC is catching the journal up (its read of the block is held at the gate).
  await chain.gate.held.until((calls) => calls.length > 0, "the journal's catch-up after the send", 30_000);
  expect(await chain.direct.getBlockNumber({ cacheTime: 0 })).toBe(before + 1n);
  // A full round trip through the RPC meanwhile (a static answer, not held): the send is still unanswered.
  expect(await chain.client.getChainId()).toBe(31337);
  // A read of the head waits too: no one learns of the block before the journal has it.
  const head = track(chain.client.getBlockNumber({ cacheTime: 0 }));
  expect(await chain.client.getChainId()).toBe(31337);
  expect(sent.state.settled).toBe(false);
  expect(head.state.settled).toBe(false);
  expect(chain.journaledBlocks()).not.toContain(Number(before) + 1);

  chain.gate.open();
  await Promise.all([sent.done, head.done]);
  expect(sent.state.error).toBeUndefined();
  expect(head.state.value).toBe(before + 1n);
  expect(chain.journaledBlocks()).toContain(Number(before) + 1);
  const [block] = readChainJournal(chain.dataDir)!.entries.filter((e) => e.type === "block" && e.number === Number(before) + 1);
  expect(block).toMatchObject({ type: "block", transactions: [expect.stringMatching(/^0x02/)] });
  const receipt = await chain.client.getTransactionReceipt({ hash: sent.state.value! });
  expect(receipt.status).toBe("success");
}, 60_000);

it("journals the cheats made through it in place, so a replay gives the same chain; a batch keeps its order", async () => {
  const chain = await journaledNode();
  const someone = privateKeyToAccount(generatePrivateKey());
  const wallet = createWalletClient({ account: someone, chain: hardhat, transport: http(chain.rpc.url) });
  await chain.client.request({ method: "hardhat_setBalance", params: [someone.address, toHex(parseEther("2"))] } as never);
  await chain.client.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: someone.address, value: 1n }) });
  // A batch: a cheat between two reads, answered in order as one array.
  const batch = await fetch(chain.rpc.url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify([
      { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] },
      { jsonrpc: "2.0", id: 2, method: "hardhat_setBalance", params: [someone.address, toHex(parseEther("5"))] },
      { jsonrpc: "2.0", id: 3, method: "eth_getBalance", params: [someone.address, "latest"] },
    ]),
  }).then((r) => r.json() as Promise<Array<{ id: number; result: unknown }>>);
  expect(batch.map((a) => a.id)).toEqual([1, 2, 3]);
  expect(BigInt(batch[2]!.result as string)).toBe(parseEther("5"));
  await chain.client.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: someone.address, value: 1n }) });
  await chain.recorder.stop();

  const journal = readChainJournal(chain.dataDir)!;
  expect(journal.problem).toBeNull();
  expect(journal.entries.filter((e) => e.type === "call").map((e) => e.type === "call" && e.method)).toEqual(["hardhat_setBalance", "hardhat_setBalance"]);
  const second = await startNode(chain.genesisTime);
  const head = await chain.direct.getBlock();
  expect(await replayChainJournal(second.rpcUrl, journal)).toBe(Number(head.number));
  const replayed = createPublicClient({ chain: hardhat, transport: http(second.rpcUrl) });
  expect((await replayed.getBlock()).hash).toBe(head.hash);
  expect(await replayed.getBalance({ address: someone.address })).toBe(await chain.direct.getBalance({ address: someone.address }));
}, 60_000);

it("withholds the node's answer when the journal cannot be written, saying why; websockets pass through", async () => {
  const chain = await journaledNode();
  const ws = new WebSocket(chain.rpc.wsUrl);
  const answer = await new Promise<{ result: string }>((resolve, reject) => {
    ws.addEventListener("open", () => ws.send(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "eth_chainId", params: [] })));
    ws.addEventListener("message", (event) => resolve(JSON.parse(String(event.data)) as { result: string }));
    ws.addEventListener("error", () => reject(new Error("the websocket through the RPC failed")));
  });
  ws.close();
  expect(answer.result).toBe("0x7a69");

  await chain.recorder.stop();
  const res = await fetch(chain.rpc.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }) });
  expect(res.status).toBe(502);
  expect(await res.json()).toEqual({
    jsonrpc: "2.0",
    id: null,
    error: { code: -32603, message: "the chain's journal could not record the node's blocks, so its answer is withheld (the chain journal is closed)" },
  });
  // What tells nothing of the chain still answers.
  expect(await chain.client.getChainId()).toBe(31337);
}, 60_000);
