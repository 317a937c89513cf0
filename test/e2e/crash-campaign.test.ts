/**
 * The crash campaign: `npm start` on one data dir, a load of mixed writes (creations, buy-nows,
 * offers accepted, on-chain fills by a wallet, share purchases, share withdrawals to a linked
 * wallet, ticket orders, a wallet's own transfers) and, each round, one
 * process of the stack (the Hardhat node, Postgres, the indexer, the API, the worker, the stack
 * process itself, or all of them at once) killed with SIGKILL at a random point of the load (after
 * a random number of its answers). Then `npm start` again, and every write whose answer was lost is
 * sent again under its Idempotency-Key, as a client does. After every restart nothing is archived
 * and everything acknowledged (a 2xx, a transaction hash) is there; at the end every write has
 * taken effect exactly once: artworks certified once each (the chain's totalCertified is the
 * database's count), one sale per listing with the buyer as the chain's owner, the buyer's shares on
 * the chain the sum of the purchases less the withdrawals and its linked wallet's the withdrawals,
 * one ticket per seat ordered, every card charged once.
 *
 * CRASH_ROUNDS (default 7: one kill of each target), CRASH_TARGETS and CRASH_SEED (default: drawn,
 * and printed) choose the rounds; the report line gives rounds, kills per process and what was lost.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Address, createPublicClient, createWalletClient, getAddress, type Hex, http, parseEther } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { hardhat } from "viem/chains";
import { createSiweMessage } from "viem/siwe";
import { afterAll, beforeAll, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artExchangeAbi } from "../../contracts/abi/ArtExchange.ts";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import { runningClusterUrl, withClient } from "../../tools/stack/postgres.ts";
import { Flow, killTarget, type Target, TARGETS } from "../support/crash-campaign.ts";
import { seeded } from "../support/random.ts";
import { stablecoinAbi } from "../support/wallets.ts";
import { adminSdk, type ArtPlatformClient, artworkForm, createSdkUser, sdk, type SdkUser } from "../support/sdk.ts";
import { type BootedStack, bootStack } from "../support/stack.ts";
import { waitFor } from "../support/wait.ts";

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 7);
/** CRASH_TARGETS (comma-separated, default all) narrows the processes killed, to replay one kind of crash. */
const targets = (process.env.CRASH_TARGETS?.split(",") ?? [...TARGETS]) as Target[];
const SEED = Number(process.env.CRASH_SEED ?? randomBytes(4).readUInt32BE());
const random = seeded(SEED);
const SHARE_PRICE_USD = 1;
const TICKET_PRICE_USD = 5;
const SALE_PRICE_USD = 100;
const OFFER_USD = 60;
const FILL_USD = 40;
/** Shares the buyer holds before the rounds: what the withdrawals draw on. */
const SHARES_HELD = 100;
/**
 * How long the end waits for each write still under way. A killed worker's chain operation is taken
 * up at the next worker's start (its lease names the dead process), not when the lease (180 s) ends,
 * so this is under the lease: a write that needed it fails the campaign.
 */
const FINISH_TIMEOUT_MS = 120_000;

const dataDir = mkdtempSync(path.join(os.tmpdir(), "art-platform-crash-"));
let stack: BootedStack | null = null;
const boots: string[] = [];
const archives = () => (existsSync(path.join(dataDir, "archive")) ? readdirSync(path.join(dataDir, "archive")) : []);
const ARCHIVED = /Archived:|could not be brought back|has seen more of the chain than its journal|belongs to another chain/;

async function boot(): Promise<BootedStack> {
  // The campaign reads a lot to check every write (anonymously, as a wallet does): not a test of the rate limits.
  stack = await bootStack({ env: { DATA_DIR: dataDir, RATE_LIMIT_ANONYMOUS_PER_MINUTE: "100000", RATE_LIMIT_TOKEN_PER_MINUTE: "100000" } });
  boots.push(stack.output());
  return stack;
}

