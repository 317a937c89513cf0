import path from "node:path";
import { getAddress, type Hex, isAddress, isHex } from "viem";
import type { ExchangeContracts, PlatformContracts } from "../../api/src/chain/chain-identity.ts";
import { repoRoot } from "./processes.ts";

/** Hardhat's well-known dev account #0: the local deployer, and the relayer unless one is set. */
export const HARDHAT_ACCOUNT_0_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

/**
 * What the orchestrator reads from the environment (after `.env`). The API parses its own
 * settings in api/src/config.ts from the overlay the stack hands it; this is the rest.
 *
 *   NODE_ENV=production       no embedded database, chain or deployment: requires DATABASE_URL,
 *                             CHAIN_RPC_URL, ART_CERTIFICATE_ADDRESS, ART_SHARES_ADDRESS, ART_MARKET_ADDRESS,
 *                             AUDIT_ANCHOR_ADDRESS, RELAYER_PRIVATE_KEY, CUSTODY_MNEMONIC; refuses a
 *                             chain/database mismatch
 *   DATA_DIR                  .data (embedded Postgres, chain/ (the local chain's journal), logs/, archive/,
 *                             custody-mnemonic, run/)
 *   DATABASE_URL              unset: embedded Postgres, database art_platform
 *   EMBEDDED_POSTGRES_PORT    55432
 *   CHAIN_RPC_URL             unset: a Hardhat node on 127.0.0.1:HARDHAT_NODE_PORT
 *   CHAIN_WS_URL              unset: the indexer polls (every 100 ms on the local node); set, new heads over it
 *   CHAIN_ID                  checked against eth_chainId when set
 *   HARDHAT_NODE_PORT         8545: the Chain RPC, journaled in front of the node (which takes a free port)
 *   ART_CERTIFICATE_ADDRESS, ART_SHARES_ADDRESS, ART_MARKET_ADDRESS, AUDIT_ANCHOR_ADDRESS
 *                             all four, or none: deployed with Ignition (local chains only)
 *   ART_EXCHANGE_ADDRESS, PAYMENT_TOKEN_ADDRESS
 *                             both, or none: on a local chain ArtExchange and a MockStablecoin are deployed
 *                             (also over a platform deployed before them); required on any other chain
 *   CONTRACTS_START_BLOCK     the deployment's block (recorded), else 0
 *   RELAYER_PRIVATE_KEY       Hardhat dev account #0 (local only)
 *   CUSTODY_MNEMONIC          generated once into DATA_DIR/custody-mnemonic (local only)
 *   PONDER_PORT               42069 (the indexer's /health, /ready, /status)
 *   INDEXER_VIEWS_SCHEMA      chain
 *   INDEXER_MAX_LAG_BLOCKS, INDEXER_STALL_TIMEOUT_MS   5, 30000: the watchdog restarts an indexer
 *                             that stays behind the chain head without progress that long (also the API's)
 *   PORT, PUBLIC_BASE_URL     the API's (3000); also the base of the ERC-1155 metadata URI
 */
export interface StackSettings {
  production: boolean;
  /** DATA_DIR, default `.data` in the repository. */
  dataDir: string;
  logDir: string;
  /** DATABASE_URL; null = an embedded Postgres under dataDir. */
  databaseUrl: string | null;
  embeddedPostgresPort: number;
  embeddedDatabaseName: string;
  /** CHAIN_RPC_URL; null = a local Hardhat node. */
  chainRpcUrl: string | null;
  /** CHAIN_WS_URL: a new-heads subscription for the indexer; unset, it polls (the local node too: its feed falls silent when idle). */
  chainWsUrl: string | null;
  /** CHAIN_ID when set: checked against the RPC's eth_chainId. */
  chainId: number | null;
  /** HARDHAT_NODE_PORT: the local chain's journaled RPC (journaled-rpc.ts); the node behind it listens on a free port. */
  hardhatNodePort: number;
  /** ART_CERTIFICATE_ADDRESS, ART_SHARES_ADDRESS, ART_MARKET_ADDRESS, AUDIT_ANCHOR_ADDRESS; null = deploy with Ignition (local chains only). */
  contracts: PlatformContracts | null;
  /** ART_EXCHANGE_ADDRESS and PAYMENT_TOKEN_ADDRESS; null = deploy LocalExchangeModule (local chains only). */
  exchange: ExchangeContracts | null;
  /** CONTRACTS_START_BLOCK when set. */
  startBlock: number | null;
  relayerPrivateKey: Hex | null;
  custodyMnemonic: string | null;
  ponderPort: number;
  viewsSchema: string;
  /** The indexer watchdog's bounds (the API reads the same two settings for /readyz). */
  indexerMaxLagBlocks: number;
  indexerStallTimeoutMs: number;
  apiPort: number;
  publicBaseUrl: string | null;
}

export class SettingsError extends Error {
  override name = "SettingsError";
}

