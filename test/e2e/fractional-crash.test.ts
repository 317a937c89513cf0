/**
 * A share purchase across a crash of the API: its HTTP process and its worker run as children
 * (`api/src/server.ts`, `api/src/worker.ts`) and are SIGKILLed once the buyer is charged, at the
 * moment the worker hands the ArtShares.mintShares transaction to the node (the worker's RPC goes
 * through a proxy that holds that request, so the moment is exact), the transaction then reaching
 * the chain or never. A fresh API on the same database finishes the purchase: one charge, one mint
 * (one SharesMinted for its purchase key), one fractional.purchase_confirmed, the buyer's on-chain
 * balance.
 */
import { mkdtempSync } from "node:fs";
import path from "node:path";
import { type Kysely, sql } from "kysely";
import { type Address, decodeFunctionData, type Hex, keccak256, parseTransaction, toBytes, type TransactionSerializable } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import type { IndexerViews } from "../../api/src/chain/indexer-schema.ts";
import { createDb } from "../../api/src/db/connection.ts";
import type { ManagedProcess } from "../../tools/stack/processes.ts";
import { type ApiProcesses, QUICK_RECOVERY, startApiProcesses } from "../support/api-processes.ts";
import { createPlatformDatabase, freshRelayerKey, platformSettings, publicClient, transactionCount } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { startIndexerForTest, type TestIndexer } from "../support/indexer.ts";
import { certifiedArtwork, indexedCertificate, walletOf } from "../support/marketplace.ts";
import { expectResentByFate, type JsonRpcProxy, startJsonRpcProxy } from "../support/rpc-proxy.ts";
import { createSdkUser, type SdkUser, sdkOf } from "../support/sdk.ts";
import { waitFor } from "../support/wait.ts";

const env = testEnvironment();
let database: Awaited<ReturnType<typeof createPlatformDatabase>>;
let indexer: TestIndexer;
let relayerKey: Hex;
let db: ReturnType<typeof createDb>;
let views: Kysely<IndexerViews>;
let storageDir: string;
let proxy: JsonRpcProxy;
/** What the proxy does with the worker's next mintShares transaction (once): by default it passes. */
let onMintSent: ((raw: Hex, tx: TransactionSerializable) => Promise<"forward" | "drop">) | null = null;
/** Every mintShares transaction a worker handed to the node, in order (the held one included). */
const mintsSent: Hex[] = [];
const children: ManagedProcess[] = [];

let current: ApiProcesses | null = null;
let owner: SdkUser;
let buyer: SdkUser;
let artworkId: string;
let tokenId: bigint;

/** The API as an operator runs it; the worker's chain RPC goes through the proxy. */
async function startApi(name: string): Promise<ApiProcesses> {
  const api = await startApiProcesses(
    `fractional-${name}`,
    {
      ...platformSettings({ databaseUrl: database.databaseUrl, indexer, relayerKey, storageDir }),
      ...QUICK_RECOVERY,
      // The purchase answers 202 at once: it goes on in the worker.
      FRACTIONAL_PURCHASE_WAIT_MS: "0",
    },
    { workerSettings: { CHAIN_RPC_URL: proxy.url } },
  );
  children.push(api.http, api.worker!);
  return api;
}

async function kill(api: ApiProcesses): Promise<void> {
  await api.stop("SIGKILL");
}

/** The buyer's share purchase through the SDK on `url`, with the key the buyer keeps for retries. */
const purchase = (url: string, key: string) =>
  sdkOf(url, buyer).POST("/v1/fractional/{id}/purchase", {
    params: { path: { id: artworkId } },
    body: { shares_quantity: 10, payment_method_id: "pm_card_visa" },
    headers: { "Idempotency-Key": key },
  });

const count = async (query: Promise<{ n: unknown }>) => Number((await query).n);
const chargesOf = (id: string) => count(db.selectFrom("sandbox_charges").select((eb) => eb.fn.countAll().as("n")).where("idempotency_key", "=", `share_purchase:${id}`).executeTakeFirstOrThrow());
const mintsOf = (id: string) =>
  count(views.selectFrom("share_mint").select((eb) => eb.fn.countAll().as("n")).where(sql`lower(purchase_key)`, "=", keccak256(toBytes(id)).toLowerCase()).executeTakeFirstOrThrow());
const confirmationsOf = (id: string) =>
  count(db.selectFrom("outbox_events").select((eb) => eb.fn.countAll().as("n")).where("event_type", "=", "fractional.purchase_confirmed").where(sql`payload->>'purchase_id'`, "=", id).executeTakeFirstOrThrow());
const balanceOf = async (wallet: string) =>
  publicClient().readContract({ address: env.artSharesAddress, abi: artSharesAbi, functionName: "balanceOf", args: [wallet as Address, tokenId] });
const relayerAddress = () => privateKeyToAccount(relayerKey).address;

