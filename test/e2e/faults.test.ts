/**
 * Faults of the platform's parts, each on a platform of its own (database, Ponder, relayer, API),
 * run at the same time:
 * - the chain node unreachable while a certification, a share purchase and a buy-now sale are
 *   made, until each write's next retry is more than RECOVER_WITHIN_MS away (five failed attempts,
 *   about 30 s): the requests answer as usual, reads answer, and the chain writes complete once the
 *   node is back, sooner than their backoff would have brought them, each once (one token, one
 *   SharesMinted, one settlement, one charge, one event each);
 * - the indexer SIGKILLed and started again: it catches up, and the certifications started while it
 *   was down are confirmed by it afterwards, each once (certification-indexer-stall.test.ts covers an
 *   indexer that stays up but goes silent, confirmed from the chain meanwhile);
 * - webhook receivers down for every attempt the default retry schedule makes in a day, scaled down
 *   (WEBHOOK_DAY_SCALE): one resetting connections, one answering 503; afterwards every event is
 *   delivered once, after the receivers' return, with one request (or reset connection) per attempt the database counts,
 *   none lost, none failed.
 * Postgres restarted under load: faults-postgres.test.ts.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { type Address, keccak256, toBytes } from "viem";
import { describe, expect, it } from "vitest";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import { readIndexerStatus } from "../../api/src/chain/indexer-views.ts";
import { loadConfig } from "../../api/src/config.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { recordEvent } from "../../api/src/jobs/outbox.ts";
import { createIsolatedDatabase, type TestApi, testApiSettings } from "../support/api.ts";
import { Receiver } from "../support/webhooks.ts";
import { type ApiProcesses, startApiProcesses } from "../support/api-processes.ts";
import { publicClient, startArtworkPlatform, tokenIdOfArtwork } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { startFreezableProxy } from "../support/freezable-proxy.ts";
import { certifiedArtwork, indexedCertificate, ownerOnChain, walletOf } from "../support/marketplace.ts";
import { artworkForm, createSdkUser, sdk } from "../support/sdk.ts";
import { signalled, waitFor } from "../support/wait.ts";

/**
 * The chain writes complete within this of the node's return. The node stays unreachable until each
 * write's next retry is further away than this: only the node's return can bring them sooner.
 */
const RECOVER_WITHIN_MS = 25_000;
/** The webhook retry schedule runs this much faster: a day lasts 24 s. */
const WEBHOOK_DAY_SCALE = 1 / 3600;
const DAY_MS = 86_400_000 * WEBHOOK_DAY_SCALE;
/** A request answered later than this while a part is down counts as hung. */
const ANSWER_WITHIN_MS = 10_000;

const env = testEnvironment();
const count = async (query: Promise<{ n: unknown }>) => Number((await query).n);
const readyz = async (api: TestApi) => {
  // Raw HTTP: the readiness probe, read as a load balancer reads it.
  const res = await fetch(`${api.url}/readyz`);
  return { status: res.status, contentType: res.headers.get("content-type"), body: (await res.json()) as { checks: Record<string, { status: string; error?: string }> } };
};
const mineBlock = () => publicClient().request({ method: "evm_mine", params: [] } as never);
/** A request and how long it took to answer. */
async function timed<T>(request: Promise<T>): Promise<{ res: T; ms: number }> {
  const started = Date.now();
  const res = await request;
  return { res, ms: Date.now() - started };
}