/** Each request gives up after 20 s: an API whose stack was killed under it may hold a request open. */
const patientFetch: typeof fetch = (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(20_000) });
/** The SDK as `user` on the running stack: no retries of its own while the load runs (the campaign resends), a few after a restart. */
const clients = new Map<string, ArtPlatformClient>();
const as = (user: Pick<SdkUser, "apiKey">, retries = 0): ArtPlatformClient => {
  const id = `${stack!.url} ${user.apiKey} ${retries}`;
  if (!clients.has(id)) clients.set(id, sdk(stack!.url, { apiKey: user.apiKey, scope: ["write"], retry: { maxRetries: retries, baseDelayMs: 200 }, fetch: patientFetch }));
  return clients.get(id)!;
};
const chain = () => createPublicClient({ chain: hardhat, transport: http(stack!.rpcUrl) });
const contract = (name: string) => new RegExp(`${name}:\\s+(0x[0-9a-fA-F]{40})`).exec(stack!.output())![1] as Address;
const query = async <T>(sql: string, params: unknown[] = []): Promise<T[]> =>
  withClient(runningClusterUrl(path.join(dataDir, "postgres"), "art_platform")!, async (client) => (await client.query(sql, params)).rows as T[]);

let adminKey: string;
let artist: SdkUser;
let buyer: SdkUser;
let bidder: SdkUser;
let wallets: { buyer: Address; bidder: Address };
let shareArtwork: string;
let shareToken: bigint;
let eventId: string;
const sender = privateKeyToAccount(generatePrivateKey());
const sink = privateKeyToAccount(generatePrivateKey()).address;
/** A wallet with no account that buys listings on-chain (the exchange's steps), paying in the payment token. */
const filler = privateKeyToAccount(generatePrivateKey());
/** The buyer's linked wallet: where its share withdrawals go. */
const vault = privateKeyToAccount(generatePrivateKey());
/** Certified artworks of the artist not yet listed. */
const pool: string[] = [];
const flows: Flow[] = [];
const kills = Object.fromEntries(TARGETS.map((t) => [t, 0])) as Record<Target, number>;
const pooled = new Set<string>();

afterAll(async () => {
  await stack?.dispose();
  if (process.env.KEEP_TEST_DIR !== "1") rmSync(dataDir, { recursive: true, force: true });
}, 90_000);

/** Whether the exchange's order `hash` was filled (the chain's answer). */
const orderFilled = async (hash: Hex) => (await chain().readContract({ address: contract("ArtExchange"), abi: artExchangeAbi, functionName: "orderStatus", args: [hash] })) === 1;
const certified = async (id: string) => (await sdk(stack!.url).GET("/v1/artworks/{id}", { params: { path: { id } } })).data;

