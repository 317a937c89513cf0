/**
 * The chain operations component on its own (test/support/chain-operations.ts): requests, resuming
 * after a crash, a process that is gone, confirmation by the indexer's cursor. Claiming due
 * operations: chain-operations-claims.test.ts.
 */
import { sql } from "kysely";
import { type Hash, keccak256, toBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { createChainClients } from "../../api/src/chain/clients.ts";
import type { ChainOperationKind } from "../../api/src/chain/operations.ts";
import { Relayer } from "../../api/src/chain/relayer.ts";
import { ProcessPresence } from "../../api/src/db/presence.ts";
import { publicClient } from "../support/artworks.ts";
import { component, database, env, eventsOf, type Facts, handle, isDue, logger, op, relayerKey, scriptedKind, useChainOperationsDatabase } from "../support/chain-operations.ts";
import { signalled } from "../support/wait.ts";

useChainOperationsDatabase();
describe("ChainOperations.request", () => {
  it("is idempotent per key: one row, due once, whatever the number of requests; a failed one starts over, a confirmed one stays", async () => {
    const { kind, indexer } = scriptedKind();
    const operations = component([kind], indexer);
    const key = `${kind.kind}:a`;
    const first = await handle.db.transaction().execute((trx) => operations.request(trx, { key, kind: kind.kind, payload: { n: 1 } }));
    const again = await handle.db.transaction().execute((trx) => operations.request(trx, { key, kind: kind.kind, payload: { n: 2 } }));
    expect(again.id).toBe(first.id);
    expect(await op(key)).toMatchObject({ status: "pending", attempts: 0, payload: { n: 1 } });
    expect(await handle.db.selectFrom("chain_operations").select("id").where("key", "=", key).execute()).toHaveLength(1);
    expect(await isDue(key)).toBe(true);

    // A request in a transaction that rolls back leaves nothing.
    const other = `${kind.kind}:rolled_back`;
    await handle.db
      .transaction()
      .execute(async (trx) => {
        await operations.request(trx, { key: other, kind: kind.kind, payload: {} });
        throw new Error("rollback");
      })
      .catch(() => undefined);
    expect(await handle.db.selectFrom("chain_operations").select("id").where("key", "=", other).execute()).toEqual([]);
    expect(await isDue(other)).toBe(false);

    await operations.fail(kind, key, "refused");
    await operations.request(handle.db, { key, kind: kind.kind, payload: { n: 3 } });
    expect(await op(key)).toMatchObject({ status: "pending", attempts: 0, last_error: null, tx_hash: null });

    indexer.rows.push({ block: 1n, key, facts: { n: 1 } });
    indexer.head = 1n;
    await operations.advanceCursors();
    const confirmed = await operations.request(handle.db, { key, kind: kind.kind, payload: {} });
    expect(confirmed.status).toBe("confirmed");
    expect(await isDue(key)).toBe(false);
  });
});

describe("ChainOperations.requestMany", () => {
  it("requests many in a few statements with request's rules for each, answering in the order asked", async () => {
    const { kind, indexer } = scriptedKind();
    const operations = component([kind], indexer);
    const [fresh, failed, waiting, confirmed] = ["fresh", "failed", "waiting", "confirmed"].map((s) => `${kind.kind}:${s}`) as [string, string, string, string];
    for (const key of [failed, waiting, confirmed]) await operations.request(handle.db, { key, kind: kind.kind, payload: { n: 0 } });
    await operations.fail(kind, failed, "refused");
    // Waiting for a retry in an hour; confirmed by the indexer.
    await handle.db.updateTable("chain_operations").set({ due_at: sql<Date>`now() + interval '1 hour'`, priority: 5 }).where("key", "=", waiting).execute();
    indexer.rows.push({ block: 1n, key: confirmed, facts: { n: 1 } });
    indexer.head = 1n;
    await operations.advanceCursors();

    const asked = [confirmed, fresh, waiting, failed, fresh];
    const answered = await handle.db.transaction().execute((trx) => operations.requestMany(trx, asked.map((key) => ({ key, kind: kind.kind, payload: { n: 9 } }))));
    expect(answered.map((o) => o.key)).toEqual(asked);
    expect(answered[1]).toBe(answered[4]);
    expect(await op(fresh)).toMatchObject({ status: "pending", attempts: 0, payload: { n: 9 } });
    expect(await op(failed)).toMatchObject({ status: "pending", attempts: 0, last_error: null, payload: { n: 0 } });
    expect(await op(waiting)).toMatchObject({ status: "pending", priority: 0 });
    expect((await op(waiting)).due_at!.getTime()).toBeLessThan(Date.now() + 60_000);
    expect(await op(confirmed)).toMatchObject({ status: "confirmed", result: { n: 1 } });
    for (const key of [fresh, failed, waiting]) expect(await isDue(key)).toBe(true);
    expect(await handle.db.selectFrom("chain_operations").select("id").where("key", "=", fresh).execute()).toHaveLength(1);

    await expect(operations.requestMany(handle.db, [{ key: "x", kind: "no_such_kind", payload: {} }])).rejects.toThrow(/unknown chain operation kind/);
    expect(await operations.requestMany(handle.db, [])).toEqual([]);
  });
});

describe("resuming after a crash", () => {
  it("waits for the stored transaction and sends nothing new", async () => {
    const address = privateKeyToAccount(relayerKey).address;
    const { chain, publicClient: client, relayerAccount } = createChainClients({ rpcUrl: env.rpcUrl, chainId: env.chainId, relayerPrivateKey: relayerKey });
    const relayer = new Relayer({ publicClient: client, account: relayerAccount, chain, logger });
    let sent: Hash | null = null;
    let recorded!: () => void;
    const hashStored = new Promise<void>((resolve) => (recorded = resolve));
    // The first process: sends, records the hash, then never finishes (it died waiting for the receipt).
    const { kind: dying } = scriptedKind({
      async send(operation, ctx) {
        const artworkId = `art_resume_${operation.id}_${process.pid}`;
        await relayer.write({
          address: env.artCertificateAddress,
          abi: artCertificateAbi,
          functionName: "certify",
          args: [address, artworkId, keccak256(toBytes(artworkId)), `https://example.test/${artworkId}`, address, 500n],
          onSubmitted: async ({ hash }) => {
            sent = hash;
            await ctx.recordSent([operation.key], hash);
            recorded();
          },
        });
        await new Promise(() => {});
      },
    });
    const first = component([dying], { head: null }, relayer);
    const key = `${dying.kind}:crash`;
    await first.request(handle.db, { key, kind: dying.kind, payload: {} });
    void first.run(key);
    await signalled(hashStored, "the stored hash");
    expect(await op(key)).toMatchObject({ status: "sent", tx_hash: sent, attempts: 1 });
    const nonceAfterSend = await publicClient().getTransactionCount({ address });

    // The restarted process: the same kind, counting its sends. The sweep finds the lease expired.
    const { kind: restarted, calls } = scriptedKind({ kind: dying.kind } as Partial<ChainOperationKind<Facts>>);
    const second = component([restarted], { head: null }, relayer);
    // The first process died 3 s ago: its lease (200 ms) and the sweep's grace (2 s) have run out.
    await handle.db.updateTable("chain_operations").set({ lease_until: sql<Date>`now() - interval '3 seconds'` }).where("key", "=", key).execute();
    await second.sweep();
    expect(calls.lookupIndexed).toBe(1);
    expect(await isDue(key)).toBe(true);
    await second.run(key);

    expect(calls.send).toBe(0);
    expect(await op(key)).toMatchObject({ status: "sent", tx_hash: sent, attempts: 2, last_error: null });
    expect(await publicClient().getTransactionCount({ address })).toBe(nonceAfterSend);
  }, 30_000);
});

describe("a process that is gone", () => {
  it("has its leased operation taken up by the next sweep, though the lease has long to run; a live holder's is left alone", async () => {
    const presences = [new ProcessPresence({ databaseUrl: database.databaseUrl, name: "dying", logger }), new ProcessPresence({ databaseUrl: database.databaseUrl, name: "restarted", logger })];
    const [dyingPresence, livePresence] = presences as [ProcessPresence, ProcessPresence];
    await Promise.all(presences.map((p) => p.start()));
    try {
      let attempting!: () => void;
      const attempted = new Promise<void>((resolve) => (attempting = resolve));
      // The first process leases the operation for ten minutes and dies in its attempt.
      const { kind: dying } = scriptedKind({
        async send() {
          attempting();
          await new Promise(() => {});
        },
      });
      const first = component([dying], { head: null }, undefined, { leaseMs: 600_000, presence: dyingPresence });
      const key = `${dying.kind}:holder_gone`;
      await first.request(handle.db, { key, kind: dying.kind, payload: {} });
      void first.run(key);
      await signalled(attempted, "the first attempt");
      expect(await op(key)).toMatchObject({ attempts: 1, due_at: null, holder: dyingPresence.id });

      const { kind: restarted, calls } = scriptedKind({ kind: dying.kind } as Partial<ChainOperationKind<Facts>>);
      const second = component([restarted], { head: null }, undefined, { leaseMs: 600_000, presence: livePresence });
      // Its holder still present: a slow attempt, not a lost one.
      await second.sweep();
      expect(calls.lookupIndexed).toBe(0);
      expect(await isDue(key)).toBe(false);

      // Its process gone (its presence's session ended, as with a SIGKILL): taken up at once.
      await dyingPresence.stop();
      await second.sweep();
      expect(calls.lookupIndexed).toBe(1);
      expect(await isDue(key)).toBe(true);
      await second.run(key);
      expect(calls.send).toBe(1);
      expect(await op(key)).toMatchObject({ attempts: 2, holder: livePresence.id });
    } finally {
      await Promise.all(presences.map((p) => p.stop()));
    }
  }, 30_000);
});

describe("confirmation by cursor", () => {
  it("reads only newly indexed blocks, never rescans failed operations, and hands each confirmation over once with its event", async () => {
    const { kind, calls, indexer } = scriptedKind();
    const operations = component([kind], indexer);
    const [failed, pending, late] = ["failed", "pending", "late"].map((s) => `${kind.kind}:${s}`) as [string, string, string];
    for (const key of [failed, pending, late]) await operations.request(handle.db, { key, kind: kind.kind, payload: {} });
    await operations.fail(kind, failed, "refused for good");

    indexer.rows.push({ block: 5n, key: pending, facts: { n: 5 } });
    indexer.head = 5n;
    // Two passes at once (two processes on one notification): the cursor's lock lets one read.
    await Promise.all([operations.advanceCursors(), operations.advanceCursors()]);
    expect(calls.readIndexed).toEqual([[-1n, 5n]]);
    expect(await op(pending)).toMatchObject({ status: "confirmed", confirmed_from: "indexer", result: { n: 5 } });
    expect(await op(failed)).toMatchObject({ status: "failed" });

    // Nothing new indexed: nothing read. New blocks: only those.
    await operations.advanceCursors();
    indexer.head = 9n;
    await operations.advanceCursors();
    expect(calls.readIndexed).toEqual([[-1n, 5n], [5n, 9n]]);
    expect(calls.lookupIndexed).toBe(0);
    expect((await handle.db.selectFrom("chain_cursors").select("block_number").where("consumer", "=", kind.kind).executeTakeFirstOrThrow()).block_number).toBe(9n);

    // Confirmed from the chain while the indexer lags, then reached by the cursor: reconciled, not confirmed again.
    await handle.db.updateTable("chain_operations").set({ status: "sent", tx_hash: "0xabc" }).where("key", "=", late).execute();
    indexer.fromChain.push({ key: late, facts: { n: 12 } });
    await Promise.all([operations.confirmFromChain(), operations.confirmFromChain()]);
    expect(await op(late)).toMatchObject({ status: "confirmed", confirmed_from: "chain", indexed_at: null });
    indexer.rows.push({ block: 12n, key: late, facts: { n: 12 } }, { block: 12n, key: pending, facts: { n: 5 } });
    indexer.head = 12n;
    await operations.advanceCursors();
    expect((await op(late)).indexed_at).not.toBeNull();

    expect(calls.confirmed.sort()).toEqual([late, pending].sort());
    expect(calls.indexed).toEqual([late]);
    expect(calls.failed).toEqual([failed]);
    expect(await eventsOf(pending)).toEqual([{ payload: { key: pending, n: 5, source: "indexer" } }]);
    expect(await eventsOf(late)).toEqual([{ payload: { key: late, n: 12, source: "chain" } }]);
    expect(await eventsOf(failed)).toEqual([]);
  });
});

describe("cursor passes over kinds with nothing open", () => {
  it("moves an idle kind's cursor without reading the indexer, and reads the blocks after it once an operation is open", async () => {
    const idle = scriptedKind();
    const busy = scriptedKind();
    const indexer = { head: 4n as bigint | null };
    const operations = component([idle.kind, busy.kind], indexer);
    const busyKey = `${busy.kind.kind}:open`;
    await operations.request(handle.db, { key: busyKey, kind: busy.kind.kind, payload: {} });
    busy.indexer.rows.push({ block: 3n, key: busyKey, facts: { n: 3 } });

    expect(await operations.advanceCursors()).toBe(1);
    expect(busy.calls.readIndexed).toEqual([[-1n, 4n]]);
    expect(idle.calls.readIndexed).toEqual([]);
    const cursorOf = async (consumer: string) =>
      (await handle.db.selectFrom("chain_cursors").select("block_number").where("consumer", "=", consumer).executeTakeFirstOrThrow()).block_number;
    expect(await cursorOf(idle.kind.kind)).toBe(4n);
    expect(await cursorOf(busy.kind.kind)).toBe(4n);

    // Requested now, so sent after block 4: the idle kind reads from there on.
    const idleKey = `${idle.kind.kind}:late`;
    await operations.request(handle.db, { key: idleKey, kind: idle.kind.kind, payload: {} });
    idle.indexer.rows.push({ block: 6n, key: idleKey, facts: { n: 6 } });
    indexer.head = 6n;
    expect(await operations.advanceCursors()).toBe(1);
    expect(idle.calls.readIndexed).toEqual([[4n, 6n]]);
    expect(busy.calls.readIndexed).toEqual([[-1n, 4n]]);
    expect(await op(idleKey)).toMatchObject({ status: "confirmed", confirmed_from: "indexer", result: { n: 6 } });
    expect(await cursorOf(busy.kind.kind)).toBe(6n);
  });
});
