import type { Kysely } from "kysely";
import type { Address, Hex } from "viem";
import type { Database } from "../db/database.ts";
import * as repo from "./chain-identity.repository.ts";
import { latestConfirmedWithHash } from "./operations.repository.ts";

/** The platform's contracts of one deployment (the forwarder is the certificate's `trustedForwarder()`). */
export interface PlatformContracts {
  artCertificate: Address;
  artShares: Address;
  artMarket: Address;
  auditAnchor: Address;
}

/** ArtExchange and the stablecoin it is paid in: both or neither, absent from a deployment recorded before them. */
export interface ExchangeContracts {
  artExchange: Address;
  paymentToken: Address;
}

/** The chain and contracts a database's data belongs to (table `chain_deployment`, one row). */
export interface ChainDeployment extends PlatformContracts, Partial<ExchangeContracts> {
  chainId: number;
  genesisHash: Hex;
  startBlock: number;
}

/** Each contract with its setting, in the order mismatches are reported. */
const CONTRACTS = [
  ["artCertificate", "ArtCertificate", "ART_CERTIFICATE_ADDRESS"],
  ["artShares", "ArtShares", "ART_SHARES_ADDRESS"],
  ["artMarket", "ArtMarket", "ART_MARKET_ADDRESS"],
  ["auditAnchor", "AuditAnchor", "AUDIT_ANCHOR_ADDRESS"],
] as const satisfies readonly (readonly [keyof PlatformContracts, string, string])[];

/** The exchange's contracts likewise: compared only when both the database and the settings name them. */
const EXCHANGE_CONTRACTS = [
  ["artExchange", "ArtExchange", "ART_EXCHANGE_ADDRESS"],
  ["paymentToken", "the payment token", "PAYMENT_TOKEN_ADDRESS"],
] as const satisfies readonly (readonly [keyof ExchangeContracts, string, string])[];

export async function readChainDeployment(db: Kysely<Database>): Promise<Partial<ChainDeployment> | null> {
  const row = await repo.findDeployment(db);
  if (!row) return null;
  return {
    chainId: row.chain_id,
    genesisHash: row.genesis_hash as Hex,
    artCertificate: (row.art_certificate_address ?? undefined) as Address | undefined,
    artShares: (row.art_shares_address ?? undefined) as Address | undefined,
    artMarket: (row.art_market_address ?? undefined) as Address | undefined,
    auditAnchor: (row.audit_anchor_address ?? undefined) as Address | undefined,
    artExchange: (row.art_exchange_address ?? undefined) as Address | undefined,
    paymentToken: (row.payment_token_address ?? undefined) as Address | undefined,
    startBlock: Number(row.start_block),
  };
}

export async function recordChainDeployment(db: Kysely<Database>, deployment: ChainDeployment): Promise<void> {
  const values = {
    chain_id: deployment.chainId,
    genesis_hash: deployment.genesisHash.toLowerCase(),
    art_certificate_address: deployment.artCertificate,
    art_shares_address: deployment.artShares,
    art_market_address: deployment.artMarket,
    audit_anchor_address: deployment.auditAnchor,
    art_exchange_address: deployment.artExchange ?? null,
    payment_token_address: deployment.paymentToken ?? null,
    start_block: BigInt(deployment.startBlock),
  };
  await repo.upsertDeployment(db, values);
}

/** Why `recorded` and `current` are not the same chain instance, or null when they are. */
export function chainMismatch(
  recorded: Partial<ChainDeployment>,
  current: { chainId: number; genesisHash: Hex },
): string | null {
  if (recorded.chainId !== current.chainId) {
    return `the database belongs to chain id ${recorded.chainId}, the RPC serves chain id ${current.chainId}`;
  }
  if (recorded.genesisHash?.toLowerCase() !== current.genesisHash.toLowerCase()) {
    return `the database belongs to a chain with genesis block ${recorded.genesisHash}, the RPC serves genesis ${current.genesisHash} (a reset or different chain)`;
  }
  return null;
}

/**
 * Why the recorded contracts differ from the configured ones, or null (a contract not recorded yet, or
 * an exchange not configured, differs from none).
 */
