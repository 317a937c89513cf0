/**
 * The chain operations component on its own, with kinds written for the test: a database of its
 * own, the shared Hardhat node for the tests that send, and a scripted indexer (its head and rows)
 * for the cursor. Shared by chain-operations.test.ts and chain-operations-claims.test.ts.
 */
import { sql } from "kysely";
import pino from "pino";
import { afterAll, beforeAll } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { createChainClients } from "../../api/src/chain/clients.ts";
import { type ChainOperationKind, ChainOperations, type KeyedFacts } from "../../api/src/chain/operations.ts";
import { Relayer } from "../../api/src/chain/relayer.ts";
import { createDbHandle } from "../../api/src/db/connection.ts";
import type { ProcessPresence } from "../../api/src/db/presence.ts";
import { recordEvent } from "../../api/src/jobs/outbox.ts";
import { migrateJobQueue } from "../../api/src/jobs/queue.ts";
import { createPlatformDatabase, freshRelayerKey } from "./artworks.ts";
import { testEnvironment } from "./environment.ts";

export const env = testEnvironment();
export const logger = pino({ level: "silent" });
export let database: Awaited<ReturnType<typeof createPlatformDatabase>>;
export let handle: ReturnType<typeof createDbHandle>;
export let relayerKey: `0x${string}`;
let seq = 0;
/** A kind name of its own for each use in this process. */
export const kindName = (suffix = "") => `test_${process.pid}_${++seq}${suffix}`;

/** A database of its own for the calling test file, with the job queue's tables (beforeAll), dropped after. */
export function useChainOperationsDatabase(): void {
beforeAll(async () => {
  [database, relayerKey] = await Promise.all([createPlatformDatabase(), freshRelayerKey()]);
  handle = createDbHandle(database.databaseUrl, 6);
  await migrateJobQueue(handle.pool);
});
afterAll(async () => {
  await handle?.db.destroy();
  await database?.drop().catch(() => {});
});
}

export type Facts = { n: number };

/** A kind that records what the component asks of it; `indexer` scripts what the indexer shows. */
export function scriptedKind(overrides: Partial<ChainOperationKind<Facts>> = {}) {
  const calls = { send: 0, readIndexed: [] as [bigint, bigint][], lookupIndexed: 0, confirmed: [] as string[], indexed: [] as string[], failed: [] as string[] };
  const indexer = { head: 0n as bigint | null, rows: [] as { block: bigint; key: string; facts: Facts }[], fromChain: [] as KeyedFacts<Facts>[] };
  const kind: ChainOperationKind<Facts> = {
    kind: kindName(),
    abi: artCertificateAbi,
    maxAttempts: 3,
    retryBaseMs: 10,
    async send() {
      calls.send++;
    },
    async readIndexed(from, to) {
      calls.readIndexed.push([from, to]);
      return indexer.rows.filter((r) => r.block > from && r.block <= to).map(({ key, facts }) => ({ key, facts }));
    },
    async lookupIndexed(ops) {
      calls.lookupIndexed++;
      return indexer.rows.filter((r) => ops.some((op) => op.key === r.key)).map(({ key, facts }) => ({ key, facts }));
    },
    async readFromChain(ops) {
      return indexer.fromChain.filter((f) => ops.some((op) => op.key === f.key));
    },
    async onConfirmed(trx, confirmed) {
      for (const { op, facts, source } of confirmed) {
        calls.confirmed.push(op.key);
        await recordEvent(trx, "test.confirmed", { key: op.key, n: facts.n, source }, []);
      }
    },
    async onIndexed(_trx, indexed) {
      calls.indexed.push(...indexed.map((i) => i.op.key));
    },
    async onFailed(_trx, op) {
      calls.failed.push(op.key);
    },
    ...overrides,
  };
  return { kind, calls, indexer };
}

export function component(
  kinds: ChainOperationKind<any>[],
  indexer: { head: bigint | null } = { head: null },
  relayer?: Relayer,
  tuning: { concurrency?: number; duePollMs?: number; leaseMs?: number; presence?: ProcessPresence } = {},
) {
  const { chain, publicClient, relayerAccount } = createChainClients({ rpcUrl: env.rpcUrl, chainId: env.chainId, relayerPrivateKey: relayerKey });
  const operations = new ChainOperations({
    db: handle.db,
    logger,
    relayer: relayer ?? new Relayer({ publicClient, account: relayerAccount, chain, logger }),
    publicClient,
    databaseUrl: database.databaseUrl,
    viewsSchema: "absent_views",
    chainId: env.chainId,
    startBlock: 0,
    leaseMs: 200,
    sweepIntervalMs: 60_000,
    ...tuning,
    indexedBlock: async () => indexer.head,
  });
  for (const kind of kinds) operations.register(kind);
  return operations;
}

export const op = (key: string) => handle.db.selectFrom("chain_operations").selectAll().where("key", "=", key).executeTakeFirstOrThrow();
/** Whether the operation waits for an attempt (its row is the queue entry; none when it does not exist). */
export const isDue = async (key: string) =>
  (await handle.db.selectFrom("chain_operations").select("due_at").where("key", "=", key).executeTakeFirst())?.due_at != null;
export const eventsOf = async (key: string) =>
  handle.db.selectFrom("outbox_events").select("payload").where("event_type", "=", "test.confirmed").where(sql`payload->>'key'`, "=", key).execute();

