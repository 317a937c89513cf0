import type { Kysely } from "kysely";
import type { Address, Hex } from "viem";
import type { Database } from "../db/database.ts";

/** The chain and contracts a database's data belongs to (table `chain_deployment`, one row). */
export interface ChainDeployment {
  chainId: number;
  genesisHash: Hex;
  artCertificate: Address;
  artShares: Address;
  startBlock: number;
}

export async function readChainDeployment(db: Kysely<Database>): Promise<Partial<ChainDeployment> | null> {
  const row = await db.selectFrom("chain_deployment").selectAll().where("id", "=", 1).executeTakeFirst();
  if (!row) return null;
  return {
    chainId: row.chain_id,
    genesisHash: row.genesis_hash as Hex,
    artCertificate: (row.art_certificate_address ?? undefined) as Address | undefined,
    artShares: (row.art_shares_address ?? undefined) as Address | undefined,
    startBlock: Number(row.start_block),
  };
}

export async function recordChainDeployment(db: Kysely<Database>, deployment: ChainDeployment): Promise<void> {
  const values = {
    chain_id: deployment.chainId,
    genesis_hash: deployment.genesisHash.toLowerCase(),
    art_certificate_address: deployment.artCertificate,
    art_shares_address: deployment.artShares,
    start_block: BigInt(deployment.startBlock),
  };
  await db
    .insertInto("chain_deployment")
    .values({ id: 1, ...values })
    .onConflict((oc) => oc.column("id").doUpdateSet({ ...values, recorded_at: new Date() }))
    .execute();
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

/** Why the recorded contracts differ from the configured ones, or null. */
export function contractsMismatch(
  recorded: Partial<ChainDeployment>,
  configured: { artCertificate: Address; artShares: Address },
): string | null {
  const same = (a: string | undefined, b: string) => a?.toLowerCase() === b.toLowerCase();
  if (recorded.artCertificate && !same(recorded.artCertificate, configured.artCertificate)) {
    return `the database belongs to ArtCertificate ${recorded.artCertificate}, ART_CERTIFICATE_ADDRESS is ${configured.artCertificate}`;
  }
  if (recorded.artShares && !same(recorded.artShares, configured.artShares)) {
    return `the database belongs to ArtShares ${recorded.artShares}, ART_SHARES_ADDRESS is ${configured.artShares}`;
  }
  return null;
}

export class ChainIdentityError extends Error {
  override name = "ChainIdentityError";
}

/**
 * The API's and the worker's start-up check (`npm start` runs the same before it starts them): the
 * database's data must come from the chain and contracts configured now. A database new to any
 * chain is recorded for this one.
 */
export async function assertChainDeployment(
  db: Kysely<Database>,
  chain: { getChainId(): Promise<number>; getBlock(args: { blockNumber: bigint }): Promise<{ hash: Hex | null }> },
  configured: { chainId: number; artCertificate: Address | null; artShares: Address | null; startBlock: number },
): Promise<void> {
  const [chainId, genesis] = await Promise.all([chain.getChainId(), chain.getBlock({ blockNumber: 0n })]);
  if (chainId !== configured.chainId) {
    throw new ChainIdentityError(`refusing to start: CHAIN_ID is ${configured.chainId} but the RPC serves chain id ${chainId}`);
  }
  const current = { chainId, genesisHash: genesis.hash! };
  const contracts = configured.artCertificate && configured.artShares ? { artCertificate: configured.artCertificate, artShares: configured.artShares } : null;
  const recorded = await readChainDeployment(db);
  const mismatch = recorded && (chainMismatch(recorded, current) ?? (contracts ? contractsMismatch(recorded, contracts) : null));
  if (mismatch) {
    throw new ChainIdentityError(
      `refusing to start: ${mismatch}. Point DATABASE_URL at this chain's database, or CHAIN_RPC_URL/the contract addresses at the database's chain`,
    );
  }
  if (!recorded && contracts) await recordChainDeployment(db, { ...current, ...contracts, startBlock: configured.startBlock });
}