export function contractsMismatch(recorded: Partial<ChainDeployment>, configured: PlatformContracts & Partial<ExchangeContracts>): string | null {
  for (const [key, name, setting] of [...CONTRACTS, ...EXCHANGE_CONTRACTS]) {
    const [address, current] = [recorded[key], configured[key]];
    if (address && current && address.toLowerCase() !== current.toLowerCase()) {
      return `the database belongs to ${name} ${address}, ${setting} is ${current}`;
    }
  }
  return null;
}

/**
 * Whether `recorded` lacks a contract of the deployment (a database recorded before the market and the
 * anchor), or an exchange that `configured` names (one recorded before the exchange).
 */
export function contractsIncomplete(recorded: Partial<ChainDeployment>, configured?: Partial<ExchangeContracts>): boolean {
  return CONTRACTS.some(([key]) => !recorded[key]) || EXCHANGE_CONTRACTS.some(([key]) => !!configured?.[key] && !recorded[key]);
}

/** The exchange `contracts` name, or null unless they name both the exchange and its payment token. */
export function exchangeOf(contracts: { [K in keyof ExchangeContracts]?: Address | null | undefined }): ExchangeContracts | null {
  const { artExchange, paymentToken } = contracts;
  return artExchange && paymentToken ? { artExchange, paymentToken } : null;
}

export class ChainIdentityError extends Error {
  override name = "ChainIdentityError";
}

/**
 * The API's and the worker's start-up check (`npm start` runs the same before it starts them): the
 * database's data must come from the chain and contracts configured now (the exchange too, when both
 * name one). A database new to any chain is recorded for this one; one recorded before some of the
 * contracts existed gains them.
 */
export async function assertChainDeployment(
  db: Kysely<Database>,
  chain: { getChainId(): Promise<number>; getBlock(args: { blockNumber: bigint }): Promise<{ hash: Hex | null }> },
  configured: { chainId: number; startBlock: number } & { [K in keyof PlatformContracts]: Address | null } & {
    [K in keyof ExchangeContracts]?: Address | null;
  },
): Promise<void> {
  const [chainId, genesis] = await Promise.all([chain.getChainId(), chain.getBlock({ blockNumber: 0n })]);
  if (chainId !== configured.chainId) {
    throw new ChainIdentityError(`refusing to start: CHAIN_ID is ${configured.chainId} but the RPC serves chain id ${chainId}`);
  }
  const current = { chainId, genesisHash: genesis.hash! };
  const { artCertificate, artShares, artMarket, auditAnchor } = configured;
  const contracts = artCertificate && artShares && artMarket && auditAnchor ? { artCertificate, artShares, artMarket, auditAnchor, ...exchangeOf(configured) } : null;
  const recorded = await readChainDeployment(db);
  const mismatch = recorded && (chainMismatch(recorded, current) ?? (contracts ? contractsMismatch(recorded, contracts) : null));
  if (mismatch) {
    throw new ChainIdentityError(
      `refusing to start: ${mismatch}. Point DATABASE_URL at this chain's database, or CHAIN_RPC_URL/the contract addresses at the database's chain`,
    );
  }
  if (contracts && (!recorded || contractsIncomplete(recorded, contracts))) {
    // An exchange recorded before and not configured now stays recorded.
    await recordChainDeployment(db, { ...current, ...(recorded && exchangeOf(recorded)), ...contracts, startBlock: recorded?.startBlock ?? configured.startBlock });
  }
}

/**
 * Why the database has seen more of the chain than the chain now has, or null: a local chain
 * brought back from a journal that lost its last blocks (a stack killed outright) lacks what the
 * indexer projected and what chain operations confirmed. Such a database cannot follow that chain.
 */
export async function databaseAheadOfChain(
  db: Kysely<Database>,
  chain: { head(): Promise<bigint>; hasReceipt(hash: Hex): Promise<boolean> },
  indexed: { block: bigint | null },
): Promise<string | null> {
  const head = await chain.head();
  if (indexed.block !== null && indexed.block > head) {
    return `the indexer had reached block ${indexed.block}, the chain ends at block ${head}`;
  }
  // The latest confirmations: a lost block holds the newest ones.
  for (const op of await latestConfirmedWithHash(db, 20)) {
    if (!(await chain.hasReceipt(op.tx_hash as Hex))) {
      return `chain operation ${op.key} was confirmed in transaction ${op.tx_hash}, which the chain does not have`;
    }
  }
  return null;
}
