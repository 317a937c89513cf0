/**
 * Marketplace sales on the real pieces (API, Postgres, Hardhat node, Ponder, the sandbox
 * processor): the time from a seller's offer accept to the sale completed (the charge, the
 * ArtMarket.settle transaction, the indexer's SaleSettled, `payment.completed`), seen by polling the
 * transaction and by a local webhook receiver, for sales one after the other; and how many sales
 * per second complete when many buyers each buy a listing at once.
 */
import os from "node:os";
import path from "node:path";
import { submitArtwork, untilCertified } from "./certification.ts";
import { BENCH_ADMIN_KEY, type BenchContext, blockNumber, call, percentile, table, webhookReceiver } from "./context.ts";

const SEQUENTIAL = Number(process.env.BENCH_SALES_SEQUENTIAL ?? 30);
const BURST = Number(process.env.BENCH_SALES_BURST ?? 100);
const POLL_MS = 10;

interface Party {
  id: string;
  token: string;
}

export async function benchMarketplace(ctx: BenchContext): Promise<string> {
  await ctx.startIndexer();
  // JOBS_CONCURRENCY and DATABASE_POOL_SIZE from the environment, to compare settings (default: the API's pool of 20).
  const tuning: Record<string, string> = {
    JOBS_CONCURRENCY: process.env.JOBS_CONCURRENCY ?? "10",
    DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE ?? "20",
  };
  const api = await ctx.startApi({ STORAGE_DIR: path.join(ctx.dir, "storage"), ...tuning });
  const admin = await call(api.url, "POST", "/v1/auth/token", { api_key: BENCH_ADMIN_KEY, scope: ["admin"] });
  const user = async (name: string, role: "artist" | "collector"): Promise<Party> => {
    const created = await call(api.url, "POST", "/v1/admin/users", { username: name, email: `${name}@example.test`, role }, admin.token);
    const token = await call(api.url, "POST", "/v1/auth/token", { api_key: created.api_key.secret, scope: ["write"] });
    return { id: created.id as string, token: token.token as string };
  };

  // The seller's artworks, certified before anything is measured: one warm-up sale (the seller's
  // custodial wallet approves ArtMarket on its first sale), the sequential ones, the burst.
  const seller = await user("bench_seller", "artist");
  const artworks = SEQUENTIAL + BURST + 1;
  const artworkIds = await Promise.all(Array.from({ length: artworks }, (_, i) => submitArtwork(api.url, seller.token, i)));
  await untilCertified(api.url, seller.id, artworks, 300_000);
  const list = async (artworkId: string, acceptsOffers: boolean): Promise<string> =>
    (await call(api.url, "POST", "/v1/marketplace/listings", { artwork_id: artworkId, price_usd: 100, accepts_offers: acceptsOffers }, seller.token)).listing_id;

  // Receiver of the seller's payment.completed webhooks: when each sale's first arrived.
  const receiver = await webhookReceiver(ctx, (body) => body.tx_id as string);
  const delivered = receiver.delivered;
  await call(api.url, "POST", "/v1/webhooks", { url: receiver.url, events: ["payment.completed"] }, seller.token);
  const webhookOf = receiver.arrival;

  const completion = async (txId: string, token: string, started: number): Promise<void> => {
    for (;;) {
      const t = await call(api.url, "GET", `/v1/marketplace/transactions/${txId}`, undefined, token);
      if (t.status === "completed") return;
      if (t.status === "failed") throw new Error(`${txId} failed: ${t.failure_reason}`);
      if (performance.now() - started > 60_000) throw new Error(`${txId} not completed within 60 s`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  };

  // One by one: the buyer offers, the seller accepts; from the accept's answer to the sale completed.
  const buyer = await user("bench_buyer", "collector");
  const sellOne = async (artworkId: string) => {
    const listingId = await list(artworkId, true);
    const offer = await call(api.url, "POST", "/v1/marketplace/offers", { listing_id: listingId, offer_amount_usd: 90, payment_method_id: "pm_card_visa" }, buyer.token);
    const accepted = await call(api.url, "POST", `/v1/marketplace/offers/${offer.offer_id}/accept`, undefined, seller.token);
    const started = performance.now();
    const txId = accepted.transaction_id as string;
    const [polled, hooked] = await Promise.all([
      completion(txId, buyer.token, started).then(() => performance.now() - started),
      webhookOf(txId).then(() => delivered.get(txId)! - started),
    ]);
    return { polled, hooked };
  };
  await sellOne(artworkIds[0]!);
  const polled: number[] = [];
  const hooked: number[] = [];
  for (let i = 1; i <= SEQUENTIAL; i++) {
    const sale = await sellOne(artworkIds[i]!);
    polled.push(sale.polled);
    hooked.push(sale.hooked);
  }
  polled.sort((a, b) => a - b);
  hooked.sort((a, b) => a - b);

  // All at once: BURST buyers, each buying a listing of its own.
  const buyers = await Promise.all(Array.from({ length: BURST }, (_, i) => user(`bench_burst_buyer_${i}`, "collector")));
  const listings = await Promise.all(artworkIds.slice(SEQUENTIAL + 1).map((id) => list(id, false)));
  const completedSales = async () => (await call(api.url, "GET", "/v1/marketplace/transactions?role=seller&type=sale&status=completed&limit=1", undefined, seller.token)).pagination.total as number;
  const before = await completedSales();
  const blockBefore = await blockNumber(ctx.rpcUrl);
  const burstStarted = performance.now();
  const statuses = new Map<number, number>();
  const answers = await Promise.all(
    buyers.map(async (b, i) => {
      const res = await fetch(new URL(`/v1/marketplace/listings/${listings[i]}/purchase`, api.url), {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${b.token}` },
        body: JSON.stringify({ payment_method_id: "pm_card_visa" }),
      });
      const body = (await res.json()) as { tx_id: string };
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status !== 201 && res.status !== 202) throw new Error(`purchase answered ${res.status}: ${JSON.stringify(body)}`);
      return body.tx_id;
    }),
  );
  const answered = performance.now() - burstStarted;
  while ((await completedSales()) < before + BURST) {
    if (performance.now() - burstStarted > 300_000) throw new Error(`not all ${BURST} sales completed after 300 s`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  const burstMs = performance.now() - burstStarted;
  await Promise.all(answers.map(webhookOf));
  const lastWebhook = Math.max(...answers.map((id) => delivered.get(id)!)) - burstStarted;
  const blocks = (await blockNumber(ctx.rpcUrl)) - blockBefore;

  const fmt = (ms: number) => (ms / 1000).toFixed(2);
  const ms = (v: number) => `${Math.round(v)} ms`;
  const answeredAs = [...statuses.entries()].sort().map(([status, n]) => `${n}× ${status}`).join(", ");
  return [
    `Marketplace: ${os.cpus().length} cores, Hardhat node (automine), Ponder over websocket, HTTP and worker in one process (JOBS_CONCURRENCY=${tuning.JOBS_CONCURRENCY}, DATABASE_POOL_SIZE=${tuning.DATABASE_POOL_SIZE}), sandbox processor; polling every ${POLL_MS} ms`,
    "",
    table(
      ["measure", "value"],
      [
        [`offer accept answered -> sale completed (GET transaction), ${SEQUENTIAL} one by one: p50`, ms(percentile(polled, 50))],
        ["  p99", ms(percentile(polled, 99))],
        ["  max", ms(polled.at(-1)!)],
        ["offer accept answered -> payment.completed webhook received: p50", ms(percentile(hooked, 50))],
        ["  p99", ms(percentile(hooked, 99))],
        ["  max", ms(hooked.at(-1)!)],
        [`${BURST} buyers buy a listing each at once: all answered after`, `${fmt(answered)} s (${answeredAs})`],
        [`  all ${BURST} sales completed after`, `${fmt(burstMs)} s`],
        ["  sales per second", (BURST / (burstMs / 1000)).toFixed(1)],
        [`  all ${BURST} payment.completed webhooks received after`, `${fmt(lastWebhook)} s`],
        ["  transactions (blocks) they took", String(blocks)],
      ],
    ),
  ].join("\n");
}