beforeAll(async () => {
  await boot();
  adminKey = stack!.adminApiKey!;
  const admin = adminSdk(stack!.url, adminKey);
  [artist, buyer, bidder] = await Promise.all([
    createSdkUser(stack!.url, { role: "artist", admin }),
    createSdkUser(stack!.url, { admin }),
    createSdkUser(stack!.url, { admin }),
  ]);
  wallets = {
    buyer: (await buyer.api.GET("/v1/users/me")).data.wallet_address as Address,
    bidder: (await bidder.api.GET("/v1/users/me")).data.wallet_address as Address,
  };
  const created = await Promise.all(Array.from({ length: 7 }, async () => (await artist.api.POST("/v1/artworks", { body: artworkForm() })).data.id));
  for (const id of created) await waitFor(async () => (await certified(id)).status === "certified", { timeoutMs: 60_000, what: `certification of ${id}` });
  shareArtwork = created.pop()!;
  pool.push(...created);
  shareToken = BigInt((await certified(shareArtwork)).token_id!);
  await artist.api.POST("/v1/fractional/artworks", { body: { artwork_id: shareArtwork, total_shares: 100_000, price_per_share_usd: SHARE_PRICE_USD } });
  await waitFor(async () => (await sdk(stack!.url).GET("/v1/fractional/artworks/{id}", { params: { path: { id: shareArtwork } } })).data.status === "active", {
    timeoutMs: 60_000,
    what: "the share class",
  });
  const day = 86_400_000;
  const { data: event } = await admin.POST("/v1/events", {
    body: {
      title: "Crash campaign opening",
      type: "exhibition",
      format: "virtual",
      location: "Online",
      starts_at: new Date(Date.now() + 10 * day).toISOString(),
      ends_at: new Date(Date.now() + 10 * day + 3_600_000).toISOString(),
      tickets: { virtual: { price_usd: TICKET_PRICE_USD } },
    },
  });
  eventId = event.event_id;
  // The wallets: funded by a dev account through the Chain RPC, as a developer does; the filler
  // mints itself the payment token (the local MockStablecoin's open mint).
  const dev = createWalletClient({ chain: hardhat, transport: http(stack!.rpcUrl) });
  const [devAccount] = await dev.getAddresses();
  for (const to of [sender.address, filler.address]) {
    await chain().waitForTransactionReceipt({ hash: await dev.sendTransaction({ account: devAccount!, to, value: parseEther("100") }) });
  }
  const fillerWallet = createWalletClient({ account: filler, chain: hardhat, transport: http(stack!.rpcUrl) });
  const minted = await fillerWallet.writeContract({ address: contract("Payment token"), abi: stablecoinAbi, functionName: "mint", args: [filler.address, 1_000_000n * 1_000_000n] });
  await chain().waitForTransactionReceipt({ hash: minted });
  // The shares the withdrawals draw on, and the linked wallet they go to (SIWE, as a wallet links).
  const held = (await buyer.api.POST("/v1/fractional/{id}/purchase", { params: { path: { id: shareArtwork } }, body: { shares_quantity: SHARES_HELD, payment_method_id: "pm_card_visa" } })).data.purchase_id;
  await waitFor(async () => (await buyer.api.GET("/v1/fractional/purchases/{id}", { params: { path: { id: held } } })).data.status === "confirmed", { timeoutMs: 60_000, what: "the shares held" });
  const { data: nonce } = await sdk(stack!.url).POST("/v1/auth/siwe/nonce");
  const message = createSiweMessage({ domain: new URL(stack!.url).host, address: vault.address, statement: "Link this wallet to my account", uri: stack!.url, version: "1", chainId: hardhat.id, nonce: nonce.nonce, issuedAt: new Date() });
  await buyer.api.POST("/v1/users/me/wallets", { body: { message, signature: await vault.signMessage({ message }) } });
}, 300_000);

