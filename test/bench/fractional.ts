/**
 * Share purchases on the real pieces (API, Postgres, Hardhat node, Ponder, the sandbox processor):
 * the time from a purchase request to the purchase `confirmed` (reserve, charge, ArtShares.mintShares,
 * the indexer's SharesMinted), for purchases one after the other and for many buyers at once on one
 * artwork, and how many purchases per second complete then.
 */
import os from "node:os";
import path from "node:path";
import { submitArtwork, untilCertified } from "./certification.ts";
import { BENCH_ADMIN_KEY, type BenchContext, blockNumber, call, percentile, table } from "./context.ts";

const SEQUENTIAL = Number(process.env.BENCH_SHARES_SEQUENTIAL ?? 20);
const BURST = Number(process.env.BENCH_SHARES_BURST ?? 200);
const SHARES_EACH = 5;
const POLL_MS = 20;

interface Party {
  id: string;
  token: string;
}

interface Bought {
  id: string;
  status: number;
  /** Wall-clock ms when the request was sent. */
  sentAt: number;
}

export async function benchFractional(ctx: BenchContext): Promise<string> {
  await ctx.startIndexer();
  // JOBS_CONCURRENCY, DATABASE_POOL_SIZE and FRACTIONAL_PURCHASE_WAIT_MS from the environment, to compare settings.
  const tuning: Record<string, string> = {
    JOBS_CONCURRENCY: process.env.JOBS_CONCURRENCY ?? "10",
    DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE ?? "20",
    FRACTIONAL_PURCHASE_WAIT_MS: process.env.FRACTIONAL_PURCHASE_WAIT_MS ?? "5000",
  };
  const api = await ctx.startApi({ STORAGE_DIR: path.join(ctx.dir, "storage"), ...tuning });
  const admin = await call(api.url, "POST", "/v1/auth/token", { api_key: BENCH_ADMIN_KEY, scope: ["admin"] });
  const user = async (name: string, role: "artist" | "collector"): Promise<Party> => {
    const created = await call(api.url, "POST", "/v1/admin/users", { username: name, email: `${name}@example.test`, role }, admin.token);
    const token = await call(api.url, "POST", "/v1/auth/token", { api_key: created.api_key.secret, scope: ["write"] });
    return { id: created.id as string, token: token.token as string };
  };

  // One artwork, certified and fractionalized before anything is measured, with shares for every purchase.
  const owner = await user("bench_share_owner", "artist");
  const artworkId = await submitArtwork(api.url, owner.token, 0);
  await untilCertified(api.url, owner.id, 1, 60_000);
  const totalShares = (1 + SEQUENTIAL + BURST) * SHARES_EACH;
  for (const started = performance.now(); ; ) {
    // The indexer may not have the certificate yet (409 invalid_state): retried.
    const res = await fetch(new URL("/v1/fractional/artworks", api.url), {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${owner.token}` },
      body: JSON.stringify({ artwork_id: artworkId, total_shares: totalShares, price_per_share_usd: 1 }),
    });
    if (res.status === 201 || res.status === 202) break;
    if (res.status !== 409 || performance.now() - started > 30_000) throw new Error(`fractionalizing answered ${res.status}: ${await res.text()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const fractional = () => call(api.url, "GET", `/v1/fractional/artworks/${artworkId}`);
  while ((await fractional()).status !== "active") await new Promise((r) => setTimeout(r, POLL_MS));

  const buy = async (buyer: Party): Promise<Bought> => {
    const sentAt = Date.now();
    const res = await fetch(new URL(`/v1/fractional/${artworkId}/purchase`, api.url), {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${buyer.token}` },
      body: JSON.stringify({ shares_quantity: SHARES_EACH, payment_method_id: "pm_card_visa" }),
    });
    const body = (await res.json()) as { purchase_id: string };
    if (res.status !== 201 && res.status !== 202) throw new Error(`purchase answered ${res.status}: ${JSON.stringify(body)}`);
    return { id: body.purchase_id, status: res.status, sentAt };
  };
  /** Request sent -> confirmed: the purchase's confirmed_at (stamped by the confirming transaction, same clock). */
  const confirmedAfter = async (bought: Bought, buyer: Party): Promise<number> => {
    for (const started = performance.now(); ; ) {
      const got = await call(api.url, "GET", `/v1/fractional/purchases/${bought.id}`, undefined, buyer.token);
      if (got.status === "confirmed") return Date.parse(got.confirmed_at) - bought.sentAt;
      if (got.status === "failed") throw new Error(`${bought.id} failed: ${got.failure_reason}`);
      if (performance.now() - started > 120_000) throw new Error(`${bought.id} not confirmed within 120 s`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  };

  // One by one (after a warm-up purchase): one buyer, each purchase confirmed before the next.
  const buyer = await user("bench_share_buyer", "collector");
  await confirmedAfter(await buy(buyer), buyer);
  const sequential: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) sequential.push(await confirmedAfter(await buy(buyer), buyer));
  sequential.sort((a, b) => a - b);

  // All at once: BURST buyers, each its own purchase of the same artwork.
  const buyers: Party[] = [];
  for (let i = 0; i < BURST; i += 25) buyers.push(...(await Promise.all(Array.from({ length: Math.min(25, BURST - i) }, (_, j) => user(`bench_share_burst_${i + j}`, "collector")))));
  const expectedPct = ((1 + SEQUENTIAL + BURST) * SHARES_EACH * 100) / totalShares;
  const blockBefore = await blockNumber(ctx.rpcUrl);
  const burstStarted = Date.now();
  const bought = await Promise.all(buyers.map(buy));
  const answered = Date.now() - burstStarted;
  while ((await fractional()).funded_pct < expectedPct) {
    if (Date.now() - burstStarted > 300_000) throw new Error(`not all ${BURST} purchases confirmed after 300 s`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  const latencies = await Promise.all(bought.map((b, i) => confirmedAfter(b, buyers[i]!)));
  const lastConfirmed = Math.max(...latencies.map((l, i) => l + bought[i]!.sentAt)) - burstStarted;
  const blocks = (await blockNumber(ctx.rpcUrl)) - blockBefore;
  const sorted = [...latencies].sort((a, b) => a - b);
  const statuses = new Map<number, number>();
  for (const b of bought) statuses.set(b.status, (statuses.get(b.status) ?? 0) + 1);

  const ms = (v: number) => `${Math.round(v)} ms`;
  const answeredAs = [...statuses.entries()].sort().map(([status, n]) => `${n}× ${status}`).join(", ");
  return [
    `Fractional: ${os.cpus().length} cores, Hardhat node (automine), Ponder over websocket, HTTP and worker in one process (JOBS_CONCURRENCY=${tuning.JOBS_CONCURRENCY}, DATABASE_POOL_SIZE=${tuning.DATABASE_POOL_SIZE}, FRACTIONAL_PURCHASE_WAIT_MS=${tuning.FRACTIONAL_PURCHASE_WAIT_MS}), sandbox processor; ${SHARES_EACH} shares per purchase of one ${totalShares}-share artwork`,
    "",
    table(
      ["measure", "value"],
      [
        [`purchase request -> confirmed, ${SEQUENTIAL} one by one: p50`, ms(percentile(sequential, 50))],
        ["  p99", ms(percentile(sequential, 99))],
        [`${BURST} buyers at once, each purchase request -> confirmed: p50`, ms(percentile(sorted, 50))],
        ["  p99", ms(percentile(sorted, 99))],
        [`  all ${BURST} answered after`, `${(answered / 1000).toFixed(2)} s (${answeredAs})`],
        [`  all ${BURST} confirmed after`, `${(lastConfirmed / 1000).toFixed(2)} s`],
        ["  purchases per second", (BURST / (lastConfirmed / 1000)).toFixed(1)],
        ["  transactions (blocks) they took", String(blocks)],
      ],
    ),
  ].join("\n");
}
