import { createConfig } from "ponder";
import { getAddress, isAddress } from "viem";
import { artCertificateAbi } from "../contracts/abi/ArtCertificate.ts";
import { artExchangeAbi } from "../contracts/abi/ArtExchange.ts";
import { artMarketAbi } from "../contracts/abi/ArtMarket.ts";
import { artSharesAbi } from "../contracts/abi/ArtShares.ts";
import { auditAnchorAbi } from "../contracts/abi/AuditAnchor.ts";

// This file is the indexer's own configuration: it reads its settings from the environment, which
// the stack (tools/stack/indexer.ts) or an operator sets.
function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`The indexer needs ${name} (see tools/stack/indexer.ts).`);
  return value;
}

function address(name: string): `0x${string}` {
  const value = required(name);
  if (!isAddress(value, { strict: false })) throw new Error(`${name} is not an address: ${value}`);
  return getAddress(value);
}

const chainId = Number(process.env.CHAIN_ID ?? 31337);
const startBlock = Number(process.env.CONTRACTS_START_BLOCK ?? 0);
// A local chain mines on demand, so polling it often costs nothing; a public RPC gets 1 s.
const localChain = chainId === 31337 || chainId === 1337;
const pollingInterval = Number(process.env.INDEXER_POLLING_INTERVAL_MS ?? (localChain ? 100 : 1000));
// Ponder rate-limits each RPC endpoint adaptively from 20 requests/s up (made for hosted providers)
// and needs about two requests per block. A local node mines a block per transaction, so a burst of
// certifications would wait on that limiter (10 blocks/s): listing the same local endpoint several
// times gives each its own budget. Hosted RPCs keep one entry and Ponder's limiter.
const rpcUrl = required("CHAIN_RPC_URL");
const rpc = localChain ? Array.from({ length: Number(process.env.INDEXER_LOCAL_RPC_FANOUT ?? 8) }, () => rpcUrl) : rpcUrl;

export default createConfig({
  database: {
    kind: "postgres",
    connectionString: required("DATABASE_URL"),
    poolConfig: { max: Number(process.env.INDEXER_DB_POOL_MAX ?? 12) },
  },
  ordering: "omnichain",
  chains: {
    chain: {
      id: chainId,
      rpc,
      // New heads over a websocket subscription (Hardhat's node serves ws on its http port): about
      // 25 ms block -> row instead of a polling interval; Ponder falls back to polling on ws errors.
      ws: process.env.CHAIN_WS_URL || undefined,
      pollingInterval,
    },
  },
  contracts: {
    ArtCertificate: {
      chain: "chain",
      abi: artCertificateAbi,
      address: address("ART_CERTIFICATE_ADDRESS"),
      startBlock,
    },
    ArtShares: {
      chain: "chain",
      abi: artSharesAbi,
      address: address("ART_SHARES_ADDRESS"),
      startBlock,
    },
    ArtMarket: {
      chain: "chain",
      abi: artMarketAbi,
      address: address("ART_MARKET_ADDRESS"),
      startBlock,
    },
    AuditAnchor: {
      chain: "chain",
      abi: auditAnchorAbi,
      address: address("AUDIT_ANCHOR_ADDRESS"),
      startBlock,
    },
    // Required like the others: Ponder refuses handlers (src/ArtExchange.ts) of a contract absent from here.
    ArtExchange: {
      chain: "chain",
      abi: artExchangeAbi,
      address: address("ART_EXCHANGE_ADDRESS"),
      startBlock,
    },
  },
});
