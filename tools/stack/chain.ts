import { type Address, createPublicClient, type Hex, http, parseEther, type PublicClient } from "viem";
import { binPath, childEnv, type ManagedProcess, portInUse, spawnManaged, waitUntil } from "./processes.ts";

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
}

/** Starts `hardhat node` (one process; it logs every RPC call to `logFile`) and waits for eth_chainId. */
export async function startHardhatNode({ port, logFile, detached, chainId }: HardhatNodeOptions): Promise<HardhatNode> {
  if (await portInUse(port)) {
    throw new Error(`Port ${port} is taken, so the Hardhat node cannot start (set HARDHAT_NODE_PORT, or CHAIN_RPC_URL to use a running chain)`);
  }
  const child = spawnManaged({
    name: "hardhat node",
    command: binPath("hardhat"),
    args: ["node", "--hostname", "127.0.0.1", "--port", String(port), ...(chainId === undefined ? [] : ["--chain-id", String(chainId)])],
    logFile,
    env: childEnv(),
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

/** A key other than the dev accounts starts with no ether on a fresh local chain: give it 10,000. */
export async function fundLocalAccount(rpcUrl: string, account: Address): Promise<void> {
  const client = chainClient(rpcUrl);
  if ((await client.getBalance({ address: account })) > 0n) return;
  await client
    .request({ method: "hardhat_setBalance", params: [account, `0x${parseEther("10000").toString(16)}`] } as never)
    .catch(() => {});
}
