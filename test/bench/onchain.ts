/**
 * On-chain purchases on the real pieces (API, Postgres, Hardhat node, Ponder, ArtExchange and the
 * local payment token): WALLETS wallets, each with the payment token and its allowance given
 * beforehand, fill an order of a listing each at once (the steps asked anonymously first). Reported:
 * fills mined per second, and the time from each fill's receipt to its `payment.completed` webhook
 * (the indexer's fill, the projection into the sale, the outbox, the delivery).
 */
import os from "node:os";
import path from "node:path";
import { createPublicClient, createWalletClient, erc20Abi, type Hex, http as viemHttp, maxUint256, parseEther, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { submitArtwork, untilCertified } from "./certification.ts";
import { BENCH_ADMIN_KEY, type BenchContext, call, percentile, table, webhookReceiver } from "./context.ts";

const WALLETS = Number(process.env.BENCH_ONCHAIN_WALLETS ?? 50);
const SEQUENTIAL = Number(process.env.BENCH_ONCHAIN_SEQUENTIAL ?? 10);
const PRICE_USD = 100;

const mintAbi = [{ type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }], outputs: [] }] as const;

export async function benchOnchain(ctx: BenchContext): Promise<string> {
  await ctx.startIndexer();
  const api = await ctx.startApi({ STORAGE_DIR: path.join(ctx.dir, "storage") });
  const admin = await call(api.url, "POST", "/v1/auth/token", { api_key: BENCH_ADMIN_KEY, scope: ["admin"] });
  const created = await call(api.url, "POST", "/v1/admin/users", { username: "bench_onchain_seller", email: "onchain@example.test", role: "artist" }, admin.token);
  const seller = { id: created.id as string, token: (await call(api.url, "POST", "/v1/auth/token", { api_key: created.api_key.secret, scope: ["write"] })).token as string };

  // Set-up, not measured: the artworks certified and listed (the seller's wallet approves the exchange at its first listing), the wallets funded and approved.
  const total = SEQUENTIAL + WALLETS;
  const artworkIds = await Promise.all(Array.from({ length: total }, (_, i) => submitArtwork(api.url, seller.token, i)));
  await untilCertified(api.url, seller.id, total, 300_000);
  const listings: string[] = [];
  for (const artworkId of artworkIds) {
    listings.push((await call(api.url, "POST", "/v1/marketplace/listings", { artwork_id: artworkId, price_usd: PRICE_USD, accepts_offers: false }, seller.token)).listing_id);
  }
  const chain = createPublicClient({ transport: viemHttp(ctx.rpcUrl) });
  const token = ctx.exchange.paymentToken;
  const wallets = await Promise.all(
    Array.from({ length: total }, async () => {
      const account = privateKeyToAccount(generatePrivateKey());
      const client = createWalletClient({ account, transport: viemHttp(ctx.rpcUrl) });
      await chain.request({ method: "hardhat_setBalance", params: [account.address, toHex(parseEther("1"))] } as never);
      await chain.waitForTransactionReceipt({ hash: await client.writeContract({ chain: null, address: token, abi: mintAbi, functionName: "mint", args: [account.address, BigInt(PRICE_USD * 1_000_000)] }) });
      await chain.waitForTransactionReceipt({ hash: await client.writeContract({ chain: null, address: token, abi: erc20Abi, functionName: "approve", args: [ctx.exchange.artExchange, maxUint256] }) });
      return { account, client };
    }),
  );
  const fills = await Promise.all(
    wallets.map(async (w, i) => {
      const steps = await call(api.url, "POST", `/v1/marketplace/listings/${listings[i]}/onchain-purchase`, { buyer: w.account.address });
      if (steps.steps.length !== 1) throw new Error(`expected the fill alone, got ${steps.steps.map((s: { id: string }) => s.id).join(", ")}`);
      return steps.steps[0].tx as { to: Hex; data: Hex };
    }),
  );

  // payment.completed webhooks of the seller: when each sale's first arrived, by the fill's transaction.
  const receiver = await webhookReceiver(ctx, (body) => body.on_chain_tx as string);
  await call(api.url, "POST", "/v1/webhooks", { url: receiver.url, events: ["payment.completed"] }, seller.token);

  const fill = async (i: number) => {
    const hash = await wallets[i]!.client.sendTransaction({ chain: null, to: fills[i]!.to, data: fills[i]!.data, gas: 400_000n });
    const receipt = await chain.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    if (receipt.status !== "success") throw new Error(`fill ${hash} reverted`);
    return { hash, at: performance.now() };
  };
  const alone: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const m = await fill(i);
    await receiver.arrival(m.hash);
    alone.push(receiver.delivered.get(m.hash)! - m.at);
  }
  alone.sort((a, b) => a - b);

  const started = performance.now();
  const mined = await Promise.all(Array.from({ length: WALLETS }, (_, i) => fill(SEQUENTIAL + i)));
  const allMined = Math.max(...mined.map((m) => m.at)) - started;
  const timeout = new Promise<void>((_, reject) => setTimeout(() => reject(new Error(`${receiver.delivered.size} of ${WALLETS} payment.completed webhooks after 120 s`)), 120_000).unref());
  await Promise.race([Promise.all(mined.map((m) => receiver.arrival(m.hash))), timeout]);
  const allCompleted = Math.max(...mined.map((m) => receiver.delivered.get(m.hash)!)) - started;
  const latency = mined.map((m) => receiver.delivered.get(m.hash)! - m.at).sort((a, b) => a - b);

  const ms = (v: number) => `${Math.round(v)} ms`;
  return [
    `On-chain fills: ${os.cpus().length} cores, Hardhat node (automine), Ponder over websocket, API and worker in one process; ${SEQUENTIAL} fills one by one, then ${WALLETS} wallets with a listing each at once`,
    "",
    table(
      ["measure", "value"],
      [
        [`fill's receipt -> payment.completed webhook, ${SEQUENTIAL} fills one by one: p50`, ms(percentile(alone, 50))],
        ["  max", ms(alone.at(-1)!)],
        [`${WALLETS} wallets at once: fills mined after`, `${(allMined / 1000).toFixed(2)} s`],
        ["  fills per second (mined)", (WALLETS / (allMined / 1000)).toFixed(1)],
        [`  all ${WALLETS} payment.completed received after`, `${(allCompleted / 1000).toFixed(2)} s`],
        ["  sales per second (completed)", (WALLETS / (allCompleted / 1000)).toFixed(1)],
        ["  fill's receipt -> payment.completed webhook: p50", ms(percentile(latency, 50))],
        ["    p99", ms(percentile(latency, 99))],
        ["    max", ms(latency.at(-1)!)],
      ],
    ),
  ].join("\n");
}
