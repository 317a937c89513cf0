/**
 * A buy-now sale across a crash of the API: its HTTP process and its worker run as children
 * (`api/src/server.ts`, `api/src/worker.ts`) and are SIGKILLed (1) once the buyer is charged, at
 * the moment the worker hands the ArtMarket.settle transaction to the node (the worker's RPC goes
 * through a proxy that holds that request, so the moment is exact), the transaction then reaching
 * the chain or never; (2) right after the purchase request commits, before the charge. A fresh API
 * on the same database finishes each sale: one charge, one settlement, one payment.completed, and
 * the buyer's wallet is the token's ownerOf.
 */
import { mkdtempSync } from "node:fs";
import path from "node:path";
import { type Kysely, sql } from "kysely";
import { type Hex, keccak256, parseTransaction, type TransactionSerializable } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { IndexerViews } from "../../api/src/chain/indexer-schema.ts";
import { createDb } from "../../api/src/db/connection.ts";
import type { ManagedProcess } from "../../tools/stack/processes.ts";
import { type ApiProcesses, QUICK_RECOVERY, startApiProcesses } from "../support/api-processes.ts";
import { createPlatformDatabase, freshRelayerKey, platformSettings, publicClient, transactionCount } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { startIndexerForTest, type TestIndexer } from "../support/indexer.ts";
import { certifiedArtwork, indexedCertificate, ownerOnChain, walletOf } from "../support/marketplace.ts";
import { expectResentByFate, type JsonRpcProxy, startJsonRpcProxy } from "../support/rpc-proxy.ts";
import { createSdkUser, type SdkUser, sdk, sdkOf } from "../support/sdk.ts";
import { waitFor } from "../support/wait.ts";

const env = testEnvironment();
let database: Awaited<ReturnType<typeof createPlatformDatabase>>;
let indexer: TestIndexer;
let relayerKey: Hex;
let db: ReturnType<typeof createDb>;
let views: Kysely<IndexerViews>;
let storageDir: string;
let proxy: JsonRpcProxy;
/** What the proxy does with the worker's next settle transaction (once): by default it passes. */
let onSettleSent: ((raw: Hex, tx: TransactionSerializable) => Promise<"forward" | "drop">) | null = null;
/** Every ArtMarket transaction a worker handed to the node, in order (the held one included). */
const settlesSent: Hex[] = [];
const children: ManagedProcess[] = [];

let current: ApiProcesses | null = null;
let artist: SdkUser;
let buyer: SdkUser;
const art = {} as Record<"forwarded" | "dropped" | "afterCommit", string>;

/** The API as an operator runs it; the worker's chain RPC goes through the proxy. */
async function startApi(name: string, settings: Record<string, string> = {}, options: { worker?: boolean } = {}): Promise<ApiProcesses> {
  const api = await startApiProcesses(
    `marketplace-${name}`,
    {
      ...platformSettings({ databaseUrl: database.databaseUrl, indexer, relayerKey, storageDir }),
      ...QUICK_RECOVERY,
      // Buy-now answers 202 at once: the sale goes on in the worker.
      MARKETPLACE_PURCHASE_WAIT_MS: "0",
      ...settings,
    },
    { worker: options.worker, workerSettings: { CHAIN_RPC_URL: proxy.url } },
  );
  children.push(api.http, ...(api.worker ? [api.worker] : []));
  return api;
}

async function kill(api: ApiProcesses): Promise<void> {
  await api.stop("SIGKILL");
}

async function list(artworkId: string): Promise<string> {
  const { data, response } = await sdkOf(current!.url, artist).POST("/v1/marketplace/listings", { body: { artwork_id: artworkId, price_usd: 100, accepts_offers: false } });
  expect(response.status).toBe(201);
  return data.listing_id;
}

/** The buyer's buy-now through the SDK on `url` with the key the buyer keeps for retries; `retry` as the SDK takes it. */
const purchase = (url: string, listingId: string, key: string, retry?: { maxRetries: number }) =>
  sdk(url, { token: buyer.token, retry }).POST("/v1/marketplace/listings/{id}/purchase", {
    params: { path: { id: listingId } },
    body: { payment_method_id: "pm_card_visa" },
    headers: { "Idempotency-Key": key },
  });

