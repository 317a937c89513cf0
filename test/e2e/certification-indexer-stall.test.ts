/**
 * A stalled indexer must not hold certifications. Ponder's websocket feed goes silent (a proxy
 * between it and the chain stops delivering; the connection stays open, so Ponder's /ready stays
 * 200): two API processes on one database still certify every artwork, from the chain (the
 * certify transaction's receipt), each once, with its one event and provenance entry, and /readyz
 * says the indexer is stalled. Once the feed delivers again, the indexer catches up and each
 * record is reconciled with its view, still once.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { readIndexerStatus } from "../../api/src/chain/indexer-views.ts";
import { startTestApi, type TestApi } from "../support/api.ts";
import { certifyOperationOf, freshRelayerKey, publicClient, tokenIdOfArtwork, useArtworkPlatform } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { type FreezableProxy, startFreezableProxy } from "../support/freezable-proxy.ts";
import { artworkForm, createSdkUser, type SdkUser, sdk, sdkOf } from "../support/sdk.ts";
import { waitFor } from "../support/wait.ts";

const env = testEnvironment();
let feed: FreezableProxy;
beforeAll(async () => {
  // The Hardhat node serves its websocket on its HTTP port.
  feed = await startFreezableProxy(Number(new URL(env.wsUrl).port));
});
afterAll(async () => {
  await feed?.close();
});

const settings = { INDEXER_STALL_TIMEOUT_MS: "1500", CERTIFICATION_SWEEP_INTERVAL_MS: "500" };
const p = useArtworkPlatform(settings, { indexerTarget: () => ({ wsUrl: `ws://127.0.0.1:${feed.port}` }) });

/** A second API process on the same database, with a relayer of its own (as several instances run). */
let second: TestApi;
beforeAll(async () => {
  second = await startTestApi({ ...p.env, RELAYER_PRIVATE_KEY: await freshRelayerKey() });
});
afterAll(async () => {
  await second?.close();
});

const row = (id: string) => p.db.selectFrom("artworks").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
/** The certification's chain phase: its operation (transaction, confirmation, indexing). */
const operation = async (id: string) => (await certifyOperationOf(p.db, id))!;
const certifiedEvents = (id: string) =>
  p.db.selectFrom("outbox_events").select("payload").where("event_type", "=", "artwork.certified").where(sql`payload->>'artwork_id'`, "=", id).execute();
const certifiedEntries = (id: string) =>
  p.db.selectFrom("artwork_provenance").select("tx_hash").where("artwork_id", "=", id).where("event", "=", "certified").execute();
const indexedBlock = async () => (await readIndexerStatus({ db: p.db, viewsSchema: p.indexer.viewsSchema })).indexedBlock;
const readyz = async (api: TestApi) => {
  // Raw HTTP: the readiness probe, read as a load balancer reads it.
  const res = await fetch(`${api.url}/readyz`);
  return { status: res.status, body: (await res.json()) as { checks: { indexer: { status: string; error?: string; stalled?: boolean; lag_blocks?: number } } } };
};
const mineBlock = () => publicClient().request({ method: "evm_mine", params: [] } as never);
async function waitCertified(id: string) {
  return waitFor(async () => ((await row(id)).status === "certified" ? row(id) : null), { timeoutMs: 30_000, what: `certification of ${id}` });
}

