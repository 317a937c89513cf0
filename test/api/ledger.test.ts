/**
 * The marketplace's audit ledger on real pieces: Postgres (its append-only triggers), the Hardhat
 * chain with an AuditAnchor of this file's own (anchors must be contiguous: other files' ledgers
 * anchor on the run's shared one), Ponder indexing it, and the API over HTTP.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { sql } from "kysely";
import { type Address, createPublicClient, createWalletClient, getAddress, type Hex, http, parseEther, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { auditAnchorAbi } from "../../contracts/abi/AuditAnchor.ts";
import { transactionOf } from "../../api/src/chain/operations.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { newId } from "../../api/src/lib/ids.ts";
import { entryHashOf } from "../../api/src/modules/ledger/entry-hash.ts";
import type { LedgerAppend } from "../../api/src/modules/ledger/ledger.service.ts";
import * as merkle from "../../api/src/modules/ledger/merkle.ts";
import { checkEntryAgainstChain, type ServedEntry } from "../../tools/ledger-verify.ts";
import { useArtworkPlatform } from "../support/artworks.ts";
import { waitFor } from "../support/wait.ts";
import { adminToken, createUser, expectProblem, type TestUser } from "../support/api.ts";
import { testEnvironment } from "../support/environment.ts";

const env = () => testEnvironment();
const chain = () => createPublicClient({ transport: http(env().rpcUrl) });
const anchorAdmin = privateKeyToAccount(generatePrivateKey());
let anchorAddress: Address;

// Registered before the platform's hooks, so the platform starts against this file's contract.
beforeAll(async () => {
  await chain().request({ method: "hardhat_setBalance", params: [anchorAdmin.address, toHex(parseEther("10"))] } as never);
  const artifact = JSON.parse(readFileSync(new URL("../../artifacts/contracts/AuditAnchor.sol/AuditAnchor.json", import.meta.url), "utf8")) as { bytecode: Hex };
  const wallet = createWalletClient({ account: anchorAdmin, transport: http(env().rpcUrl) });
  const hash = await wallet.deployContract({ abi: auditAnchorAbi, bytecode: artifact.bytecode, args: [anchorAdmin.address], chain: null });
  anchorAddress = getAddress((await chain().waitForTransactionReceipt({ hash })).contractAddress!);
});

const p = useArtworkPlatform(() => ({ AUDIT_ANCHOR_ADDRESS: anchorAddress, LEDGER_ANCHOR_INTERVAL_MS: "250" }), {
  indexerTarget: () => ({ auditAnchor: anchorAddress }),
});

const ledger = () => p.api.server.platform.services.ledger;
const anchoring = () => p.api.server.platform.services.ledgerAnchoring;
const headSeq = async () => ((await p.db.selectFrom("audit_ledger").select((eb) => eb.fn.max("seq").as("seq")).executeTakeFirstOrThrow()).seq as bigint | null) ?? 0n;
const anchorOnChain = (index: number) => chain().readContract({ address: anchorAddress, abi: auditAnchorAbi, functionName: "anchorAt", args: [BigInt(index)] });

/** The hashed fields of an entry as served, recomputed into its entry_hash. */
function recomputedHash(body: ServedEntry): Hex {
  const { seq, kind, subject_id, actor_id, parties, data, created_at } = body;
  return entryHashOf(body.prev_hash, { seq, kind, subject_id, actor_id, parties, data, created_at });
}

/** Waits until every entry up to `seq` is in a confirmed anchor. */
async function anchoredThrough(seq: bigint): Promise<void> {
  await waitFor(
    async () => {
      const row = await p.db.selectFrom("ledger_anchors").select((eb) => eb.fn.max("last_seq").as("last")).where("status", "=", "confirmed").executeTakeFirstOrThrow();
      return ((row.last as bigint | null) ?? 0n) >= seq;
    },
    { timeoutMs: 60_000, intervalMs: 100, what: `anchors through entry ${seq}` },
  );
}