const count = async (query: Promise<{ n: unknown }>) => Number((await query).n);
const chargesOf = (saleId: string) => count(db.selectFrom("sandbox_charges").select((eb) => eb.fn.countAll().as("n")).where("idempotency_key", "=", `sale:${saleId}`).executeTakeFirstOrThrow());
const settlementsOf = (saleId: string) => count(views.selectFrom("sale_settlement").select((eb) => eb.fn.countAll().as("n")).where("sale_id", "=", saleId).executeTakeFirstOrThrow());
const completionEventsOf = (saleId: string) =>
  count(db.selectFrom("outbox_events").select((eb) => eb.fn.countAll().as("n")).where("event_type", "=", "payment.completed").where(sql`payload->>'tx_id'`, "=", saleId).executeTakeFirstOrThrow());
const saleOf = (saleId: string) => db.selectFrom("sales").selectAll().where("id", "=", saleId).executeTakeFirstOrThrow();
const relayerAddress = () => privateKeyToAccount(relayerKey).address;

/** After the restart: the sale completes, with one charge, one settlement, one payment.completed, and the buyer owns the token. */
async function expectSoldOnce(saleId: string, artworkId: string): Promise<{ on_chain_tx: string | null }> {
  const transaction = await waitFor(
    async () => {
      const { data } = await sdkOf(current!.url, buyer).GET("/v1/marketplace/transactions/{id}", { params: { path: { id: saleId } } });
      return data.status === "completed" && data;
    },
    { timeoutMs: 20_000, what: `completion of ${saleId} after the restart` },
  );
  expect(transaction).toMatchObject({ tx_id: saleId, type: "sale", amount_usd: 100, buyer_id: buyer.id, seller_id: artist.id });
  expect((await saleOf(saleId)).status).toBe("completed");
  expect(await chargesOf(saleId)).toBe(1);
  await waitFor(async () => (await settlementsOf(saleId)) > 0, { what: `the indexer's SaleSettled of ${saleId}` });
  expect(await settlementsOf(saleId)).toBe(1);
  expect(await completionEventsOf(saleId)).toBe(1);
  expect(await ownerOnChain((await indexedCertificate({ views }, artworkId)).tokenId)).toBe(await walletOf({ db }, buyer.id));
  return transaction;
}

beforeAll(async () => {
  database = await createPlatformDatabase();
  [indexer, relayerKey] = await Promise.all([startIndexerForTest({ target: { databaseUrl: database.databaseUrl } }), freshRelayerKey()]);
  db = createDb(database.databaseUrl, 2);
  views = db.withTables<IndexerViews>().withSchema(indexer.viewsSchema) as unknown as Kysely<IndexerViews>;
  storageDir = mkdtempSync(path.join(env.tempDir, "marketplace-crash-storage-"));
  proxy = await startJsonRpcProxy(env.rpcUrl, async (calls) => {
    const raw = calls.find((c) => c.method === "eth_sendRawTransaction")?.params[0] as Hex | undefined;
    if (!raw) return "forward";
    const tx = parseTransaction(raw);
    if (tx.to?.toLowerCase() !== env.artMarketAddress.toLowerCase()) return "forward";
    settlesSent.push(raw);
    if (!onSettleSent) return "forward";
    const hook = onSettleSent;
    onSettleSent = null;
    return hook(raw, tx);
  });
  current = await startApi("api");
  [artist, buyer] = await Promise.all([createSdkUser(current.url, { role: "artist" }), createSdkUser(current.url, { role: "collector" })]);
  const names = Object.keys({ forwarded: 0, dropped: 0, afterCommit: 0 }) as (keyof typeof art)[];
  const ids = await Promise.all(names.map(() => certifiedArtwork({ api: current!.api, views }, artist)));
  names.forEach((name, i) => (art[name] = ids[i]!));
}, 120_000);

afterAll(async () => {
  for (const child of children) await child.stop("SIGKILL", 5_000);
  await proxy?.close();
  await db?.destroy();
  await indexer?.stop();
  await database?.drop().catch(() => {});
});

