/**
 * Fractional ownership on real pieces: Postgres, the Hardhat chain with ArtCertificate and ArtShares,
 * Ponder (owner checks, SharesMinted and share balances), the sandbox processor and the API over HTTP.
 */
import { type Address, type Hex, keccak256, toBytes } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import { loadConfig } from "../../api/src/config.ts";
import { type RunningPlatform, startPlatform } from "../../api/src/platform.ts";
import { artworkInput, publicClient, unreachableImageUrl, setRoleAsDeployer, useArtworkPlatform } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { certifiedArtwork, indexedCertificate, walletClientOf, walletOf } from "../support/marketplace.ts";
import { waitFor } from "../support/wait.ts";
import { adminToken, createUser, expectProblem, send, testApiSettings, type TestUser } from "../support/api.ts";

const p = useArtworkPlatform({ MARKETPLACE_SWEEP_INTERVAL_MS: "300", MARKETPLACE_CHARGE_ATTEMPTS: "2", PAYMENT_RETRY_BASE_MS: "5" });
const env = () => testEnvironment();
/**
 * The shares race: twice as many buyers, asking 10 shares each, as the class has room for. 200 buyers
 * on 1,000 shares, except in `npm test`'s fast tier (100 on 500), which runs beside other files; CI's
 * PostgreSQL pass and test:full run the 200 (SHARE_BUYERS, a multiple of 50).
 */
const BUYERS = Number(process.env.SHARE_BUYERS ?? (process.env.TEST_TIER === "fast" ? 100 : 200));
const WINNERS = Math.floor(BUYERS / 2);
const SHARES = WINNERS * 10;

type Art = "main" | "byAdmin" | "listed" | "race" | "failing" | "classFail" | "idem";
const FAKE = { artwork: "art_01JD3Y5V0Q3G7W7J6T4N4C2X1M", purchase: "frac_01JD3Y5V0Q3G7W7J6T4N4C2X1M" };

const readShares = <T>(functionName: "totalSupply" | "balanceOf" | "shareCap" | "purchaseMinted" | "SHARE_ISSUER_ROLE", args: readonly unknown[]) =>
  publicClient().readContract({ address: env().artSharesAddress, abi: artSharesAbi, functionName, args } as never) as Promise<T>;

/** Grants or revokes the platform relayer's SHARE_ISSUER_ROLE as the deployer. */
async function setShareIssuer(relayer: Address, granted: boolean): Promise<void> {
  const role = await readShares<Hex>("SHARE_ISSUER_ROLE", []);
  await setRoleAsDeployer({ address: env().artSharesAddress, abi: artSharesAbi }, role, relayer, granted);
}