/** The round's writes, each a flow of steps under keys of its own. */
function roundFlows(round: number): Flow[] {
  const key = (what: string) => `crash-${SEED}-${round}-${what}`;
  const out: Flow[] = [];
  for (const n of [0, 1]) {
    const form = artworkForm();
    out.push(new Flow("creation", key(`create${n}`)).then("create an artwork", async (k) => (await as(artist).POST("/v1/artworks", { body: form, headers: { "Idempotency-Key": k } })).data.id));
  }
  // Two of the three ways to sell, drawn: each takes an artwork of the pool (a round certifies two).
  const left = ["buy-now", "offer", "fill"][Math.floor(random() * 3)];
  const sellings = ["buy-now", "offer", "fill"].filter((way) => way !== left);
  const forSale = sellings.includes("buy-now") ? pool.shift() : undefined;
  if (forSale) {
    out.push(
      new Flow("buy-now", key("sale"), forSale)
        .then(`list ${forSale}`, async (k) =>
          (await as(artist).POST("/v1/marketplace/listings", { body: { artwork_id: forSale, price_usd: SALE_PRICE_USD, accepts_offers: false }, headers: { "Idempotency-Key": k } })).data.listing_id,
        )
        .then("buy it now", async (k, [listing]) =>
          (await as(buyer).POST("/v1/marketplace/listings/{id}/purchase", { params: { path: { id: listing as string } }, body: { payment_method_id: "pm_card_visa" }, headers: { "Idempotency-Key": k } })).data.tx_id,
        ),
    );
  }
  const forOffer = sellings.includes("offer") ? pool.shift() : undefined;
  if (forOffer) {
    out.push(
      new Flow("offer", key("offer"), forOffer)
        .then(`list ${forOffer} for offers`, async (k) =>
          (await as(artist).POST("/v1/marketplace/listings", { body: { artwork_id: forOffer, price_usd: SALE_PRICE_USD, accepts_offers: true }, headers: { "Idempotency-Key": k } })).data.listing_id,
        )
        .then("offer", async (k, [listing]) =>
          (await as(bidder).POST("/v1/marketplace/offers", { body: { listing_id: listing as string, offer_amount_usd: OFFER_USD, payment_method_id: "pm_card_visa" }, headers: { "Idempotency-Key": k } })).data.offer_id,
        )
        .then("accept the offer", async (k, [, offer]) =>
          (await as(artist).POST("/v1/marketplace/offers/{id}/accept", { params: { path: { id: offer as string } }, headers: { "Idempotency-Key": k } })).data.offer_id,
        ),
    );
  }
  const forFill = sellings.includes("fill") ? pool.shift() : undefined;
  if (forFill) {
    // The wallet's steps go once: a fill whose answer was lost may be on the chain, so a resend
    // first asks the chain about the order it was sent for, and only then asks for the steps again.
    let order: Hex | null = null;
    out.push(
      new Flow("fill", key("fill"), forFill)
        .then(`list ${forFill} for a wallet`, async (k) =>
          (await as(artist).POST("/v1/marketplace/listings", { body: { artwork_id: forFill, price_usd: FILL_USD, accepts_offers: false }, headers: { "Idempotency-Key": k } })).data.listing_id,
        )
        .then("fill it on-chain", async (_k, [listing]) => {
          if (order && (await orderFilled(order))) return order;
          const { data } = await sdk(stack!.url, { fetch: patientFetch }).POST("/v1/marketplace/listings/{id}/onchain-purchase", { params: { path: { id: listing as string } }, body: { buyer: filler.address } });
          order = data.order.hash as Hex;
          const wallet = createWalletClient({ account: filler, chain: hardhat, transport: http(stack!.rpcUrl, { retryCount: 0, timeout: 20_000 }) });
          for (const step of data.steps) {
            const hash = await wallet.sendTransaction({ to: getAddress(step.tx.to), data: step.tx.data as Hex });
            // A receipt's poll outlives a dead stack (it retries until its timeout): given up with it.
            const gone = stack!.exited.then(() => Promise.reject(new Error("the stack exited before the receipt")));
            const receipt = await Promise.race([chain().waitForTransactionReceipt({ hash, timeout: 20_000 }), gone]);
            if (receipt.status !== "success") throw new Error(`the ${step.id} step reverted`);
          }
          return order;
        }),
    );
  }
  const shares = 1 + Math.floor(random() * 3);
  out.push(
    new Flow(`shares:${shares}`, key("shares")).then(`buy ${shares} shares`, async (k) =>
      (await as(buyer).POST("/v1/fractional/{id}/purchase", { params: { path: { id: shareArtwork } }, body: { shares_quantity: shares, payment_method_id: "pm_card_visa" }, headers: { "Idempotency-Key": k } })).data.purchase_id,
    ),
  );
  out.push(
    new Flow("withdrawal", key("withdrawal")).then("withdraw a share to the linked wallet", async (k) =>
      (await as(buyer).POST("/v1/withdrawals", { body: { asset: "shares", artwork_id: shareArtwork, quantity: 1, to: vault.address }, headers: { "Idempotency-Key": k } })).data.id,
    ),
  );
  const seats = 1 + Math.floor(random() * 2);
  out.push(
    new Flow(`tickets:${seats}`, key("tickets")).then(`order ${seats} tickets`, async (k) =>
      (await as(buyer).POST("/v1/events/{id}/tickets", { params: { path: { id: eventId } }, body: { kind: "virtual", quantity: seats, payment_method_id: "pm_card_visa" }, headers: { "Idempotency-Key": k } })).data.order_id,
    ),
  );
  // A wallet's own transfer: acknowledged once eth_sendRawTransaction answers its hash (the node
  // mines at once). Not resent: a transfer whose answer was lost may or may not be on the chain.
  const transfer = new Flow("transfer", key("transfer")).then("send a transfer", async () => {
    const wallet = createWalletClient({ account: sender, chain: hardhat, transport: http(stack!.rpcUrl, { retryCount: 0, timeout: 20_000 }) });
    return wallet.sendTransaction({ to: sink, value: BigInt(round + 1) });
  });
  out.push(transfer);
  return out;
}

