import type { Kysely } from "kysely";
import { readIndexerStatus } from "../../api/src/chain/indexer-views.ts";
import { type ChainDeployment, chainMismatch, contractsIncomplete, contractsMismatch, databaseAheadOfChain } from "../../api/src/chain/chain-identity.ts";
import type { Database } from "../../api/src/db/database.ts";
import { newSecret } from "../../api/src/lib/secrets.ts";
import { chainReader } from "./chain.ts";
import type { LocalChain } from "./local-chain.ts";
import type { StackSettings } from "./settings.ts";

/** Why the database cannot serve this chain: it recorded another chain (or other contracts), or has seen blocks the chain lost. */
export type ChainConflict = { kind: "mismatch" | "lost"; detail: string };

/**
 * Never mix two chains' data in one database: what the database recorded of its chain against the
 * chain the stack runs (and the contracts it is given); null when they agree or nothing is recorded.
 */
export async function chainConflict(
  db: Kysely<Database>,
  recorded: Partial<ChainDeployment> | null,
  current: { settings: StackSettings; identity: Pick<ChainDeployment, "chainId" | "genesisHash">; rpcUrl: string; localChain: LocalChain | null },
): Promise<ChainConflict | null> {
  if (!recorded) return null;
  const { settings, identity, localChain } = current;
  const mismatch = chainMismatch(recorded, identity) ?? (settings.contracts ? contractsMismatch(recorded, { ...settings.contracts, ...settings.exchange }) : null);
  if (mismatch) return { kind: "mismatch", detail: mismatch };
  // A journal that lost its last blocks (a stack killed outright) gives back a shorter chain than the database saw.
  if (!localChain || localChain.replayedBlocks === 0) return null;
  const indexed = await readIndexerStatus({ db, viewsSchema: settings.viewsSchema, chainId: identity.chainId }).catch(() => null);
  const lost = await databaseAheadOfChain(db, chainReader(current.rpcUrl), { block: indexed?.indexedBlock ?? null });
  return lost ? { kind: "lost", detail: lost } : null;
}

/** Whether the deployment is to be recorded (again): nothing recorded yet, or other, fewer contracts, or another start block. */
export function deploymentChanged(recorded: Partial<ChainDeployment> | null, deployment: ChainDeployment): boolean {
  return !recorded || contractsMismatch(recorded, deployment) !== null || contractsIncomplete(recorded, deployment) || recorded.startBlock !== deployment.startBlock;
}

/**
 * The first admin's API key, when the stack makes one (with the API, BOOTSTRAP_ADMIN_API_KEY unset):
 * generated for a database without users (the API creates the admin with it; the banner shows it
 * once), or `kept` when the database's users, and with them its admin, came from an earlier start.
 */
export async function firstAdminKey(db: Kysely<Database>, startsApi: boolean): Promise<{ key: string | null; kept: boolean }> {
  const generates = startsApi && !process.env.BOOTSTRAP_ADMIN_API_KEY?.trim();
  if (!generates) return { key: null, kept: false };
  const hasUsers = (await db.selectFrom("users").select("id").limit(1).executeTakeFirst()) !== undefined;
  return hasUsers ? { key: null, kept: true } : { key: newSecret("sk"), kept: false };
}
