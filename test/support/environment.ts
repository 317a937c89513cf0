import { inject } from "vitest";

/** What test/support/global-setup.ts started for the whole run; shared by every test file. */
export interface TestEnvironment {
  /** A database of its own for this run (migrated; `chain_deployment` recorded). */
  databaseUrl: string;
  /** The same server's `postgres` database, to create more databases. */
  serverUrl: string;
  rpcUrl: string;
  wsUrl: string;
  chainId: number;
  genesisHash: `0x${string}`;
  artCertificateAddress: `0x${string}`;
  artSharesAddress: `0x${string}`;
  artMarketAddress: `0x${string}`;
  auditAnchorAddress: `0x${string}`;
  /** The ERC-2771 forwarder ArtCertificate trusts (its `trustedForwarder()`). */
  artForwarderAddress: `0x${string}`;
  /** ArtExchange (LocalExchangeModule), deployed after the platform; the relayer holds ORDER_SIGNER_ROLE. */
  artExchangeAddress: `0x${string}`;
  /** The MockStablecoin ArtExchange is paid in (6 decimals; anyone may mint). */
  paymentTokenAddress: `0x${string}`;
  startBlock: number;
  /** Hardhat dev account #0: deployer, contracts' admin, and relayer (holds the minter, settler and anchorer roles). */
  relayerPrivateKey: `0x${string}`;
  /** A directory for logs and scratch files, removed at teardown unless KEEP_TEST_DIR=1. */
  tempDir: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    testEnvironment: TestEnvironment;
  }
}

/** What global-setup.ts started, plus Redis for the rate-limit store when TEST_REDIS_URL is set (CI's second pass). */
export function testEnvironment(): TestEnvironment & { redisUrl: string | null } {
  return { ...inject("testEnvironment"), redisUrl: process.env.TEST_REDIS_URL ?? null };
}