describe("certification while the indexer is stalled", () => {
  let artist: SdkUser;
  const ids: string[] = [];

  it("certifies from the chain while the indexer's feed is silent: once each, from two API processes; /readyz names the stall", async () => {
    artist = await createSdkUser(p.api.url, { role: "artist" });
    // Healthy first (a new head brings a websocket indexer to it): the indexer confirms, and the record counts as indexed.
    await mineBlock();
    await waitFor(async () => (await readyz(p.api)).status === 200, { timeoutMs: 15_000, what: "/readyz 200 before the stall" });
    const { data: before } = await artist.api.POST("/v1/artworks", { body: artworkForm() });
    await waitCertified(before.id);
    expect((await operation(before.id)).indexed_at).not.toBeNull();

    feed.freeze();
    for (const api of [p.api, second, p.api, second, p.api, second]) {
      const { data: created, response } = await sdkOf(api.url, artist).POST("/v1/artworks", { body: artworkForm() });
      expect(response.status).toBe(201);
      ids.push(created.id);
    }
    const rows = await Promise.all(ids.map(waitCertified));

    // It was the chain, not the indexer: its view has none of them (its block stays below theirs, checked below).
    const stuckAt = (await indexedBlock())!;
    expect(await p.views.selectFrom("certificate").select("artwork_id").where("artwork_id", "in", ids).execute()).toEqual([]);
    // Ponder itself does not notice (the failure this guards against); the API's /readyz does, in both processes.
    // Raw HTTP: Ponder's own readiness endpoint, not the API.
    expect((await fetch(`${p.indexer.url}/ready`)).status).toBe(200);
    for (const api of [p.api, second]) {
      const ready = await waitFor(async () => {
        const r = await readyz(api);
        return r.status === 503 && r.body.checks.indexer.stalled ? r : null;
      }, { what: "/readyz reporting the stall" });
      expect(ready.body.checks.indexer.error).toMatch(/^indexer stalled: at block \d+, \d+ blocks behind the chain head \d+, no new block indexed for \d+ s .*confirmed from the chain/);
      // What the API shows of the chain is old, and its answers say so.
      const answer = await waitFor(async () => {
        const res = await fetch(`${api.url}/v1/artworks/${ids[0]}`);
        return res.headers.get("indexer-lag") ? res : null;
      }, { what: "the Indexer-Lag header" });
      expect(answer.headers.get("indexer-lag")).toMatch(/^blocks=[1-9]\d*, seconds=\d+$/);
    }

    const client = publicClient();
    for (const r of rows) {
      // The chain's facts, as the indexer would have recorded them.
      const tokenId = await tokenIdOfArtwork(r.id);
      expect(r.token_id).toBe(tokenId);
      const [log] = await client.getContractEvents({ address: env.artCertificateAddress, abi: artCertificateAbi, eventName: "ArtworkCertified", args: { tokenId }, fromBlock: 0n, strict: true });
      const block = await client.getBlock({ blockNumber: log!.blockNumber });
      expect(block.number).toBeGreaterThan(stuckAt);
      expect(r).toMatchObject({ certificate_hash: log!.args.certificateHash, certified_at: new Date(Number(block.timestamp) * 1000) });
      // Confirmed from the chain, not yet indexed, no attempt holding it.
      expect(await operation(r.id)).toMatchObject({
        status: "confirmed",
        confirmed_from: "chain",
        tx_hash: log!.transactionHash,
        result: expect.objectContaining({ txHash: log!.transactionHash, certificateHash: log!.args.certificateHash }),
        indexed_at: null,
        lease_until: null,
      });
      // Exactly once, though both processes confirmed from the chain.
      const events = await certifiedEvents(r.id);
      expect(events).toHaveLength(1);
      expect(events[0]!.payload).toEqual({
        artwork_id: r.id,
        certificate_hash: log!.args.certificateHash,
        certified_at: new Date(Number(block.timestamp) * 1000).toISOString(),
        token_id: Number(tokenId),
        contract_address: env.artCertificateAddress.toLowerCase(),
        chain_id: env.chainId,
        tx_hash: log!.transactionHash,
      });
      expect(await certifiedEntries(r.id)).toEqual([{ tx_hash: log!.transactionHash }]);
    }
    // The API answers certified, with the provenance entry and its transaction.
    const { data: detail } = await sdk(p.api.url).GET("/v1/artworks/{id}", { params: { path: { id: ids[0]! } } });
    expect(detail).toMatchObject({ status: "certified", verified: true, token_id: Number(rows[0]!.token_id) });
    expect(detail.provenance.find((e) => e.event === "certified")).toMatchObject({ tx: (await operation(ids[0]!)).tx_hash });
  }, 90_000);

  it("reconciles with the indexer once its feed delivers again: the same facts, still one event and one entry each", async () => {
    feed.thaw();
    // A new block, in case the held-back heads ended before the last certification.
    await mineBlock();
    await waitFor(async () => (await Promise.all(ids.map(operation))).every((op) => op.indexed_at !== null), {
      timeoutMs: 30_000,
      what: "reconciliation with the indexer",
    });
    const indexed = await p.views.selectFrom("certificate").selectAll().where("artwork_id", "in", ids).execute();
    expect(indexed).toHaveLength(ids.length);
    for (const c of indexed) {
      const r = await row(c.artwork_id);
      expect(r).toMatchObject({ token_id: c.token_id, certificate_hash: c.certificate_hash, certified_at: new Date(Number(c.certified_at) * 1000) });
      expect((await operation(c.artwork_id)).result).toMatchObject({ txHash: c.tx_hash, tokenId: c.token_id.toString() });
      expect(await certifiedEvents(c.artwork_id)).toHaveLength(1);
      expect(await certifiedEntries(c.artwork_id)).toEqual([{ tx_hash: c.tx_hash }]);
    }
    await waitFor(async () => (await readyz(p.api)).status === 200 && (await readyz(p.api)).body.checks.indexer.status === "ok", { timeoutMs: 15_000, what: "/readyz ready after the catch-up" });
    // The header follows the lag monitor's next sample.
    await waitFor(async () => (await fetch(`${p.api.url}/v1/artworks/${ids[0]}`)).headers.get("indexer-lag") === null, { what: "no Indexer-Lag header once caught up" });
  }, 60_000);
});