/** Every acknowledged step's effect is there now (lost: the ones that are not). */
async function lostEffects(): Promise<string[]> {
  const lost: string[] = [];
  const anyone = sdk(stack!.url, { retry: { maxRetries: 4 } });
  for (const flow of flows) {
    for (const [i, step] of flow.steps.entries()) {
      const value = flow.value<string>(i);
      if (value === undefined) continue;
      const there = await (async () => {
        if (flow.kind === "transfer") return (await chain().getTransactionReceipt({ hash: value as Hex }).catch(() => null))?.status === "success";
        if (flow.kind === "creation") return (await anyone.GET("/v1/artworks/{id}", { params: { path: { id: value } } }).catch(() => null)) !== null;
        if (step.name.startsWith("list")) return (await anyone.GET("/v1/marketplace/listings/{id}", { params: { path: { id: value } } }).catch(() => null)) !== null;
        if (flow.kind === "buy-now") return (await as(buyer, 4).GET("/v1/marketplace/transactions/{id}", { params: { path: { id: value } } }).catch(() => null)) !== null;
        if (flow.kind === "offer") return (await as(bidder, 4).GET("/v1/marketplace/offers/{id}", { params: { path: { id: value } } }).catch(() => null)) !== null;
        if (flow.kind === "fill") return orderFilled(value as Hex);
        if (flow.kind === "withdrawal") return (await as(buyer, 4).GET("/v1/withdrawals/{id}", { params: { path: { id: value } } }).catch(() => null)) !== null;
        if (flow.kind.startsWith("shares")) return (await as(buyer, 4).GET("/v1/fractional/purchases/{id}", { params: { path: { id: value } } }).catch(() => null)) !== null;
        return (await as(buyer, 4).GET("/v1/ticket-orders/{id}", { params: { path: { id: value } } }).catch(() => null)) !== null;
      })();
      if (!there) lost.push(`${step.name} (${step.key}) → ${value}`);
    }
  }
  return lost;
}

/** Resends every step whose answer was lost, as a client does after an outage, until each flow is answered. */
async function resend(): Promise<void> {
  const open = flows.filter((f) => !f.done && f.kind !== "transfer");
  await waitFor(
    async () => {
      await Promise.all(open.filter((f) => !f.done).map((f) => f.run()));
      return open.every((f) => f.done);
    },
    { timeoutMs: 120_000, intervalMs: 500, what: `answers to ${open.length} resent writes` },
  );
}

