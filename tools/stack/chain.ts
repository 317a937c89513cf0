import path from "node:path";
import { type Address, createPublicClient, type Hex, http, parseEther, type PublicClient } from "viem";
import { binPath, childEnv, type ManagedProcess, portInUse, repoRoot, spawnManaged, waitUntil } from "./processes.ts";

export interface HardhatNode {
  rpcUrl: string;
  /** Hardhat's node serves websocket subscriptions on its http port. */
  wsUrl: string;
  process: ManagedProcess;
  stop(): Promise<void>;
}

export interface HardhatNodeOptions {
  port: number;
  logFile: string;
  detached?: boolean;
  /** Another chain id than Hardhat's 31337 (a stand-in for a public chain). */
  chainId?: number;
  /** The genesis block's time (default now): a chain brought back from its journal starts from its own. */
  genesisTime?: Date;
}

const NODE_CONFIG = path.join(repoRoot, "tools", "stack", "hardhat-node.config.ts");

/** Starts `hardhat node` (one process; it logs every RPC call to `logFile`) and waits for eth_chainId. */
export async function startHardhatNode({ port, logFile, detached, chainId, genesisTime }: HardhatNodeOptions): Promise<HardhatNode> {
  if (await portInUse(port)) {
    throw new Error(`Port ${port} is taken, so the Hardhat node cannot start (set HARDHAT_NODE_PORT, or CHAIN_RPC_URL to use a running chain)`);
  }
  const child = spawnManaged({
    name: "hardhat node",
    command: binPath("hardhat"),
    args: [
      "--config", NODE_CONFIG,
      "node", "--hostname", "127.0.0.1", "--port", String(port),
      ...(chainId === undefined ? [] : ["--chain-id", String(chainId)]),
    ],
    logFile,
    env: childEnv({ HARDHAT_NODE_INITIAL_DATE: genesisTime?.toISOString() }),
    detached,
  });
  const rpcUrl = `http://127.0.0.1:${port}`;
  await waitUntil(() => chainIdAt(rpcUrl), {
    timeoutMs: 60_000,
    intervalMs: 100,
    what: `Hardhat node on port ${port}`,
    abort: child.exited,
  }).catch(async (error: Error) => {
    await child.stop("SIGTERM", 5_000);
    throw new Error(`${error.message}; see ${logFile}`);
  });
  return {
    rpcUrl,
    wsUrl: `ws://127.0.0.1:${port}`,
    process: child,
    async stop() {
      await child.stop("SIGINT", 10_000);
    },
  };
}

export function chainClient(rpcUrl: string): PublicClient {
  return createPublicClient({ transport: http(rpcUrl, { retryCount: 0, timeout: 10_000 }) });
}

/** A JSON-RPC call of a method viem has no type for (Hardhat's evm_* and hardhat_* methods). */
export function untypedRequest(client: PublicClient): (method: string, params?: unknown[]) => Promise<unknown> {
  return (method, params = []) => client.request({ method, params } as never) as Promise<unknown>;
}

export async function chainIdAt(rpcUrl: string): Promise<number> {
  return chainClient(rpcUrl).getChainId();
}

/** What identifies one chain instance: a reset Hardhat node keeps its chain id but not its genesis. */
export interface ChainIdentity {
  chainId: number;
  genesisHash: Hex;
}

export async function readChainIdentity(rpcUrl: string): Promise<ChainIdentity> {
  const client = chainClient(rpcUrl);
  const [chainId, genesis] = await Promise.all([client.getChainId(), client.getBlock({ blockNumber: 0n })]);
  return { chainId, genesisHash: genesis.hash };
}

/** Whether contract code exists at every one of `addresses`. */
export async function hasCode(rpcUrl: string, addresses: Address[]): Promise<boolean> {
  const client = chainClient(rpcUrl);
  const codes = await Promise.all(addresses.map((address) => client.getCode({ address })));
  return codes.every((code) => code !== undefined && code !== "0x");
}

/** Chains whose dev accounts and instant mining the stack may use: Hardhat's and Anvil's/Ganache's. */
export function isLocalChainId(chainId: number): boolean {
  return chainId === 31337 || chainId === 1337;
}

/**
 * A node started in the past (a replayed chain's genesis time) keeps its clock behind by as much:
 * moved forward, so that the next block's timestamp is now again. Not a block, so nothing to record.
 */
export async function bringClockToPresent(rpcUrl: string): Promise<void> {
  const request = untypedRequest(chainClient(rpcUrl));
  // evm_increaseTime answers the clock's offset from the wall clock in seconds (a string).
  const offset = Number(await request("evm_increaseTime", [0]));
  if (offset < 0) await request("evm_increaseTime", [-offset]);
}

/**
 * A key other than the dev accounts starts with no ether on a fresh local chain: give it 10,000.
 * `call` makes the cheat call (the stack's goes through its chain recorder, so a replay makes it too).
 */
export async function fundLocalAccount(
  rpcUrl: string,
  account: Address,
  call = untypedRequest(chainClient(rpcUrl)),
): Promise<void> {
  if ((await chainClient(rpcUrl).getBalance({ address: account })) > 0n) return;
  await call("hardhat_setBalance", [account, `0x${parseEther("10000").toString(16)}`]).catch(() => {});
}

/** The head and the receipts of the chain at `rpcUrl`, as databaseAheadOfChain asks them. */
export function chainReader(rpcUrl: string): { head(): Promise<bigint>; hasReceipt(hash: Hex): Promise<boolean> } {
  const client = chainClient(rpcUrl);
  return {
    head: () => client.getBlockNumber({ cacheTime: 0 }),
    // Only "no such receipt" is an answer; an RPC that fails says nothing about the chain.
    hasReceipt: (hash) =>
      client.getTransactionReceipt({ hash }).then(
        () => true,
        (error: Error) => {
          if (error.name === "TransactionReceiptNotFoundError") return false;
          throw error;
        },
      ),
  };
}
