import { type Chain, createPublicClient, defineChain, type Hex, http, type PrivateKeyAccount, type PublicClient, type Transport } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import * as knownChains from "viem/chains";

export interface ChainClientsOptions {
  rpcUrl: string;
  chainId: number;
  /** Display name for a chain viem does not know (default `chain-<id>`). */
  chainName?: string | undefined;
  relayerPrivateKey: Hex;
  /** Per HTTP request (default 10 s): a hung node must surface as a TimeoutError, not a stuck job. */
  timeoutMs?: number | undefined;
  /** Retries of a failed HTTP request, with exponential backoff from 150 ms (default 2). */
  retryCount?: number | undefined;
  /** How often receipts and blocks are polled (default 200 ms on 31337, else from the chain's block time). */
  pollingIntervalMs?: number | undefined;
}

export interface ChainClients {
  chain: Chain;
  publicClient: PublicClient<Transport, Chain>;
  relayerAccount: PrivateKeyAccount;
}

const HARDHAT_CHAIN_ID = 31_337;
// Typed loosely on purpose: the union of every chain's literal type is too heavy for the compiler.
const viemChains = Object.values(knownChains as unknown as Record<string, Chain | undefined>);

/**
 * The viem clients of the configured chain. Nothing is requested here: a node that is down shows up
 * on the first call (as a TransientChainError once classified), never at startup.
 */
export function createChainClients(options: ChainClientsOptions): ChainClients {
  const chain = chainFor(options);
  const publicClient = createPublicClient({
    chain,
    transport: http(options.rpcUrl, { timeout: options.timeoutMs ?? 10_000, retryCount: options.retryCount ?? 2 }),
    pollingInterval: options.pollingIntervalMs ?? (chain.id === HARDHAT_CHAIN_ID ? 200 : undefined),
  });
  return { chain, publicClient, relayerAccount: privateKeyToAccount(options.relayerPrivateKey) };
}

/**
 * viem's definition of a known chain id (its fee estimation, formatters and block explorers, e.g.
 * for OP-stack receipts), pointed at our RPC URL; otherwise a plain EVM chain.
 */
function chainFor({ rpcUrl, chainId, chainName }: ChainClientsOptions): Chain {
  const rpcUrls = { default: { http: [rpcUrl] } };
  const known: Chain | undefined =
    chainId === HARDHAT_CHAIN_ID ? knownChains.hardhat : viemChains.find((c) => typeof c === "object" && c?.id === chainId);
  if (known) return defineChain({ ...known, name: chainName ?? known.name, rpcUrls });
  return defineChain({
    id: chainId,
    name: chainName ?? `chain-${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls,
  });
}