it.each([
  { fate: "forward", name: "forwarded", what: "reaches the chain after the kill" },
  { fate: "drop", name: "dropped", what: "never reaches the chain" },
] as const)(
  "SIGKILL between charge and transfer (the settle transaction $what): after restart one charge, one transfer, one payment.completed; the buyer is the on-chain ownerOf",
  async ({ fate, name }) => {
    const listingId = await list(art[name]);
    const doomed = current!;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let answered: Promise<unknown> = Promise.resolve();
    const sent = new Promise<{ raw: Hex; nonce: number }>((resolve) => {
      onSettleSent = async (raw, tx) => {
        await answered;
        await kill(doomed);
        resolve({ raw, nonce: tx.nonce! });
        await released;
        return fate;
      };
    });
    const sentBefore = settlesSent.length;
    const purchased = purchase(doomed.url, listingId, `buy-${listingId}`);
    answered = purchased.catch(() => undefined);
    const { data: sale, response } = await purchased;
    expect(response.status).toBe(202);
    const saleId = sale.tx_id;
    const settle = await sent;
    expect((await doomed.worker!.exited).signal).toBe("SIGKILL");

    // At the kill: charged once, the sale paid, its transfer requested but neither stored as sent nor settled.
    expect(await chargesOf(saleId)).toBe(1);
    expect((await saleOf(saleId)).status).toBe("paid");
    const operation = await db.selectFrom("chain_operations").select(["status", "tx_hash"]).where("key", "=", `settle:${saleId}`).executeTakeFirstOrThrow();
    expect(operation).toEqual({ status: "pending", tx_hash: null });
    expect(await settlementsOf(saleId)).toBe(0);
    release();
    if (fate === "forward") {
      const receipt = await publicClient().waitForTransactionReceipt({ hash: keccak256(settle.raw) });
      expect(receipt.status).toBe("success");
    } else {
      expect(await transactionCount(relayerAddress())).toBe(settle.nonce);
    }

    current = await startApi(`api-after-${name}`);
    const sold = await expectSoldOnce(saleId, art[name]);
    // One settle transaction in all: the restart sent none (forwarded) or exactly the lost one again, with its nonce (dropped).
    expect(await transactionCount(relayerAddress())).toBe(settle.nonce + 1);
    expectResentByFate(fate, settle, settlesSent.slice(sentBefore + 1), sold.on_chain_tx);
  },
  60_000,
);

it("SIGKILL right after the purchase commits, before the charge: after restart one charge, one transfer, one payment.completed; the buyer is the on-chain ownerOf", async () => {
  const listingId = await list(art.afterCommit);
  // No worker while the purchase commits: nothing can charge before the kill.
  await Promise.all([current!.http.stop("SIGTERM"), current!.worker?.stop("SIGTERM")]);
  const doomed = await startApi("api-crash-after-commit", { IDEMPOTENCY_CRASH_AFTER_COMMIT: "true" }, { worker: false });
  const key = `buy-${listingId}`;
  // One attempt, cut off by the kill (the SDK's own retries would only find the port closed): the
  // buyer's retry with the same key comes after the restart.
  const lost = await purchase(doomed.url, listingId, key, { maxRetries: 0 }).then(
    (res) => res.response.status,
    () => "no answer",
  );
  expect(lost).toBe("no answer");
  expect((await doomed.http.exited).signal).toBe("SIGKILL");
  const sales = await db.selectFrom("sales").select(["id", "status"]).where("listing_id", "=", listingId).execute();
  expect(sales).toEqual([{ id: expect.any(String), status: "pending_payment" }]);
  const saleId = sales[0]!.id;
  expect(await chargesOf(saleId)).toBe(0);

  current = await startApi("api-after-commit-crash");
  // The buyer's retry answers the sale the lost answer was about, and starts no other.
  const replay = await purchase(current.url, listingId, key);
  expect(replay.response.headers.get("idempotent-replayed")).toBe("true");
  expect(replay.data.tx_id).toBe(saleId);
  await expectSoldOnce(saleId, art.afterCommit);
  expect(await db.selectFrom("sales").select("id").where("listing_id", "=", listingId).execute()).toEqual([{ id: saleId }]);
}, 60_000);