describe("fractional ownership", () => {
  let artist: TestUser;
  let collector: TestUser;
  let collector2: TestUser;
  let stranger: TestUser;
  let reader: TestUser;
  let admin: string;
  const art = {} as Record<Art, string>;
  /**
   * HTTP processes of their own on this platform (its worker mints), so that a test gets the answer
   * it asserts: `patient` waits for a purchase's mint long enough to answer 201, `impatient` does not
   * wait (202).
   */
  let patient: RunningPlatform;
  let impatient: RunningPlatform;

  const fractionalize = (token: string, body: unknown) => p.api.request("POST", "/v1/fractional/artworks", { token, body });
  const purchase = (buyer: TestUser, artworkId: string, shares: number, card = "pm_card_visa", key?: string) =>
    p.api.request("POST", `/v1/fractional/${artworkId}/purchase`, { token: buyer.token, body: { shares_quantity: shares, payment_method_id: card }, headers: key ? { "Idempotency-Key": key } : {} });
  /** A purchase through another HTTP process of this platform (see `patient`, `impatient`). */
  const purchaseThrough = (via: RunningPlatform, buyer: TestUser, artworkId: string, shares: number) =>
    send(via.url, "POST", `/v1/fractional/${artworkId}/purchase`, { token: buyer.token, body: { shares_quantity: shares, payment_method_id: "pm_card_visa" } });
  const purchaseOf = (token: string, id: string) => p.api.request("GET", `/v1/fractional/purchases/${id}`, { token });
  const detail = async (artworkId: string) => (await p.api.request("GET", `/v1/fractional/artworks/${artworkId}`)).body;
  /** Fractionalizes and waits for the class to be on-chain (201, or 202 then active). */
  const activate = async (token: string, artworkId: string, totalShares: number, price: number) => {
    const res = await fractionalize(token, { artwork_id: artworkId, total_shares: totalShares, price_per_share_usd: price });
    expect([201, 202], res.text).toContain(res.status);
    expect(res.body.status).toBe(res.status === 201 ? "active" : "pending");
    await waitFor(async () => (await detail(artworkId)).status === "active", { timeoutMs: 20_000, what: `the share class of ${artworkId}` });
    return res;
  };
  const settled = (user: TestUser | string, id: string, status: "confirmed" | "failed" = "confirmed") =>
    waitFor(
      async () => {
        const res = await purchaseOf(typeof user === "string" ? user : user.token, id);
        if (res.body.status !== "pending" && res.body.status !== status) throw new Error(`${id} is ${res.body.status}: ${res.text}`);
        return res.body.status === status && res.body;
      },
      { timeoutMs: 20_000, what: `${id} ${status}` },
    );
  const eventsOf = async (type: string) =>
    (await p.db.selectFrom("outbox_events").select(["payload", "audience"]).where("event_type", "=", type).execute()).map((e) => ({
      payload: (typeof e.payload === "string" ? JSON.parse(e.payload) : e.payload) as Record<string, unknown>,
      audience: [...e.audience].sort(),
    }));
  const count = async (table: "fractional_artworks" | "fractional_purchases" | "sandbox_charges" | "transactions") =>
    Number((await p.db.selectFrom(table).select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n);
  const chargeOf = (purchaseId: string) => p.db.selectFrom("sandbox_charges").selectAll().where("idempotency_key", "=", `share_purchase:${purchaseId}`).execute();
  const tokenOf = async (artworkId: string) => (await indexedCertificate(p, artworkId)).tokenId;

  beforeAll(async () => {
    [artist, collector, collector2, stranger, reader, admin] = await Promise.all([
      createUser(p.api, { role: "artist", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["artworks:read", "users:read", "marketplace:write"] }),
      adminToken(p.api),
    ]);
    const names: Art[] = ["main", "byAdmin", "listed", "race", "failing", "classFail", "idem"];
    const ids = await Promise.all(names.map(() => certifiedArtwork(p, artist)));
    names.forEach((name, i) => (art[name] = ids[i]!));
    const httpOnly = (wait: string) => startPlatform(loadConfig(testApiSettings({ ...p.env, FRACTIONAL_PURCHASE_WAIT_MS: wait })), { http: true, worker: false });
    [patient, impatient] = await Promise.all([httpOnly("20000"), httpOnly("0")]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([patient?.close(), impatient?.close()]);
  });

  it("fractionalizes for the on-chain owner (or an admin) only, once, never a listed or uncertified work, and then refuses a whole listing", async () => {
    const before = { artworks: await count("fractional_artworks"), operations: await p.db.selectFrom("chain_operations").select("key").where("key", "like", "share_class:%").execute() };
    const ok = { artwork_id: art.main, total_shares: 100, price_per_share_usd: 25.5 };
    for (const bad of [
      {},
      { ...ok, total_shares: 0 },
      { ...ok, total_shares: 1_000_001 },
      { ...ok, total_shares: 1.5 },
      { ...ok, total_shares: "100" },
      { ...ok, price_per_share_usd: 0 },
      { ...ok, price_per_share_usd: -1 },
      { ...ok, price_per_share_usd: 1.234 },
      { ...ok, price_per_share_usd: 1_000_000_000.01 },
      { ...ok, extra: true },
      { total_shares: 100, price_per_share_usd: 1 },
      { ...ok, artwork_id: FAKE.artwork },
      { ...ok, artwork_id: "not-an-id" },
    ]) {
      expectProblem(await fractionalize(artist.token, bad), 400, "validation_failed");
    }
    // Not the certificate's holder; not certified (its image never answers); listed whole.
    expectProblem(await fractionalize(stranger.token, ok), 403, "forbidden");
    const pending = await p.api.request("POST", "/v1/artworks", { token: artist.token, body: artworkInput({ image_url: await unreachableImageUrl() }) });
    expect(pending.status, pending.text).toBe(201);
    expectProblem(await fractionalize(artist.token, { ...ok, artwork_id: pending.body.id }), 409, "invalid_state");
    const listing = await p.api.request("POST", "/v1/marketplace/listings", { token: artist.token, body: { artwork_id: art.listed, price_usd: 500, accepts_offers: false } });
    expect(listing.status, listing.text).toBe(201);
    expectProblem(await fractionalize(artist.token, { ...ok, artwork_id: art.listed }), 409, "invalid_state");
    expect(await count("fractional_artworks")).toBe(before.artworks);
    expect(await p.db.selectFrom("chain_operations").select("key").where("key", "like", "share_class:%").execute()).toEqual(before.operations);
    expect((await p.db.selectFrom("artworks").select("fractionalized_at").where("id", "in", [art.main, art.listed]).execute()).map((a) => a.fractionalized_at)).toEqual([null, null]);

    const res = await activate(artist.token, art.main, 100, 25.5);
    const tokenId = await tokenOf(art.main);
    const { display_name } = await p.db.selectFrom("users").select("display_name").where("id", "=", artist.id).executeTakeFirstOrThrow();
    const expected = {
      artwork_id: art.main,
      title: expect.stringContaining("Harbour at Dawn"),
      artist: display_name,
      artist_id: artist.id,
      owner_id: artist.id,
      token_id: tokenId.toString(),
      total_shares: 100,
      shares_available: 100,
      price_per_share_usd: 25.5,
      total_value_usd: 2550,
      funded_pct: 0,
      status: "active",
      created_at: expect.stringMatching(/Z$/),
    };
    expect(res.body).toEqual({ ...expected, status: res.body.status });
    expect(await detail(art.main)).toEqual(expected);
    expect(await readShares<bigint>("shareCap", [tokenId])).toBe(100n);
    expect(await p.db.selectFrom("chain_operations").select(["kind", "status"]).where("key", "=", `share_class:${art.main}`).executeTakeFirstOrThrow()).toMatchObject({ status: "confirmed" });

    // Once only, whoever asks; an admin may fractionalize the owner's artwork (the owner gets the proceeds).
    expectProblem(await fractionalize(artist.token, ok), 409, "conflict");
    expectProblem(await fractionalize(admin, ok), 409, "conflict");
    const byAdmin = await activate(admin, art.byAdmin, 50, 10);
    expect(byAdmin.body).toMatchObject({ owner_id: artist.id, artist_id: artist.id, total_shares: 50 });

    // A fractionalized artwork cannot be listed whole.
    expectProblem(await p.api.request("POST", "/v1/marketplace/listings", { token: artist.token, body: { artwork_id: art.main, price_usd: 500, accepts_offers: false } }), 409, "invalid_state");

    // Public reads: the list (active classes, paginated), the detail, 404s.
    const list = await p.api.request("GET", "/v1/fractional/artworks?limit=100");
    expect(list.status).toBe(200);
    expect(list.body.pagination).toMatchObject({ total: 2 });
    expect(list.body.data.map((a: { artwork_id: string }) => a.artwork_id).sort()).toEqual([art.main, art.byAdmin].sort());
    expect(list.body.data.find((a: { artwork_id: string }) => a.artwork_id === art.main)).toEqual(expected);
    expectProblem(await p.api.request("GET", `/v1/fractional/artworks/${FAKE.artwork}`), 404, "not_found");
    expectProblem(await p.api.request("GET", `/v1/fractional/artworks/${art.listed}`), 404, "not_found");
    expectProblem(await p.api.request("GET", `/v1/fractional/${FAKE.artwork}/shares`), 404, "not_found");
  });

  it("a purchase charges once, mints the shares to the buyer's wallet, confirms with its event and share_purchase transaction", async () => {
    const tokenId = await tokenOf(art.main);
    const buyerWallet = (await walletOf(p, collector.id)) as Address;
    const res = await purchaseThrough(patient, collector, art.main, 10);
    expect(res.status, res.text).toBe(201);
    const id = res.body.purchase_id as string;
    const confirmed = await settled(collector, id);
    expect(confirmed).toEqual({
      purchase_id: expect.stringMatching(/^frac_[0-9A-Z]{26}$/),
      artwork_id: art.main,
      buyer_id: collector.id,
      shares_purchased: 10,
      price_per_share_usd: 25.5,
      total_paid_usd: 255,
      status: "confirmed",
      on_chain_tx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      new_ownership_pct: 10,
      transaction_id: expect.stringMatching(/^txn_[0-9A-Z]{26}$/),
      failure_reason: null,
      created_at: expect.stringMatching(/Z$/),
      confirmed_at: expect.stringMatching(/Z$/),
    });
    expect(res.body).toEqual(confirmed);

    // The chain: the buyer's balance, the supply, the purchase key minted once, in the answered transaction.
    expect(await readShares<bigint>("balanceOf", [buyerWallet, tokenId])).toBe(10n);
    expect(await readShares<bigint>("totalSupply", [tokenId])).toBe(10n);
    expect(await readShares<boolean>("purchaseMinted", [keccak256(toBytes(id))])).toBe(true);
    const receipt = await publicClient().getTransactionReceipt({ hash: confirmed.on_chain_tx as Hex });
    expect(receipt.to?.toLowerCase()).toBe(env().artSharesAddress.toLowerCase());

    expect((await chargeOf(id)).map((c) => [c.status, c.amount_cents])).toEqual([["succeeded", 25500n]]);

    // A second purchase, answered before its mint (202, pending): the buyer then holds 25 of 100.
    const second = await purchaseThrough(impatient, collector, art.main, 15);
    expect(second.status, second.text).toBe(202);
    const secondConfirmed = await settled(collector, second.body.purchase_id);
    expect(secondConfirmed).toMatchObject({ shares_purchased: 15, total_paid_usd: 382.5, new_ownership_pct: 25 });
    expect(second.body).toEqual({ ...secondConfirmed, status: "pending", on_chain_tx: null, new_ownership_pct: null, confirmed_at: null });
    expect(await readShares<bigint>("balanceOf", [buyerWallet, tokenId])).toBe(25n);
    expect(await detail(art.main)).toMatchObject({ shares_available: 75, funded_pct: 25 });

    // fractional.purchase_confirmed, to the buyer and the owner only.
    const [event] = (await eventsOf("fractional.purchase_confirmed")).filter((e) => e.payload.purchase_id === id);
    expect(event).toEqual({
      payload: { purchase_id: id, artwork_id: art.main, buyer_id: collector.id, shares_purchased: 10, total_paid_usd: 255, on_chain_tx: confirmed.on_chain_tx, new_ownership_pct: 10, confirmed_at: expect.any(String) },
      audience: [artist.id, collector.id].sort(),
    });

    // The share_purchase transaction, listed for the buyer and the owner (recipient), with the fee and the payout.
    const mine = await p.api.request("GET", "/v1/marketplace/transactions?type=share_purchase&role=buyer", { token: collector.token });
    const txn = mine.body.data.find((t: { tx_id: string }) => t.tx_id === confirmed.transaction_id);
    expect(txn).toMatchObject({ type: "share_purchase", status: "completed", artwork_id: art.main, amount_usd: 255, buyer_id: collector.id, seller_id: artist.id, recipient_id: artist.id, on_chain_tx: confirmed.on_chain_tx });
    expect(Math.round(txn.platform_fee_usd * 100)).toBe(Number((await chargeOf(id))[0]!.application_fee_cents));
    expect(Math.round(txn.platform_fee_usd * 100) + Math.round(txn.payout_usd * 100)).toBe(25500);
    expect(txn.platform_fee_usd).toBeGreaterThan(0);
    const owners = await p.api.request("GET", "/v1/marketplace/transactions?type=share_purchase&role=recipient", { token: artist.token });
    expect(owners.body.data.map((t: { tx_id: string }) => t.tx_id)).toContain(confirmed.transaction_id);
    expect((await p.api.request("GET", "/v1/marketplace/transactions", { token: stranger.token })).body.data).toEqual([]);

    // Read by the buyer and admins only.
    expectProblem(await purchaseOf(stranger.token, id), 404, "not_found");
    expectProblem(await purchaseOf(artist.token, id), 404, "not_found");
    expect((await purchaseOf(admin, id)).body).toEqual(confirmed);
    expectProblem(await purchaseOf(collector.token, FAKE.purchase), 404, "not_found");
    expectProblem(await purchaseOf(collector.token, "frac_not-an-id"), 404, "not_found");

    // The shareholders, from the indexer's balances.
    const holders = await waitFor(async () => {
      const got = await p.api.request("GET", `/v1/fractional/${art.main}/shares`);
      return got.body.shareholders?.[0]?.shares_owned === 25 && got.body;
    });
    expect(holders).toEqual({
      artwork_id: art.main,
      total_shares: 100,
      shareholders: [{ user_id: collector.id, wallet: buyerWallet, shares_owned: 25, ownership_pct: 25, acquired_at: expect.stringMatching(/Z$/) }],
      pagination: expect.objectContaining({ total: 1 }),
    });
  });

  it("a direct on-chain transfer between wallets moves the shareholding (the chain is the truth)", async () => {
    const tokenId = await tokenOf(art.main);
    const from = (await walletOf(p, collector.id)) as Address;
    const to = (await walletOf(p, collector2.id)) as Address;
    const outsider = privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address;
    const wallet = await walletClientOf(p, collector.id);
    for (const [recipient, amount] of [[to, 7n], [outsider, 3n]] as const) {
      const hash = await wallet.writeContract({ chain: null, address: env().artSharesAddress, abi: artSharesAbi, functionName: "safeTransferFrom", args: [from, recipient, tokenId, amount, "0x"] });
      expect((await publicClient().waitForTransactionReceipt({ hash })).status).toBe("success");
    }
    const holders = await waitFor(async () => {
      const got = await p.api.request("GET", `/v1/fractional/${art.main}/shares`);
      return got.body.shareholders?.length === 3 && got.body;
    }, { what: "the transfers indexed" });
    expect(holders.shareholders.map((h: Record<string, unknown>) => ({ user_id: h.user_id, wallet: h.wallet, shares_owned: h.shares_owned, ownership_pct: h.ownership_pct }))).toEqual([
      { user_id: collector.id, wallet: from, shares_owned: 15, ownership_pct: 15 },
      { user_id: collector2.id, wallet: to, shares_owned: 7, ownership_pct: 7 },
      { user_id: null, wallet: outsider, shares_owned: 3, ownership_pct: 3 },
    ]);
    expect(holders.pagination).toMatchObject({ total: 3 });
    const page = await p.api.request("GET", `/v1/fractional/${art.main}/shares?limit=1&page=2`);
    expect(page.body.shareholders.map((h: { wallet: string }) => h.wallet)).toEqual([to]);
    // Transfers change holdings, not what was sold.
    expect(await detail(art.main)).toMatchObject({ shares_available: 75, funded_pct: 25 });
  });

  it("Idempotency-Key: a retried fractionalization or purchase answers the same resource, stored once, charged once", async () => {
    const key = `frac-${Date.now()}`;
    const body = { artwork_id: art.idem, total_shares: 40, price_per_share_usd: 12.5 };
    const first = await p.api.request("POST", "/v1/fractional/artworks", { token: artist.token, body, headers: { "Idempotency-Key": `${key}-class` } });
    expect([201, 202], first.text).toContain(first.status);
    const again = await p.api.request("POST", "/v1/fractional/artworks", { token: artist.token, body, headers: { "Idempotency-Key": `${key}-class` } });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect([again.status, again.body.artwork_id]).toEqual([first.status, art.idem]);
    await waitFor(async () => (await detail(art.idem)).status === "active", { timeoutMs: 20_000, what: "the share class" });

    const bought = await purchase(collector2, art.idem, 4, "pm_card_visa", `${key}-buy`);
    expect([201, 202], bought.text).toContain(bought.status);
    const id = bought.body.purchase_id as string;
    const replay = await purchase(collector2, art.idem, 4, "pm_card_visa", `${key}-buy`);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body.purchase_id).toBe(id);
    await settled(collector2, id);
    expect(await p.db.selectFrom("fractional_purchases").select("id").where("artwork_id", "=", art.idem).execute()).toEqual([{ id }]);
    expect((await chargeOf(id)).length).toBe(1);
    expect(await detail(art.idem)).toMatchObject({ shares_available: 36, funded_pct: 10 });
    // The same key with another body is refused.
    expect((await purchase(collector2, art.idem, 5, "pm_card_visa", `${key}-buy`)).status).toBe(422);
  });

  it(`${BUYERS} buyers asking 10 of ${SHARES} shares at once: exactly ${WINNERS} succeed, ${WINNERS} get insufficient_shares; ${SHARES} minted on-chain, ${WINNERS} charges`, async () => {
    await activate(artist.token, art.race, SHARES, 1);
    const tokenId = await tokenOf(art.race);
    const buyers: TestUser[] = [];
    for (let batch = 0; batch < BUYERS / 25; batch++) buyers.push(...(await Promise.all(Array.from({ length: 25 }, () => createUser(p.api, { role: "collector", scope: ["fractional:write", "fractional:read"] })))));

    const shareCharges = async () => Number((await p.db.selectFrom("sandbox_charges").select((eb) => eb.fn.countAll().as("n")).where("idempotency_key", "like", "share_purchase:%").executeTakeFirstOrThrow()).n);
    const chargesBefore = await shareCharges();
    const answers = await Promise.all(buyers.map((b) => purchase(b, art.race, 10)));
    const won = answers.filter((a) => a.status === 201 || a.status === 202);
    const lost = answers.filter((a) => a.status === 409);
    expect(won.length, answers.filter((a) => ![201, 202, 409].includes(a.status)).map((a) => `${a.status} ${a.text}`).join("\n")).toBe(WINNERS);
    expect(lost.length).toBe(WINNERS);
    for (const a of lost) expectProblem(a, 409, "insufficient_shares");

    const ids = won.map((a) => a.body.purchase_id as string);
    await waitFor(
      async () => {
        const rows = await p.db.selectFrom("fractional_purchases").select("status").where("artwork_id", "=", art.race).execute();
        if (rows.some((r) => r.status === "failed")) throw new Error("a purchase failed");
        return rows.length === WINNERS && rows.every((r) => r.status === "confirmed");
      },
      { timeoutMs: 150_000, intervalMs: 100, what: `${WINNERS} purchases confirmed` },
    );
    const stored = await p.db.selectFrom("fractional_artworks").select(["shares_sold", "shares_confirmed"]).where("artwork_id", "=", art.race).executeTakeFirstOrThrow();
    expect(stored).toEqual({ shares_sold: SHARES, shares_confirmed: SHARES });
    expect(await readShares<bigint>("totalSupply", [tokenId])).toBe(BigInt(SHARES));
    const charges = await p.db.selectFrom("sandbox_charges").select(["idempotency_key", "status"]).where("idempotency_key", "in", ids.map((id) => `share_purchase:${id}`)).execute();
    expect(charges.length).toBe(WINNERS);
    expect(charges.every((c) => c.status === "succeeded")).toBe(true);
    expect(await shareCharges()).toBe(chargesBefore + WINNERS);
    const mints = await p.views.selectFrom("share_mint").select((eb) => eb.fn.countAll().as("n")).where("token_id", "=", tokenId).executeTakeFirstOrThrow();
    expect(Number(mints.n)).toBe(WINNERS);
    expect(await detail(art.race)).toMatchObject({ shares_available: 0, funded_pct: 100 });
    expectProblem(await purchase(collector, art.race, 1), 409, "insufficient_shares");
  }, 240_000);

  it("a declined card answers 402 with the purchase and releases the shares; unknown or foreign cards are 404 and reserve nothing", async () => {
    await activate(artist.token, art.failing, 100, 2);
    const tokenId = await tokenOf(art.failing);
    const declined = await purchase(collector, art.failing, 10, "pm_card_chargeDeclined");
    expectProblem(declined, 402, "payment_declined");
    expect(declined.body.decline_code).toBe("generic_decline");
    const id = declined.body.purchase_id as string;
    expect(id).toMatch(/^frac_/);
    const failed = (await purchaseOf(collector.token, id)).body;
    expect(failed).toMatchObject({ status: "failed", shares_purchased: 10, on_chain_tx: null, new_ownership_pct: null, confirmed_at: null });
    expect(failed.failure_reason).toEqual(expect.any(String));
    expect((await p.api.request("GET", `/v1/marketplace/transactions/${failed.transaction_id}`, { token: collector.token })).body.status).toBe("failed");
    expect(await detail(art.failing)).toMatchObject({ shares_available: 100, funded_pct: 0 });
    expect(await readShares<boolean>("purchaseMinted", [keccak256(toBytes(id))])).toBe(false);
    expect(await p.db.selectFrom("chain_operations").select("key").where("key", "=", `mint:${id}`).execute()).toEqual([]);

    const before = { purchases: await count("fractional_purchases"), charges: await count("sandbox_charges") };
    const saved = await p.api.request("POST", "/v1/payment-methods", { token: collector2.token, body: { token: "pm_card_visa" } });
    expect(saved.status, saved.text).toBe(201);
    expectProblem(await purchase(collector, art.failing, 10, saved.body.id), 404, "not_found");
    expectProblem(await purchase(collector, art.failing, 10, "pm_card_nonexistent"), 404, "not_found");
    expect(await count("fractional_purchases")).toBe(before.purchases);
    expect(await count("sandbox_charges")).toBe(before.charges);
    expect(await detail(art.failing)).toMatchObject({ shares_available: 100 });
    expect(await readShares<bigint>("totalSupply", [tokenId])).toBe(0n);
  });

  it("a mint that fails for good (the relayer lost SHARE_ISSUER_ROLE) fails the purchase, releases its shares and refunds the charge", async () => {
    const relayer = privateKeyToAccount(p.relayerKey).address;
    const tokenId = await tokenOf(art.failing);
    await setShareIssuer(relayer, false);
    let id: string;
    try {
      const res = await purchase(collector, art.failing, 20);
      // The charge succeeds; the mint reverts in simulation: failed within the wait (201, status
      // failed), or later (202). Never 402: the card was not declined.
      expect([201, 202], res.text).toContain(res.status);
      id = res.body.purchase_id as string;
      const failed = await settled(collector, id, "failed");
      expect(failed).toMatchObject({ status: "failed", on_chain_tx: null, new_ownership_pct: null });
      expect(await detail(art.failing)).toMatchObject({ shares_available: 100, funded_pct: 0 });
      const refunded = await waitFor(async () => {
        const [charge] = await chargeOf(id);
        return charge && charge.amount_refunded_cents === charge.amount_cents && charge;
      }, { timeoutMs: 20_000, what: "the refund" });
      expect(refunded).toMatchObject({ status: "succeeded", amount_cents: 4000n, amount_refunded_cents: 4000n });
      const txn = await waitFor(async () => {
        const t = (await p.api.request("GET", `/v1/marketplace/transactions/${failed.transaction_id}`, { token: collector.token })).body;
        return t.status === "failed" && t;
      });
      expect(txn.failure_reason).toMatch(/refunded/);
      expect(await p.db.selectFrom("chain_operations").select("status").where("key", "=", `mint:${id}`).executeTakeFirstOrThrow()).toEqual({ status: "failed" });

      // A class that cannot be created on-chain fails; its artwork's shares are not for sale.
      const res2 = await fractionalize(artist.token, { artwork_id: art.classFail, total_shares: 10, price_per_share_usd: 5 });
      expect([201, 202], res2.text).toContain(res2.status);
      await waitFor(async () => (await detail(art.classFail)).status === "failed", { timeoutMs: 20_000, what: "the class creation to fail" });
      expectProblem(await purchase(collector, art.classFail, 1), 409, "invalid_state");
    } finally {
      await setShareIssuer(relayer, true);
    }
    expect(await readShares<bigint>("totalSupply", [tokenId])).toBe(0n);
    expect(await readShares<boolean>("purchaseMinted", [keccak256(toBytes(id!))])).toBe(false);
    // Once the role is back: a failed class may be asked for again, and purchases mint.
    await activate(artist.token, art.classFail, 10, 5);
    const again = await purchase(collector, art.failing, 20);
    await settled(collector, again.body.purchase_id);
    expect(await readShares<bigint>("totalSupply", [tokenId])).toBe(20n);
  }, 60_000);

  it("every fractional endpoint that takes a token refuses anonymous callers (401) and tokens without its scope (403); bad bodies are 400 and store nothing", async () => {
    const endpoints: [string, string, unknown][] = [
      ["POST", "/v1/fractional/artworks", { artwork_id: art.race, total_shares: 10, price_per_share_usd: 1 }],
      ["POST", `/v1/fractional/${art.main}/purchase`, { shares_quantity: 1, payment_method_id: "pm_card_visa" }],
      ["GET", `/v1/fractional/purchases/${FAKE.purchase}`, undefined],
    ];
    const readOnly = await createUser(p.api, { role: "collector", scope: ["fractional:read"] });
    for (const [method, path, body] of endpoints) {
      expectProblem(await p.api.request(method, path, { body }), 401, "unauthenticated");
      expectProblem(await p.api.request(method, path, { token: reader.token, body }), 403, "insufficient_scope");
      if (method === "POST") expectProblem(await p.api.request(method, path, { token: readOnly.token, body }), 403, "insufficient_scope");
    }
    expectProblem(await purchaseOf(readOnly.token, FAKE.purchase), 404, "not_found");
    for (const path of ["/v1/fractional/artworks", `/v1/fractional/artworks/${art.main}`, `/v1/fractional/${art.main}/shares`]) {
      expect((await p.api.request("GET", path)).status, path).toBe(200);
    }

    const before = { purchases: await count("fractional_purchases"), transactions: await count("transactions"), available: (await detail(art.main)).shares_available };
    const send = (body: unknown) => p.api.request("POST", `/v1/fractional/${art.main}/purchase`, { token: collector2.token, body });
    for (const bad of [
      {},
      { shares_quantity: 1 },
      { payment_method_id: "pm_card_visa" },
      { shares_quantity: 0, payment_method_id: "pm_card_visa" },
      { shares_quantity: -1, payment_method_id: "pm_card_visa" },
      { shares_quantity: 1.5, payment_method_id: "pm_card_visa" },
      { shares_quantity: "1", payment_method_id: "pm_card_visa" },
      { shares_quantity: 1, payment_method_id: "" },
      { shares_quantity: 1, payment_method_id: 42 },
      { shares_quantity: 1, payment_method_id: "pm_card_visa", extra: true },
    ]) {
      expectProblem(await send(bad), 400, "validation_failed");
    }
    expectProblem(await p.api.request("POST", `/v1/fractional/${art.main}/purchase`, { token: collector2.token, rawBody: "{", headers: { "content-type": "application/json" } }), 400, "invalid_json");
    expectProblem(await purchase(collector2, art.main, 1_000), 409, "insufficient_shares");
    expectProblem(await purchase(collector2, FAKE.artwork, 1), 404, "not_found");
    expectProblem(await purchase(collector2, art.listed, 1), 404, "not_found");
    expect(await count("fractional_purchases")).toBe(before.purchases);
    expect(await count("transactions")).toBe(before.transactions);
    expect((await detail(art.main)).shares_available).toBe(before.available);
  });
});