describe.concurrent("faults", () => {
  it("chain node unreachable during a certification, a share purchase and a buy-now sale until their retries back off past 25 s: requests answer, the chain writes complete once it is back, each once", async () => {
    // The API reaches the node through a proxy this test cuts; Ponder reads the node directly.
    const node = await startFreezableProxy(Number(new URL(env.rpcUrl).port));
    const p = await startArtworkPlatform({
      CHAIN_RPC_URL: `http://127.0.0.1:${node.port}`,
      JOBS_CONCURRENCY: "4",
      // The certification's retries back off as the settle's and the mint's do (2 s doubling).
      CERTIFICATION_RETRY_BASE_MS: "2000",
      CERTIFICATION_SWEEP_INTERVAL_MS: "1000",
    });
    try {
      const [artist, buyer] = await Promise.all([createSdkUser(p.api.url, { role: "artist" }), createSdkUser(p.api.url, { role: "collector" })]);
      const anyone = sdk(p.api.url);
      const [listed, fractional] = await Promise.all([certifiedArtwork(p, artist), certifiedArtwork(p, artist)]);
      const { data: listing, response: listingResponse } = await artist.api.POST("/v1/marketplace/listings", { body: { artwork_id: listed, price_usd: 100, accepts_offers: false } });
      expect(listingResponse.status).toBe(201);
      const { response: shareClass } = await artist.api.POST("/v1/fractional/artworks", { body: { artwork_id: fractional, total_shares: 100, price_per_share_usd: 3 } });
      expect(shareClass.status).toBeLessThan(300);
      await waitFor(async () => (await anyone.GET("/v1/fractional/artworks/{id}", { params: { path: { id: fractional } } })).data.status === "active", { timeoutMs: 20_000, what: "the share class" });
      const listedToken = (await indexedCertificate(p, listed)).tokenId;
      const shareToken = (await indexedCertificate(p, fractional)).tokenId;

      node.cut();
      const cutAt = Date.now();
      // The three requests answer as they do with the chain up: 201 for the artwork, 202 for the
      // purchase and the sale (each waits FRACTIONAL/MARKETPLACE_PURCHASE_WAIT_MS, 5 s, for the chain).
      const [created, purchase, sale] = await Promise.all([
        timed(artist.api.POST("/v1/artworks", { body: artworkForm() })),
        timed(buyer.api.POST("/v1/fractional/{id}/purchase", { params: { path: { id: fractional } }, body: { shares_quantity: 10, payment_method_id: "pm_card_visa" }, headers: { "Idempotency-Key": `outage-shares-${randomBytes(4).toString("hex")}` } })),
        timed(buyer.api.POST("/v1/marketplace/listings/{id}/purchase", { params: { path: { id: listing.listing_id } }, body: { payment_method_id: "pm_card_visa" }, headers: { "Idempotency-Key": `outage-sale-${randomBytes(4).toString("hex")}` } })),
      ]);
      expect([created.res.response.status, purchase.res.response.status, sale.res.response.status]).toEqual([201, 202, 202]);
      for (const { ms } of [created, purchase, sale]) expect(ms).toBeLessThan(ANSWER_WITHIN_MS);
      const artworkId = created.res.data.id;
      const purchaseId = purchase.res.data.purchase_id;
      const saleId = sale.res.data.tx_id;
      expect(created.res.data.status).toBe("pending_certification");
      expect(purchase.res.data.status).toBe("pending");

      // Reads answer meanwhile; /readyz says the chain is down, promptly.
      const [artworkRead, listedRead, purchaseRead, saleRead, listingsRead] = await Promise.all([
        timed(anyone.GET("/v1/artworks/{id}", { params: { path: { id: artworkId } } })),
        timed(anyone.GET("/v1/artworks/{id}", { params: { path: { id: listed } } })),
        timed(buyer.api.GET("/v1/fractional/purchases/{id}", { params: { path: { id: purchaseId } } })),
        timed(buyer.api.GET("/v1/marketplace/transactions/{id}", { params: { path: { id: saleId } } })),
        timed(anyone.GET("/v1/marketplace/listings")),
      ]);
      const reads = [artworkRead, listedRead, purchaseRead, saleRead, listingsRead];
      expect(reads.map((r) => r.res.response.status)).toEqual([200, 200, 200, 200, 200]);
      for (const { ms } of reads) expect(ms).toBeLessThan(ANSWER_WITHIN_MS);
      expect(artworkRead.res.data.status).toBe("pending_certification");
      expect(listedRead.res.data).toMatchObject({ status: "certified", token_id: Number(listedToken) });
      expect(purchaseRead.res.data.status).toBe("pending");
      expect(saleRead.res.data.status).not.toBe("completed");
      const down = await timed(readyz(p.api));
      expect(down.res.status).toBe(503);
      expect(down.res.contentType).toMatch(/^application\/problem\+json/);
      expect(down.res.body.checks.chain!.status).toBe("error");
      expect(down.ms).toBeLessThan(ANSWER_WITHIN_MS);

      // The worker keeps trying the chain, and nothing gets through while it is down, until each
      // write's backoff has grown past RECOVER_WITHIN_MS (its retries 2 s doubling: the fifth failed
      // attempt's is 26 to 38 s away). The database holds that fact; nothing signals it.
      const operations = () =>
        p.db.selectFrom("chain_operations").select(["key", "status", "tx_hash", "attempts"]).where("key", "in", [`certify:${artworkId}`, `mint:${purchaseId}`, `settle:${saleId}`]).orderBy("key").execute();
      await waitFor(
        async () => {
          const backedOff = await p.db
            .selectFrom("chain_operations")
            .select("key")
            .where("key", "in", [`certify:${artworkId}`, `mint:${purchaseId}`, `settle:${saleId}`])
            .where("status", "in", ["pending", "sent"])
            .where(sql<boolean>`due_at > now() + ${RECOVER_WITHIN_MS + 1_000} * interval '1 millisecond'`)
            .execute();
          return backedOff.length === 3;
        },
        { timeoutMs: 150_000, intervalMs: 250, what: `every chain write's next retry more than ${RECOVER_WITHIN_MS / 1000} s away` },
      );
      const refusedDuringOutage = node.refused();
      const atRestore = await operations();
      expect(atRestore.every((op) => op.status !== "confirmed" && op.tx_hash === null && op.attempts >= 5), JSON.stringify(atRestore)).toBe(true);
      expect(await tokenIdOfArtwork(artworkId)).toBe(0n);
      node.restore();
      const restoredAt = Date.now();
      expect(refusedDuringOutage).toBeGreaterThan(3);

      // Once the node is back, each write completes.
      const certified = await waitFor(async () => {
        const { data } = await anyone.GET("/v1/artworks/{id}", { params: { path: { id: artworkId } } });
        return data.status === "certified" && data;
      }, { timeoutMs: 120_000, intervalMs: 250, what: "the certification after the outage" });
      const confirmed = await waitFor(async () => {
        const { data } = await buyer.api.GET("/v1/fractional/purchases/{id}", { params: { path: { id: purchaseId } } });
        return data.status === "confirmed" && data;
      }, { timeoutMs: 120_000, intervalMs: 250, what: "the share purchase after the outage" });
      const completed = await waitFor(async () => {
        const { data } = await buyer.api.GET("/v1/marketplace/transactions/{id}", { params: { path: { id: saleId } } });
        return data.status === "completed" && data;
      }, { timeoutMs: 120_000, intervalMs: 250, what: "the sale after the outage" });
      const recoveredMs = Date.now() - restoredAt;
      console.log(`[faults] chain outage of ${restoredAt - cutAt} ms: certification, purchase and sale complete ${recoveredMs} ms after the node is back`);
      // The node's return retries what waited for it (the worker samples the head every 5 s), not the
      // end of each backoff, which is more than RECOVER_WITHIN_MS away.
      expect(recoveredMs).toBeLessThan(RECOVER_WITHIN_MS);
      expect((await operations()).map((op) => op.status)).toEqual(["confirmed", "confirmed", "confirmed"]);

      // The certification: one token, one event, one provenance entry.
      const tokenId = await tokenIdOfArtwork(artworkId);
      expect(certified.token_id).toBe(Number(tokenId));
      await waitFor(async () => (await p.views.selectFrom("certificate").select("token_id").where("artwork_id", "=", artworkId).execute()).length > 0, { what: "the certificate's view" });
      expect(await p.views.selectFrom("certificate").select("token_id").where("artwork_id", "=", artworkId).execute()).toEqual([{ token_id: tokenId }]);
      const events = (type: string, field: string, id: string) =>
        count(p.db.selectFrom("outbox_events").select((eb) => eb.fn.countAll().as("n")).where("event_type", "=", type).where(sql`payload->>${field}`, "=", id).executeTakeFirstOrThrow());
      expect(await events("artwork.certified", "artwork_id", artworkId)).toBe(1);
      expect(await p.db.selectFrom("artwork_provenance").select("tx_hash").where("artwork_id", "=", artworkId).where("event", "=", "certified").execute()).toHaveLength(1);

      // The share purchase: one charge, one SharesMinted for its key, one confirmation event, the shares on-chain.
      const charges = (key: string) => count(p.db.selectFrom("sandbox_charges").select((eb) => eb.fn.countAll().as("n")).where("idempotency_key", "=", key).executeTakeFirstOrThrow());
      expect(confirmed).toMatchObject({ purchase_id: purchaseId, shares_purchased: 10, total_paid_usd: 30 });
      expect(await charges(`share_purchase:${purchaseId}`)).toBe(1);
      const mints = () =>
        count(p.views.selectFrom("share_mint").select((eb) => eb.fn.countAll().as("n")).where(sql`lower(purchase_key)`, "=", keccak256(toBytes(purchaseId)).toLowerCase()).executeTakeFirstOrThrow());
      await waitFor(async () => (await mints()) > 0, { what: "the indexer's SharesMinted" });
      expect(await mints()).toBe(1);
      expect(await events("fractional.purchase_confirmed", "purchase_id", purchaseId)).toBe(1);
      const buyerWallet = await walletOf(p, buyer.id);
      expect(await publicClient().readContract({ address: env.artSharesAddress, abi: artSharesAbi, functionName: "balanceOf", args: [buyerWallet as Address, shareToken] })).toBe(10n);

      // The sale: one charge, one settlement, one payment.completed, the buyer owns the token.
      expect(completed).toMatchObject({ tx_id: saleId, type: "sale", amount_usd: 100, buyer_id: buyer.id, seller_id: artist.id });
      expect(await charges(`sale:${saleId}`)).toBe(1);
      const settlements = () => count(p.views.selectFrom("sale_settlement").select((eb) => eb.fn.countAll().as("n")).where("sale_id", "=", saleId).executeTakeFirstOrThrow());
      await waitFor(async () => (await settlements()) > 0, { what: "the indexer's SaleSettled" });
      expect(await settlements()).toBe(1);
      expect(await events("payment.completed", "tx_id", saleId)).toBe(1);
      expect(await ownerOnChain(listedToken)).toBe(buyerWallet);
    } finally {
      await p.close();
      await node.close();
    }
  }, 360_000);

  it("indexer SIGKILLed and restarted: it catches up, and the certifications started while it was down are confirmed by it, each once", async () => {
    // Long enough that nothing is confirmed from the chain meanwhile: the restarted indexer must do it.
    const p = await startArtworkPlatform({ INDEXER_STALL_TIMEOUT_MS: "300000", CERTIFICATION_SWEEP_INTERVAL_MS: "500" });
    try {
      const artist = await createSdkUser(p.api.url, { role: "artist" });
      const before = await certifiedArtwork(p, artist);
      await mineBlock();
      await waitFor(async () => (await readyz(p.api)).status === 200, { timeoutMs: 15_000, what: "/readyz ready before the kill" });

      expect((await p.indexer.kill("SIGKILL")).signal).toBe("SIGKILL");
      const created = await Promise.all(Array.from({ length: 5 }, () => artist.api.POST("/v1/artworks", { body: artworkForm() })));
      expect(created.map((r) => r.response.status)).toEqual([201, 201, 201, 201, 201]);
      const ids = created.map((r) => r.data.id);
      // Each is minted on-chain while the indexer is down, and none is certified yet: nobody confirms it.
      const tokens = await waitFor(async () => {
        const found = await Promise.all(ids.map(tokenIdOfArtwork));
        return found.every((t) => t > 0n) && found;
      }, { timeoutMs: 30_000, what: "the certify transactions" });
      for (let i = 0; i < 6; i++) await mineBlock();
      const stuck = await readyz(p.api);
      expect(stuck.status).toBe(503);
      expect(stuck.body.checks.indexer!.status).toBe("error");
      const rows = () => p.db.selectFrom("artworks").select(["id", "status", "token_id"]).where("id", "in", ids).execute();
      expect((await rows()).map((r) => r.status)).toEqual(Array(5).fill("pending_certification"));

      await p.indexer.restart();
      const restartedAt = Date.now();
      // Ponder goes on live from a new head (a live chain brings them anyway; on a quiet local chain
      // this one does): once it has indexed that block, it has indexed the certify transactions
      // before it, and the worker confirms them from it.
      await mineBlock();
      const head = await publicClient().getBlockNumber();
      await waitFor(async () => ((await readIndexerStatus({ db: p.db, viewsSchema: p.indexer.viewsSchema })).indexedBlock ?? -1n) >= head, {
        timeoutMs: 90_000,
        intervalMs: 250,
        what: `the restarted indexer at block ${head}`,
      });
      const certified = await waitFor(async () => {
        const all = await rows();
        return all.every((r) => r.status === "certified") && all;
      }, { timeoutMs: 30_000, intervalMs: 250, what: "certification after the indexer's restart" });
      console.log(`[faults] indexer restarted: the certifications sent while it was down confirmed ${Date.now() - restartedAt} ms after it was ready`);
      await waitFor(async () => (await readyz(p.api)).status === 200, { timeoutMs: 60_000, what: "/readyz ready after the restart" });

      const operations = await p.db.selectFrom("chain_operations").select(["key", "confirmed_from", "indexed_at"]).where("key", "in", ids.map((id) => `certify:${id}`)).execute();
      expect(operations.map((op) => op.confirmed_from)).toEqual(Array(5).fill("indexer"));
      expect(operations.every((op) => op.indexed_at !== null)).toBe(true);
      const views = await p.views.selectFrom("certificate").select(["artwork_id", "token_id"]).where("artwork_id", "in", [before, ...ids]).execute();
      expect(views).toHaveLength(6);
      for (const [i, id] of ids.entries()) {
        const row = certified.find((r) => r.id === id)!;
        expect(row.token_id).toBe(tokens[i]);
        expect(views.filter((v) => v.artwork_id === id)).toEqual([{ artwork_id: id, token_id: tokens[i] }]);
        const { data: certificate, response } = await artist.api.GET("/v1/artworks/{id}/certificate", { params: { path: { id } } });
        expect(response.status).toBe(200);
        expect(certificate.token_id).toBe(Number(tokens[i]));
        const events = await p.db.selectFrom("outbox_events").select("id").where("event_type", "=", "artwork.certified").where(sql`payload->>'artwork_id'`, "=", id).execute();
        expect(events).toHaveLength(1);
        expect(await p.db.selectFrom("artwork_provenance").select("tx_hash").where("artwork_id", "=", id).where("event", "=", "certified").execute()).toHaveLength(1);
      }
    } finally {
      await p.close();
    }
  }, 240_000);

  it("webhook receivers down for every attempt the retry schedule (scaled) makes in a day: every event delivered afterwards, one request per attempt, none lost, none failed", async () => {
    const schedule = loadConfig(testApiSettings()).webhooks.retryScheduleSeconds.map((s) => s * WEBHOOK_DAY_SCALE);
    const database = await createIsolatedDatabase();
    const receiver = await new Receiver().start();
    const refusing = await startFreezableProxy(Number(new URL(receiver.base).port));
    // The API's two processes, so that their logs tell each attempt apart from this file's other scenarios.
    let api: ApiProcesses | undefined;
    const db = createDb(database.url, 2);
    try {
      api = await startApiProcesses("faults-webhooks", {
        DATABASE_URL: database.url,
        WEBHOOK_RETRY_SCHEDULE: schedule.map((s) => s.toFixed(6)).join(","),
        ALLOW_PRIVATE_WEBHOOK_URLS: "true",
        WEBHOOK_CONCURRENCY: "8",
        WEBHOOK_MAX_IN_FLIGHT_PER_USER: "8",
        WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: "8",
        LOG_LEVEL: "debug",
      });
      const user = await createSdkUser(api.url);
      let down = true;
      const unavailable = receiver.endpoint(() => (down ? { status: 503, body: "down for maintenance" } : { status: 200 }));
      const unreachable = receiver.endpoint().replace(receiver.base, `http://127.0.0.1:${refusing.port}`);
      const subscriptions: string[] = [];
      for (const url of [unavailable, unreachable]) {
        const { data: sub, response } = await user.api.POST("/v1/webhooks", { body: { url, events: ["offer.created"] } });
        expect(response.status).toBe(201);
        subscriptions.push(sub.id);
      }

      refusing.cut();
      const wentDown = Date.now();
      const eventIds = await Promise.all(
        Array.from({ length: 10 }, (_, i) => db.transaction().execute((trx) => recordEvent(trx, "offer.created", { offer_id: `offer_${i}` }, [user.id]))),
      );
      // A day down: every attempt the schedule makes within a day (seven: at 0, 5 s, 35 s, … 7.2 h)
      // made and refused, seen at the receivers; none given up.
      const offsets = [0, ...schedule].map((_, i) => schedule.slice(0, i).reduce((sum, s) => sum + s * 1_000, 0));
      const attemptsInADay = offsets.filter((at) => at < DAY_MS).length;
      await Promise.all([
        receiver.waitForRequests(unavailable, (requests) => eventIds.every((_, i) => requests.filter((r) => r.body.includes(`"offer_${i}"`)).length >= attemptsInADay), DAY_MS * 2, `${attemptsInADay} attempts of each delivery at the 503 receiver`),
        signalled(refusing.refusedAtLeast(eventIds.length * attemptsInADay), `${attemptsInADay} attempts of each delivery refused at the unreachable one`, DAY_MS * 2),
      ]);
      const deliveries = () => db.selectFrom("webhook_deliveries").selectAll().where("subscription_id", "in", subscriptions).orderBy("id").execute();
      const duringTheDay = await deliveries();
      expect(duringTheDay).toHaveLength(20);
      expect(duringTheDay.filter((d) => d.status !== "pending" || d.attempts < attemptsInADay - 1)).toEqual([]);
      down = false;
      refusing.restore();
      const cameBack = Date.now();

      const settled = await waitFor(async () => {
        const all = await deliveries();
        return all.every((d) => d.status !== "pending") && all;
      }, { timeoutMs: 60_000, intervalMs: 250, what: "every delivery after the receivers are back" });
      expect(settled.filter((d) => d.status !== "succeeded")).toEqual([]);
      expect(settled.map((d) => `${d.subscription_id} ${d.event_id}`).sort()).toEqual(subscriptions.flatMap((sub) => eventIds.map((e) => `${sub} ${e}`)).sort());

      // One request per attempt, as the database counts them: the 503 receiver saw every attempt, all
      // but the last during the day; the unreachable one saw only the last, its other attempts were
      // connections reset at the proxy. Every last attempt came after the receivers were back.
      const arrivals = (url: string) => {
        const seen = new Map<string, number[]>();
        for (const r of receiver.requests(url)) seen.set(String(r.headers["webhook-id"]), [...(seen.get(String(r.headers["webhook-id"])) ?? []), r.at]);
        return seen;
      };
      const answered = arrivals(unavailable);
      const reached = arrivals(unreachable);
      expect([...answered.keys(), ...reached.keys()].sort()).toEqual(settled.map((d) => d.id).sort());
      let sent = refusing.refused();
      const mismatches = settled.flatMap((d) => {
        const unavailableOne = d.subscription_id === subscriptions[0];
        const seen = (unavailableOne ? answered : reached).get(d.id)!;
        sent += seen.length;
        const ok = (unavailableOne ? seen.length === d.attempts : seen.length === 1) && seen.slice(0, -1).every((at) => at < cameBack) && seen.at(-1)! >= cameBack;
        return ok ? [] : [{ delivery: d.id, receiver: unavailableOne ? "503" : "unreachable", attempts: d.attempts, requests: seen.map((at) => at - wentDown), came_back: cameBack - wentDown, last_error: d.last_error }];
      });
      expect(mismatches).toEqual([]);
      const counted = settled.reduce((sum, d) => sum + d.attempts, 0);
      expect(sent).toBe(counted);
    } finally {
      await api?.stop();
      await db.destroy();
      await refusing.close();
      await receiver.stop();
      await database.drop();
    }
  }, 120_000);
});