describe("audit ledger", () => {
  let buyer: TestUser;
  let seller: TestUser;
  let stranger: TestUser;
  let narrow: TestUser;
  let admin: string;
  const sale = (extra: Partial<LedgerAppend> = {}): LedgerAppend => ({
    kind: "sale.completed",
    subjectId: newId("transaction"),
    actorId: buyer.id,
    parties: [seller.id, buyer.id, buyer.id],
    data: { price_cents: 1_250_050, currency: "USD", note: "Café ✓", at: new Date("2026-11-23T10:00:00Z"), dropped: undefined },
    ...extra,
  });

  beforeAll(async () => {
    [buyer, seller, stranger, narrow, admin] = await Promise.all([
      createUser(p.api, { role: "collector", scope: ["read"] }),
      createUser(p.api, { role: "artist", scope: ["marketplace:read"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["users:read", "artworks:read"] }),
      adminToken(p.api),
    ]);
    // The platform's relayer anchors: this contract's admin grants it the role.
    const relayer = privateKeyToAccount(p.relayerKey).address;
    const wallet = createWalletClient({ account: anchorAdmin, transport: http(env().rpcUrl) });
    const role = await chain().readContract({ address: anchorAddress, abi: auditAnchorAbi, functionName: "ANCHORER_ROLE" });
    const hash = await wallet.writeContract({ address: anchorAddress, abi: auditAnchorAbi, functionName: "grantRole", args: [role, relayer], chain: null });
    expect((await chain().waitForTransactionReceipt({ hash })).status).toBe("success");
  });

  it("appends hash-chained entries that their parties and admins read; anyone else gets 404", async () => {
    const first = await ledger().append(p.db, sale());
    const input = sale({ kind: "sale.refunded", actorId: null });
    const second = await ledger().append(p.db, input);
    expect(second.seq).toBe(first.seq + 1n);

    const res = await p.api.request("GET", `/v1/marketplace/ledger/${second.id}`, { token: buyer.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      entry_id: second.id,
      seq: Number(second.seq),
      kind: "sale.refunded",
      subject_id: input.subjectId,
      actor_id: null,
      parties: [buyer.id, seller.id].sort(),
      // As JSON: the date as text, undefined dropped.
      data: { price_cents: 1_250_050, currency: "USD", note: "Café ✓", at: "2026-11-23T10:00:00.000Z" },
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      prev_hash: first.entryHash,
      entry_hash: second.entryHash,
      anchor: res.body.anchor === null ? null : expect.objectContaining({ contract_address: anchorAddress.toLowerCase() }),
    });
    expect(recomputedHash(res.body)).toBe(second.entryHash);
    const row = await p.db.selectFrom("audit_ledger").selectAll().where("id", "=", second.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ seq: second.seq, prev_hash: first.entryHash, entry_hash: second.entryHash, parties: [buyer.id, seller.id].sort(), actor_id: null });
    expect(row.created_at.toISOString()).toBe(res.body.created_at);

    // The other party and an admin read it; nobody else learns it exists.
    const { anchor: _a, ...entry } = res.body;
    const bySeller = await p.api.request("GET", `/v1/marketplace/ledger/${second.id}`, { token: seller.token });
    expect(bySeller.status).toBe(200);
    expect(bySeller.body).toMatchObject(entry);
    const byAdmin = await p.api.request("GET", `/v1/marketplace/ledger/${second.id}`, { token: admin });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toMatchObject(entry);
    expectProblem(await p.api.request("GET", `/v1/marketplace/ledger/${second.id}`, { token: stranger.token }), 404, "not_found");
    expectProblem(await p.api.request("GET", `/v1/marketplace/ledger/${newId("ledgerEntry")}`, { token: buyer.token }), 404, "not_found");
    expectProblem(await p.api.request("GET", "/v1/marketplace/ledger/led_nonsense", { token: buyer.token }), 404, "not_found");
    expectProblem(await p.api.request("GET", `/v1/marketplace/ledger/${second.id}`), 401, "unauthenticated");
    expectProblem(await p.api.request("GET", `/v1/marketplace/ledger/${second.id}`, { token: narrow.token }), 403, "insufficient_scope");
    expectProblem(await p.api.request("GET", "/v1/marketplace/ledger", { token: narrow.token }), 403, "insufficient_scope");
    expectProblem(await p.api.request("GET", "/v1/admin/ledger/verify", { token: buyer.token }), 403, "insufficient_scope");

    // Lists: the caller's entries only (an admin's: all), oldest first, filtered by subject.
    const mine = await p.api.request("GET", `/v1/marketplace/ledger?subject_id=${input.subjectId}`, { token: buyer.token });
    expect(mine.status, mine.text).toBe(200);
    expect(mine.body.data).toEqual([expect.objectContaining({ ...entry, anchor_index: mine.body.data[0].anchor_index })]);
    expect(mine.body.pagination).toEqual({ page: 1, limit: 20, total: 1, has_more: false });
    const theirs = await p.api.request("GET", `/v1/marketplace/ledger?subject_id=${input.subjectId}`, { token: stranger.token });
    expect(theirs.body.pagination.total).toBe(0);
    const all = await p.api.request("GET", "/v1/marketplace/ledger?kind=sale.completed&limit=100", { token: buyer.token });
    expect(all.body.data.map((e: { entry_id: string }) => e.entry_id)).toContain(first.id);
    expect(all.body.data.every((e: { parties: string[]; kind: string }) => e.parties.includes(buyer.id) && e.kind === "sale.completed")).toBe(true);
    const seqs = all.body.data.map((e: { seq: number }) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a: number, b: number) => a - b));
    const adminAll = await p.api.request("GET", `/v1/marketplace/ledger?subject_id=${input.subjectId}`, { token: admin });
    expect(adminAll.body.pagination.total).toBe(1);

    // Documented where clients look: the OpenAPI document.
    const doc = (await p.api.request("GET", "/v1/openapi.json")).body;
    const entryDoc = doc.paths["/v1/marketplace/ledger/{entry_id}"].get;
    expect(entryDoc.description).toMatch(/RFC 8785[\s\S]*MerkleProof[\s\S]*anchorAt/);
    expect(Object.keys(entryDoc.responses)).toEqual(expect.arrayContaining(["200", "401", "403", "404"]));
    expect(doc.paths["/v1/marketplace/ledger"].get.parameters.map((q: { name: string }) => q.name)).toEqual(expect.arrayContaining(["subject_id", "kind", "page", "limit"]));
    expect(doc.paths["/v1/admin/ledger/verify"].get.description).toMatch(/first_bad_seq/);
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(["LedgerEntry", "LedgerAnchor", "LedgerEntryList", "LedgerVerification"]));
  });

  it("N transactions appending at once get contiguous seqs; a rolled-back append leaves no gap; the chain verifies", async () => {
    // Twelve connections: the appends queue for them as the ledger's lock makes them wait, and the
    // run keeps within a default Postgres's 100 connections with the other files running beside it.
    const pool = createDb(p.databaseUrl, 12);
    try {
      const before = await headSeq();
      const N = 40;
      const appended = await Promise.all(
        Array.from({ length: N }, (_, i) =>
          pool.transaction().execute(async (trx) => {
            // Some other work of the transaction first (it takes a transaction id, as a write does), then the append as its last write.
            await sql`select txid_current()`.execute(trx);
            return ledger().append(trx, sale({ data: { n: i } }));
          }),
        ),
      );
      expect(appended.map((a) => a.seq).sort((a, b) => (a < b ? -1 : 1))).toEqual(Array.from({ length: N }, (_, i) => before + 1n + BigInt(i)));

      await expect(
        pool.transaction().execute(async (trx) => {
          await ledger().append(trx, sale());
          throw new Error("the caller's transaction fails after the append");
        }),
      ).rejects.toThrow(/fails after the append/);
      expect((await ledger().append(pool, sale())).seq).toBe(before + BigInt(N) + 1n);
      // Under REPEATABLE READ the head read after the lock could be stale: refused.
      await expect(pool.transaction().setIsolationLevel("repeatable read").execute((trx) => ledger().append(trx, sale()))).rejects.toThrow(/READ COMMITTED/);

      const rows = await p.db.selectFrom("audit_ledger").selectAll().orderBy("seq").execute();
      rows.forEach((row, i) => {
        expect(row.seq).toBe(BigInt(i + 1));
        if (i > 0) {
          expect(row.prev_hash).toBe(rows[i - 1]!.entry_hash);
          expect(row.created_at.getTime()).toBeGreaterThanOrEqual(rows[i - 1]!.created_at.getTime());
        }
      });
      const verified = await p.api.request("GET", "/v1/admin/ledger/verify", { token: admin });
      expect(verified.status, verified.text).toBe(200);
      expect(verified.body).toEqual({ ok: true, entries_checked: rows.length, anchors_checked: expect.any(Number), first_bad_seq: null, problem: null });
    } finally {
      await pool.destroy();
    }
  });

  it("the database refuses UPDATE, DELETE and TRUNCATE of the ledger, also from the API's own role", async () => {
    const { id, entryHash } = await ledger().append(p.db, sale());
    await expect(p.db.updateTable("audit_ledger").set({ kind: "sale.forged" }).where("id", "=", id).execute()).rejects.toThrow(/append-only: UPDATE refused/);
    await expect(p.db.updateTable("audit_ledger").set({ kind: "sale.forged" }).where("id", "=", "led_none").execute()).rejects.toThrow(/append-only: UPDATE refused/);
    await expect(p.db.deleteFrom("audit_ledger").where("id", "=", id).execute()).rejects.toThrow(/append-only: DELETE refused/);
    await expect(sql`truncate audit_ledger`.execute(p.db)).rejects.toThrow(/append-only: TRUNCATE refused/);
    await expect(sql`insert into audit_ledger (id, seq, kind, subject_id, parties, data, created_at, prev_hash, entry_hash) values ('led_x', 1, 'k', 's', '{}', '{}', now(), ${"0x" + "0".repeat(64)}, ${"0x" + "1".repeat(64)})`.execute(p.db)).rejects.toThrow(/duplicate key/);
    const row = await p.db.selectFrom("audit_ledger").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ kind: "sale.completed", entry_hash: entryHash });
  });

  it("anchors the ledger on AuditAnchor: confirmed from the indexer, each proof verifying against the root the contract holds", async () => {
    const appended = [];
    for (let i = 0; i < 5; i++) appended.push(await ledger().append(p.db, sale({ data: { batch: i } })));
    const head = await headSeq();
    await anchoredThrough(head);

    const anchors = await p.db.selectFrom("ledger_anchors").selectAll().where("status", "=", "confirmed").orderBy("first_seq").execute();
    expect(anchors.length).toBeGreaterThanOrEqual(1);
    for (const [i, a] of anchors.entries()) {
      // Contiguous from entry 1, and what the contract holds.
      expect(a.first_seq).toBe(i === 0 ? 1n : anchors[i - 1]!.last_seq + 1n);
      expect(a.anchor_index).toBe(BigInt(i + 1));
      const onChain = await anchorOnChain(Number(a.anchor_index));
      expect({ first: onChain.firstSeq, last: onChain.lastSeq, root: onChain.merkleRoot, head: onChain.headHash }).toEqual({
        first: a.first_seq,
        last: a.last_seq,
        root: a.merkle_root,
        head: a.head_hash,
      });
      const hashes = await p.db.selectFrom("audit_ledger").select("entry_hash").where("seq", ">=", a.first_seq).where("seq", "<=", a.last_seq).orderBy("seq").execute();
      expect(merkle.root(hashes.map((h) => h.entry_hash as Hex))).toBe(a.merkle_root);
      expect(a).toMatchObject({ contract_address: anchorAddress.toLowerCase(), chain_id: env().chainId });
      // Its transaction is its operation's.
      const op = await p.db.selectFrom("chain_operations").selectAll().where("key", "=", `ledger_anchor:${a.first_seq}-${a.last_seq}`).executeTakeFirst();
      expect(transactionOf(op)).toMatch(/^0x[0-9a-f]{64}$/);
    }
    expect(await chain().readContract({ address: anchorAddress, abi: auditAnchorAbi, functionName: "lastAnchoredSeq" })).toBeGreaterThanOrEqual(head);

    // The indexer saw them: the operations end up indexed, and its view holds the same anchors.
    await waitFor(
      async () => {
        const ops = await p.db.selectFrom("chain_operations").select(["key", "indexed_at"]).where("kind", "=", "ledger_anchor").where("status", "=", "confirmed").execute();
        return ops.length >= anchors.length && ops.every((o) => o.indexed_at !== null);
      },
      { timeoutMs: 30_000, what: "anchors indexed" },
    );
    const viewed = await sql<{ anchor_index: bigint; merkle_root: string }>`select anchor_index, merkle_root from ${sql.id(p.indexer.viewsSchema, "ledger_anchor")} order by anchor_index`.execute(p.db);
    expect(viewed.rows.slice(0, anchors.length).map((r) => r.merkle_root)).toEqual(anchors.map((a) => a.merkle_root));

    // Every entry of this test: its proof folds its recomputed hash to the contract's root.
    for (const { id } of appended) {
      const res = await p.api.request("GET", `/v1/marketplace/ledger/${id}`, { token: seller.token });
      expect(res.status, res.text).toBe(200);
      const anchor = res.body.anchor;
      expect(anchor).toMatchObject({ chain_id: env().chainId, contract_address: anchorAddress.toLowerCase(), tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/), proof: expect.any(Array) });
      expect(res.body.seq).toBeGreaterThanOrEqual(anchor.first_seq);
      expect(res.body.seq).toBeLessThanOrEqual(anchor.last_seq);
      const onChain = await anchorOnChain(anchor.anchor_index);
      expect(anchor.merkle_root).toBe(onChain.merkleRoot);
      expect(merkle.verify(anchor.proof, onChain.merkleRoot, recomputedHash(res.body))).toBe(true);
      const check = await checkEntryAgainstChain(res.body, env().rpcUrl);
      expect(check).toMatchObject({ verdict: "anchored", problems: [], chainRoot: onChain.merkleRoot });
    }

    // The auditor's script, as a reader would run it: the entry JSON on stdin, an RPC URL.
    const last = await p.api.request("GET", `/v1/marketplace/ledger/${appended.at(-1)!.id}`, { token: buyer.token });
    const run = promisify(execFile)("node_modules/.bin/tsx", ["tools/ledger-verify.ts", "-", env().rpcUrl]);
    run.child.stdin!.end(last.text);
    const { stdout } = await run;
    expect(stdout).toMatch(/OK: the entry is anchored on-chain as served/);

    const verified = await p.api.request("GET", "/v1/admin/ledger/verify", { token: admin });
    expect(verified.body).toMatchObject({ ok: true, anchors_checked: anchors.length, first_bad_seq: null });

    // A range sent again after it got through is settled (AuditAnchorOutOfOrder with an earlier first
    // seq); a gap is not. The receipt gives the same facts as the indexer (confirmation while it lags).
    const relayer = p.api.server.platform.relayer;
    const refusal = (first: bigint) =>
      relayer.simulate({ address: anchorAddress, abi: auditAnchorAbi, functionName: "anchor", args: [first, first, anchors[0]!.merkle_root as Hex, anchors[0]!.head_hash as Hex] }).then(
        () => null,
        (err: unknown) => err,
      );
    const lastAnchored = await chain().readContract({ address: anchorAddress, abi: auditAnchorAbi, functionName: "lastAnchoredSeq" });
    expect(anchoring().settled(await refusal(1n))).toBe(true);
    expect(anchoring().settled(await refusal(lastAnchored + 2n))).toBe(false);
    const ops = await p.db.selectFrom("chain_operations").selectAll().where("kind", "=", "ledger_anchor").where("status", "=", "confirmed").orderBy("id").execute();
    const fromChain = await anchoring().readFromChain(ops);
    expect(fromChain.map((f) => [f.key, f.facts.anchorIndex, f.facts.merkleRoot])).toEqual(
      anchors.map((a) => [`ledger_anchor:${a.first_seq}-${a.last_seq}`, a.anchor_index, a.merkle_root]),
    );
  });

  it("a row changed behind the database's back is caught by the verifier and by the proof check", async () => {
    const target = await ledger().append(p.db, sale({ data: { price_cents: 500_000 } }));
    await ledger().append(p.db, sale());
    const head = await headSeq();
    await anchoredThrough(head);
    const original = await p.db.selectFrom("audit_ledger").selectAll().where("seq", ">=", target.seq).orderBy("seq").execute();
    const asSuperuser = (statement: ReturnType<typeof sql>) =>
      p.db.transaction().execute(async (trx) => {
        await sql`alter table audit_ledger disable trigger audit_ledger_no_change`.execute(trx);
        await statement.execute(trx);
        await sql`alter table audit_ledger enable trigger audit_ledger_no_change`.execute(trx);
      });
    const verify = async () => (await p.api.request("GET", "/v1/admin/ledger/verify", { token: admin })).body;

    try {
      // 1. The price changed, the hashes left alone: the entry no longer hashes to its entry_hash.
      await asSuperuser(sql`update audit_ledger set data = jsonb_set(data, '{price_cents}', '1') where id = ${target.id}`);
      expect(await verify()).toMatchObject({ ok: false, first_bad_seq: Number(target.seq), problem: expect.stringMatching(/does not match the entry's content/) });
      const served = (await p.api.request("GET", `/v1/marketplace/ledger/${target.id}`, { token: buyer.token })).body as ServedEntry;
      expect(served.data.price_cents).toBe(1);
      const onChain = await anchorOnChain(served.anchor!.anchor_index);
      expect(recomputedHash(served)).not.toBe(served.entry_hash);
      expect(merkle.verify(served.anchor!.proof, onChain.merkleRoot, recomputedHash(served))).toBe(false);
      expect(await checkEntryAgainstChain(served, env().rpcUrl)).toMatchObject({ verdict: "mismatch" });

      // 2. The whole tail rewritten consistently (every hash and link recomputed): only the anchor tells.
      let prev = original[0]!.prev_hash as Hex;
      for (const row of original) {
        const data = row.id === target.id ? { ...row.data, price_cents: 1 } : row.data;
        const hash = entryHashOf(prev, { seq: Number(row.seq), kind: row.kind, subject_id: row.subject_id, actor_id: row.actor_id, parties: row.parties, data, created_at: row.created_at.toISOString() });
        await asSuperuser(sql`update audit_ledger set data = ${JSON.stringify(data)}::jsonb, prev_hash = ${prev}, entry_hash = ${hash} where id = ${row.id}`);
        prev = hash;
      }
      const anchorOfTarget = await p.db.selectFrom("ledger_anchors").selectAll().where("status", "=", "confirmed").where("first_seq", "<=", target.seq).where("last_seq", ">=", target.seq).executeTakeFirstOrThrow();
      expect(await verify()).toMatchObject({ ok: false, first_bad_seq: Number(anchorOfTarget.first_seq), problem: expect.stringMatching(/Merkle root .* is not the anchored root/) });
      const rewritten = (await p.api.request("GET", `/v1/marketplace/ledger/${target.id}`, { token: buyer.token })).body as ServedEntry;
      expect(recomputedHash(rewritten)).toBe(rewritten.entry_hash);
      expect(await checkEntryAgainstChain(rewritten, env().rpcUrl)).toMatchObject({ verdict: "mismatch", problems: [expect.stringMatching(/the proof folds to/)] });
    } finally {
      for (const row of original) {
        await asSuperuser(sql`update audit_ledger set data = ${JSON.stringify(row.data)}::jsonb, prev_hash = ${row.prev_hash}, entry_hash = ${row.entry_hash} where id = ${row.id}`);
      }
    }
    expect(await verify()).toMatchObject({ ok: true, first_bad_seq: null });
  });
});