it(`loses and doubles nothing over ${ROUNDS} SIGKILLs of the stack's processes with writes in flight (seed ${SEED})`, async () => {
  // Each target as often as any other, in a drawn order.
  const order = Array.from({ length: ROUNDS }, (_, i) => targets[i % targets.length]!).sort(() => random() - 0.5);
  const lostAfterRestarts: string[] = [];
  for (const [round, target] of order.entries()) {
    // Certified creations of earlier rounds join the pool the next sales draw from.
    for (const id of flows.filter((f) => f.kind === "creation").map((f) => f.value<string>(0))) {
      if (id && !pooled.has(id) && (await certified(id)).status === "certified") {
        pool.push(id);
        pooled.add(id);
      }
    }
    const load = roundFlows(round);
    flows.push(...load);
    let answered = 0;
    let killAt!: () => void;
    const killNow = new Promise<void>((resolve) => (killAt = resolve));
    const steps = load.reduce((n, f) => n + f.steps.length, 0);
    const after = Math.floor(random() * steps);
    if (after === 0) killAt();
    const running = Promise.all(load.map((f) => f.run(() => ++answered >= after && killAt())));
    await Promise.race([killNow, running]);
    const t0 = performance.now();
    killTarget(stack!, target);
    kills[target] += 1;
    // The stack exits (a child's death stops the rest); killed itself, its children run on until
    // the next start stops them, as they would for a developer.
    await stack!.exited;
    const exitedAfter = performance.now() - t0;
    await running;

    const t1 = performance.now();
    await boot();
    const t2 = performance.now();
    expect(stack!.output(), `round ${round} (${target}): ${stack!.diagnostics()}`).not.toMatch(ARCHIVED);
    expect(archives()).toEqual([]);
    await resend();
    const t3 = performance.now();
    const lost = await lostEffects();
    const ms = (n: number) => `${(n / 1000).toFixed(1)} s`;
    console.log(
      `[crash-campaign] round ${round} (${target}): the stack exited in ${ms(exitedAfter)}, the load's last answer in ${ms(t1 - t0)}; ` +
        `the next start ${ms(t2 - t1)}, resends ${ms(t3 - t2)}, checks ${ms(performance.now() - t3)} (${/Started in .*/.exec(stack!.output())?.[0] ?? "no banner"})`,
    );
    lostAfterRestarts.push(...lost.map((l) => `round ${round} (${target}): ${l}`));
  }

  // Everything under way finishes, once.
  const acknowledged = (kind: string) => flows.filter((f) => f.kind.startsWith(kind) && f.done && f.steps.every((s) => s.outcome?.state === "acknowledged"));
  const refused = flows.flatMap((f) => f.steps.filter((s) => s.outcome?.state === "refused").map((s) => `${s.name} (${s.key}): ${JSON.stringify(s.outcome)}`));
  const sales = acknowledged("buy-now");
  const offers = acknowledged("offer");
  const shareBuys = acknowledged("shares");
  const ticketOrders = acknowledged("tickets");
  const fills = acknowledged("fill");
  const withdrawals = acknowledged("withdrawal");
  const creations = acknowledged("creation");
  const anyone = sdk(stack!.url, { retry: { maxRetries: 4 } });
  for (const flow of creations) {
    await waitFor(async () => (await certified(flow.value<string>(0)!)).status === "certified", { timeoutMs: FINISH_TIMEOUT_MS, what: `certification of ${flow.value(0)}` });
  }
  for (const flow of sales) {
    await waitFor(async () => (await as(buyer, 4).GET("/v1/marketplace/transactions/{id}", { params: { path: { id: flow.value<string>(1)! } } })).data.status === "completed", { timeoutMs: FINISH_TIMEOUT_MS, what: `sale ${flow.value(1)}` });
  }
  for (const flow of offers) {
    await waitFor(async () => {
      const { data } = await as(bidder, 4).GET("/v1/marketplace/offers/{id}", { params: { path: { id: flow.value<string>(1)! } } });
      return data.transaction_id && (await as(bidder, 4).GET("/v1/marketplace/transactions/{id}", { params: { path: { id: data.transaction_id } } })).data.status === "completed";
    }, { timeoutMs: FINISH_TIMEOUT_MS, what: `the sale of offer ${flow.value(1)}` });
  }
  for (const flow of shareBuys) {
    await waitFor(async () => (await as(buyer, 4).GET("/v1/fractional/purchases/{id}", { params: { path: { id: flow.value<string>(0)! } } })).data.status === "confirmed", { timeoutMs: FINISH_TIMEOUT_MS, what: `share purchase ${flow.value(0)}` });
  }
  for (const flow of fills) {
    await waitFor(async () => (await anyone.GET("/v1/marketplace/listings/{id}", { params: { path: { id: flow.value<string>(0)! } } })).data.status === "sold", { timeoutMs: FINISH_TIMEOUT_MS, what: `the fill of listing ${flow.value(0)}` });
  }
  for (const flow of withdrawals) {
    await waitFor(async () => (await as(buyer, 4).GET("/v1/withdrawals/{id}", { params: { path: { id: flow.value<string>(0)! } } })).data.status === "completed", { timeoutMs: FINISH_TIMEOUT_MS, what: `withdrawal ${flow.value(0)}` });
  }
  for (const flow of ticketOrders) {
    await waitFor(async () => (await as(buyer, 4).GET("/v1/ticket-orders/{id}", { params: { path: { id: flow.value<string>(0)! } } })).data.status === "confirmed", { timeoutMs: FINISH_TIMEOUT_MS, what: `ticket order ${flow.value(0)}` });
  }

  // Exactly once: the database and the chain agree, and each write counted once.
  const [artworks] = await query<{ n: string; tokens: string }>("select count(*) as n, count(distinct token_id) as tokens from artworks where status = 'certified'");
  const totalCertified = await chain().readContract({ address: contract("ArtCertificate"), abi: artCertificateAbi, functionName: "totalCertified" });
  const [mine] = await query<{ n: string }>("select count(*) as n from artworks where artist_id = $1", [artist.id]);
  const perListing = await query<{ listing_id: string; n: string }>("select listing_id, count(*) as n from sales where seller_id = $1 group by listing_id having count(*) <> 1", [artist.id]);
  const ownerOf = async (f: Flow) => {
    const { data } = await anyone.GET("/v1/artworks/{id}", { params: { path: { id: f.subject! } } });
    return (await chain().readContract({ address: contract("ArtCertificate"), abi: artCertificateAbi, functionName: "ownerOf", args: [BigInt(data.token_id!)] })).toLowerCase();
  };
  const owners = await Promise.all([...sales, ...offers, ...fills].map(ownerOf));
  const sharesOnChain = await chain().readContract({ address: contract("ArtShares"), abi: artSharesAbi, functionName: "balanceOf", args: [wallets.buyer, shareToken] });
  const sharesWithdrawn = await chain().readContract({ address: contract("ArtShares"), abi: artSharesAbi, functionName: "balanceOf", args: [vault.address, shareToken] });
  const sharesBought = shareBuys.reduce((n, f) => n + Number(f.kind.split(":")[1]), 0);
  const seatsOrdered = ticketOrders.reduce((n, f) => n + Number(f.kind.split(":")[1]), 0);
  const [tickets] = await query<{ n: string }>("select count(*) as n from tickets where event_id = $1 and holder_id = $2", [eventId, buyer.id]);
  const [charged] = await query<{ cents: string }>("select coalesce(sum(amount_cents - amount_refunded_cents), 0) as cents from sandbox_charges where status = 'succeeded'");
  const expectedCents = 100 * (sales.length * SALE_PRICE_USD + offers.length * OFFER_USD + (SHARES_HELD + sharesBought) * SHARE_PRICE_USD + seatsOrdered * TICKET_PRICE_USD);

  const retries = flows.reduce((n, f) => n + f.steps.reduce((m, s) => m + Math.max(0, s.sends - 1), 0), 0);
  console.log(
    `[crash-campaign] seed ${SEED}: ${ROUNDS} rounds, kills ${JSON.stringify(kills)}; writes acknowledged: ${creations.length} creations, ${sales.length} buy-nows, ` +
      `${offers.length} offers accepted, ${fills.length} on-chain fills, ${withdrawals.length} share withdrawals, ${shareBuys.length} share purchases (${sharesBought} shares), ${ticketOrders.length} ticket orders (${seatsOrdered} seats), ` +
      `${flows.filter((f) => f.kind === "transfer" && f.value(0)).length} transfers; ${retries} steps resent after a restart; lost ${lostAfterRestarts.length}; refused ${refused.length}`,
  );
  expect(lostAfterRestarts).toEqual([]);
  expect(refused).toEqual([]);
  expect(Number(mine!.n)).toBe(creations.length + 7);
  expect(BigInt(artworks!.n)).toBe(totalCertified);
  expect(artworks!.tokens).toBe(artworks!.n);
  expect(perListing).toEqual([]);
  expect(owners).toEqual([...sales.map(() => wallets.buyer), ...offers.map(() => wallets.bidder), ...fills.map(() => filler.address)].map((w) => w.toLowerCase()));
  expect(sharesWithdrawn).toBe(BigInt(withdrawals.length));
  expect(sharesOnChain).toBe(BigInt(SHARES_HELD + sharesBought - withdrawals.length));
  expect(Number(tickets!.n)).toBe(seatsOrdered);
  expect(Number(charged!.cents)).toBe(expectedCents);
  expect(boots.filter((output) => ARCHIVED.test(output))).toEqual([]);
}, 3_600_000);