export function readStackSettings(env: NodeJS.ProcessEnv): StackSettings {
  const get = (name: string) => {
    const value = env[name]?.trim();
    return value ? value : null;
  };
  const problems: string[] = [];
  const port = (name: string, fallback: number) => {
    const raw = get(name);
    const value = raw === null ? fallback : Number(raw);
    if (!Number.isInteger(value) || value < 0 || value > 65535) problems.push(`${name} must be a TCP port, got "${raw}"`);
    return value;
  };
  const integer = (name: string) => {
    const raw = get(name);
    if (raw === null) return null;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0) problems.push(`${name} must be a non-negative integer, got "${raw}"`);
    return value;
  };
  const address = (name: string) => {
    const raw = get(name);
    if (raw === null) return null;
    if (!isAddress(raw, { strict: false })) {
      problems.push(`${name} must be a 0x-prefixed 20-byte address, got "${raw}"`);
      return null;
    }
    return getAddress(raw);
  };

  const production = get("NODE_ENV") === "production";
  const dataDir = path.resolve(repoRoot, get("DATA_DIR") ?? ".data");
  const contractSettings = {
    artCertificate: address("ART_CERTIFICATE_ADDRESS"),
    artShares: address("ART_SHARES_ADDRESS"),
    artMarket: address("ART_MARKET_ADDRESS"),
    auditAnchor: address("AUDIT_ANCHOR_ADDRESS"),
  };
  const { artCertificate, artShares, artMarket, auditAnchor } = contractSettings;
  const contractsSet = Object.values(contractSettings).filter((value) => value !== null).length;
  if (contractsSet !== 0 && contractsSet !== 4) {
    problems.push(
      "ART_CERTIFICATE_ADDRESS, ART_SHARES_ADDRESS, ART_MARKET_ADDRESS and AUDIT_ANCHOR_ADDRESS go together: set all four, or none to deploy locally",
    );
  }
  const [artExchange, paymentToken] = [address("ART_EXCHANGE_ADDRESS"), address("PAYMENT_TOKEN_ADDRESS")];
  if (!artExchange !== !paymentToken) {
    problems.push("ART_EXCHANGE_ADDRESS and PAYMENT_TOKEN_ADDRESS go together: set both, or none to deploy locally");
  }
  const relayerPrivateKey = get("RELAYER_PRIVATE_KEY");
  if (relayerPrivateKey !== null && !(isHex(relayerPrivateKey) && relayerPrivateKey.length === 66)) {
    problems.push("RELAYER_PRIVATE_KEY must be a 0x-prefixed 32-byte hex string");
  }
  const indexerStallTimeoutMs = integer("INDEXER_STALL_TIMEOUT_MS") ?? 30_000;
  if (indexerStallTimeoutMs < 100) problems.push(`INDEXER_STALL_TIMEOUT_MS must be at least 100 (ms), got ${indexerStallTimeoutMs}`);
  const viewsSchema = get("INDEXER_VIEWS_SCHEMA") ?? "chain";
  if (!/^[a-z_][a-z0-9_]{0,44}$/.test(viewsSchema)) problems.push(`INDEXER_VIEWS_SCHEMA must be a lower-case identifier, got "${viewsSchema}"`);

  if (production) {
    const missing = [
      "DATABASE_URL", "CHAIN_RPC_URL", "ART_CERTIFICATE_ADDRESS", "ART_SHARES_ADDRESS", "ART_MARKET_ADDRESS",
      "AUDIT_ANCHOR_ADDRESS", "RELAYER_PRIVATE_KEY", "CUSTODY_MNEMONIC",
    ].filter((name) => get(name) === null);
    if (missing.length > 0) {
      problems.push(`Production mode (NODE_ENV=production) starts no local database, chain or deployment; it requires ${missing.join(", ")}`);
    }
  }

  const settings: StackSettings = {
    production,
    dataDir,
    logDir: path.join(dataDir, "logs"),
    databaseUrl: get("DATABASE_URL"),
    embeddedPostgresPort: port("EMBEDDED_POSTGRES_PORT", 55432),
    embeddedDatabaseName: "art_platform",
    chainRpcUrl: get("CHAIN_RPC_URL"),
    chainWsUrl: get("CHAIN_WS_URL"),
    chainId: integer("CHAIN_ID"),
    hardhatNodePort: port("HARDHAT_NODE_PORT", 8545),
    contracts: artCertificate && artShares && artMarket && auditAnchor ? { artCertificate, artShares, artMarket, auditAnchor } : null,
    exchange: artExchange && paymentToken ? { artExchange, paymentToken } : null,
    startBlock: integer("CONTRACTS_START_BLOCK"),
    relayerPrivateKey: relayerPrivateKey as Hex | null,
    custodyMnemonic: get("CUSTODY_MNEMONIC"),
    ponderPort: port("PONDER_PORT", 42069),
    viewsSchema,
    indexerMaxLagBlocks: integer("INDEXER_MAX_LAG_BLOCKS") ?? 5,
    indexerStallTimeoutMs,
    apiPort: port("PORT", 3000),
    publicBaseUrl: get("PUBLIC_BASE_URL"),
  };
  if (problems.length > 0) throw new SettingsError(`Invalid settings:\n  ${problems.join("\n  ")}`);
  return settings;
}