beforeAll(async () => {
  database = await createPlatformDatabase();
  [indexer, relayerKey] = await Promise.all([startIndexerForTest({ target: { databaseUrl: database.databaseUrl } }), freshRelayerKey()]);
  db = createDb(database.databaseUrl, 2);
  views = db.withTables<IndexerViews>().withSchema(indexer.viewsSchema) as unknown as Kysely<IndexerViews>;
  storageDir = mkdtempSync(path.join(env.tempDir, "fractional-crash-storage-"));
  proxy = await startJsonRpcProxy(env.rpcUrl, async (calls) => {
    const raw = calls.find((c) => c.method === "eth_sendRawTransaction")?.params[0] as Hex | undefined;
    if (!raw) return "forward";
    const tx = parseTransaction(raw);
    if (tx.to?.toLowerCase() !== env.artSharesAddress.toLowerCase() || !tx.data) return "forward";
    if (decodeFunctionData({ abi: artSharesAbi, data: tx.data }).functionName !== "mintShares") return "forward";
    mintsSent.push(raw);
    if (!onMintSent) return "forward";
    const hook = onMintSent;
    onMintSent = null;
    return hook(raw, tx);
  });
  current = await startApi("api");
  [owner, buyer] = await Promise.all([createSdkUser(current.url, { role: "artist" }), createSdkUser(current.url, { role: "collector" })]);
  artworkId = await certifiedArtwork({ api: current.api, views }, owner);
  tokenId = (await indexedCertificate({ views }, artworkId)).tokenId;
  await owner.api.POST("/v1/fractional/artworks", { body: { artwork_id: artworkId, total_shares: 100, price_per_share_usd: 3 } });
  await waitFor(async () => (await owner.api.GET("/v1/fractional/artworks/{id}", { params: { path: { id: artworkId } } })).data.status === "active", { timeoutMs: 20_000, what: "the share class" });
}, 120_000);

afterAll(async () => {
  for (const child of children) await child.stop("SIGKILL", 5_000);
  await proxy?.close();
  await db?.destroy();
  await indexer?.stop();
  await database?.drop().catch(() => {});
});

it.each([
  { fate: "forward", held: 10n, what: "reaches the chain after the kill" },
  { fate: "drop", held: 20n, what: "never reaches the chain" },
] as const)(
  "SIGKILL between charge and mint (the mintShares transaction $what): after restart one charge, one mint, one purchase_confirmed; the buyer holds the shares on-chain",
  async ({ fate, held }) => {
    const doomed = current!;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let answered: Promise<unknown> = Promise.resolve();
    const sent = new Promise<{ raw: Hex; nonce: number }>((resolve) => {
      onMintSent = async (raw, tx) => {
        await answered;
        await kill(doomed);
        resolve({ raw, nonce: tx.nonce! });
        await released;
        return fate;
      };
    });
    const key = `frac-crash-${fate}`;
    const sentBefore = mintsSent.length;
    const purchased = purchase(doomed.url, key);
    answered = purchased.catch(() => undefined);
    const { data: pending, response } = await purchased;
    expect(response.status).toBe(202);
    const id = pending.purchase_id;
    const mint = await sent;
    expect((await doomed.worker!.exited).signal).toBe("SIGKILL");

    // At the kill: charged once, its mint requested but neither stored as sent nor minted.
    expect(await chargesOf(id)).toBe(1);
    expect(await db.selectFrom("fractional_purchases").select("status").where("id", "=", id).executeTakeFirstOrThrow()).toEqual({ status: "pending" });
    expect(await db.selectFrom("transactions").select(["status", "stage"]).where("reference_id", "=", id).executeTakeFirstOrThrow()).toEqual({ status: "pending", stage: "effecting" });
    expect(await db.selectFrom("chain_operations").select(["status", "tx_hash"]).where("key", "=", `mint:${id}`).executeTakeFirstOrThrow()).toEqual({ status: "pending", tx_hash: null });
    expect(await mintsOf(id)).toBe(0);
    release();
    if (fate === "forward") {
      expect((await publicClient().waitForTransactionReceipt({ hash: keccak256(mint.raw) })).status).toBe("success");
    } else {
      expect(await transactionCount(relayerAddress())).toBe(mint.nonce);
    }

    current = await startApi(`api-after-${fate}`);
    const confirmed = await waitFor(
      async () => {
        const { data: got } = await sdkOf(current!.url, buyer).GET("/v1/fractional/purchases/{id}", { params: { path: { id } } });
        return got.status === "confirmed" && got;
      },
      { timeoutMs: 20_000, what: `confirmation of ${id} after the restart` },
    );
    expect(confirmed).toMatchObject({ purchase_id: id, shares_purchased: 10, total_paid_usd: 30, new_ownership_pct: Number(held) });
    expect(await chargesOf(id)).toBe(1);
    await waitFor(async () => (await mintsOf(id)) > 0, { what: `the indexer's SharesMinted of ${id}` });
    expect(await mintsOf(id)).toBe(1);
    expect(await confirmationsOf(id)).toBe(1);
    expect(await balanceOf(await walletOf({ db }, buyer.id))).toBe(held);
    // One mint transaction in all: the restart sent none (forwarded) or exactly the lost one again, with its nonce (dropped).
    expect(await transactionCount(relayerAddress())).toBe(mint.nonce + 1);
    expectResentByFate(fate, mint, mintsSent.slice(sentBefore + 1), confirmed.on_chain_tx);
    // The buyer's retry answers the same purchase.
    const replay = await purchase(current.url, key);
    expect(replay.response.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.data.purchase_id).toBe(id);
  },
  60_000,
);
