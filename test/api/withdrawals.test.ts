/**
 * Withdrawals on real pieces (Postgres, the Hardhat chain, Ponder, the API): a custodial user's
 * certificate goes to a wallet they linked with a real SIWE signature, signed by the custodial key
 * and relayed through ArtForwarder, once; `completed` when the indexer has the transfer. The user
 * keeps the owner's rights through the wallet and lists from it after its own approval.
 */
import { sql } from "kysely";
import { createWalletClient, getAddress, http, keccak256, parseEther, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import { TransientChainError } from "../../api/src/chain/errors.ts";
import { publicClient, useArtworkPlatform } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { certifiedArtwork, indexedCertificate, ownerOnChain, walletOf } from "../support/marketplace.ts";
import { holdCalls } from "../support/hold.ts";
import { signalled, waitFor } from "../support/wait.ts";
import { erc1271Wallet, linkedWallet, signedLink } from "../support/wallets.ts";
import { adminToken, createUser, expectProblem, type TestUser } from "../support/api.ts";
import { useReceiver } from "../support/webhooks.ts";

const p = useArtworkPlatform();
const receiver = useReceiver();

const withdraw = (token: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => p.api.request("POST", "/v1/withdrawals", { token, body: { asset: "certificate", ...body }, headers });
const completed = (token: string, id: string) =>
  waitFor(async () => {
    const got = await p.api.request("GET", `/v1/withdrawals/${id}`, { token });
    return got.body.status !== "pending" && got.body;
  }, { timeoutMs: 30_000, what: `withdrawal ${id}` });
const withdrawalsOf = (userId: string) => p.db.selectFrom("withdrawals").selectAll().where("user_id", "=", userId).execute();

describe("withdrawals", () => {
  let artist: TestUser;
  let other: TestUser;
  let admin: string;
  let wallet: ReturnType<typeof privateKeyToAccount>;
  let to: `0x${string}`;

  beforeAll(async () => {
    [artist, other, admin] = await Promise.all([createUser(p.api, { role: "artist" }), createUser(p.api, { role: "artist" }), adminToken(p.api)]);
    wallet = privateKeyToAccount(generatePrivateKey());
    to = await linkedWallet(p.api, artist.token, wallet);
  });

  it("moves a certificate to a linked wallet once; the owner alone hears of it, keeps the owner's rights and lists from the wallet after approving", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const { tokenId } = await indexedCertificate(p, artworkId);
    const custodial = await walletOf(p, artist.id);
    const hooks = { owner: receiver.endpoint(), other: receiver.endpoint() };
    for (const [user, url, events] of [[artist, hooks.owner, ["asset.withdrawn"]], [other, hooks.other, ["*"]]] as const) {
      expect((await p.api.request("POST", "/v1/webhooks", { token: user.token, body: { url, events } })).status).toBe(201);
    }

    const res = await withdraw(artist.token, { artwork_id: artworkId, to: wallet.address }, { "Idempotency-Key": `wdr-${artworkId}` });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ id: expect.stringMatching(/^wdr_/), status: "pending", asset: "certificate", artwork_id: artworkId, quantity: 1, to: wallet.address });
    // The same key answers the same withdrawal.
    const replayed = await withdraw(artist.token, { artwork_id: artworkId, to: wallet.address }, { "Idempotency-Key": `wdr-${artworkId}` });
    expect(replayed.body.id).toBe(res.body.id);

    const done = await completed(artist.token, res.body.id);
    expect(done).toMatchObject({ status: "completed", tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/), completed_at: expect.stringMatching(/Z$/) });
    expect(await ownerOnChain(tokenId)).toBe(to);
    const transfers = await p.views.selectFrom("certificate_transfer").selectAll().where("token_id", "=", tokenId).where("from", "=", custodial as `0x${string}`).execute();
    expect(transfers.map((t) => ({ to: t.to, tx_hash: t.tx_hash }))).toEqual([{ to, tx_hash: done.tx_hash }]);
    expect(await withdrawalsOf(artist.id)).toHaveLength(1);

    const [delivery] = await receiver.waitForRequests(hooks.owner, 1);
    expect(JSON.parse(delivery!.body)).toMatchObject({ event: "asset.withdrawn", withdrawal_id: res.body.id, artwork_id: artworkId, asset: "certificate", quantity: 1, to, tx_hash: done.tx_hash });
    const events = await p.db.selectFrom("outbox_events").select(["audience", "payload"]).where("event_type", "=", "asset.withdrawn").execute();
    expect(events.filter((e) => (e.payload as { withdrawal_id: string }).withdrawal_id === res.body.id).map((e) => e.audience)).toEqual([[artist.id]]);
    // The fan-out wrote every delivery of the event at once: none is the other user's.
    const otherSubscription = await p.db.selectFrom("webhook_subscriptions").select("id").where("user_id", "=", other.id).executeTakeFirstOrThrow();
    expect(await p.db.selectFrom("webhook_deliveries").select("id").where("subscription_id", "=", otherSubscription.id).execute()).toEqual([]);

    // The linked wallet holds it: the user keeps the owner's rights through it.
    expect((await p.api.request("PATCH", `/v1/artworks/${artworkId}`, { token: artist.token, body: { description: "Now in my own wallet." } })).status).toBe(200);
    expectProblem(await withdraw(artist.token, { artwork_id: artworkId, to: wallet.address }), 409, "invalid_state");

    // Listing from the wallet needs its own approval of the settlement contract, as for SIWE users.
    const listing = { artwork_id: artworkId, price_usd: 1200, accepts_offers: false };
    const unapproved = await p.api.request("POST", "/v1/marketplace/listings", { token: artist.token, body: listing });
    expectProblem(unapproved, 409, "invalid_state");
    expect(unapproved.body.detail).toContain(`setApprovalForAll(${testEnvironment().artMarketAddress}, true)`);
    await publicClient().request({ method: "hardhat_setBalance", params: [wallet.address, toHex(parseEther("1"))] } as never);
    const walletClient = createWalletClient({ account: wallet, transport: http(testEnvironment().rpcUrl) });
    const hash = await walletClient.writeContract({ chain: null, address: testEnvironment().artCertificateAddress, abi: artCertificateAbi, functionName: "setApprovalForAll", args: [testEnvironment().artMarketAddress, true] });
    expect((await publicClient().waitForTransactionReceipt({ hash })).status).toBe("success");
    const listed = await waitFor(async () => {
      const got = await p.api.request("POST", "/v1/marketplace/listings", { token: artist.token, body: listing });
      return got.status === 201 && got.body;
    }, { what: "the approval indexed and the listing made" });
    const row = await p.db.selectFrom("listings").select(["seller_id", "seller_wallet"]).where("id", "=", listed.listing_id).executeTakeFirstOrThrow();
    expect(row).toEqual({ seller_id: artist.id, seller_wallet: to });
  });

  it("a certificate withdrawn, deposited back and withdrawn again whose send went unrecorded is completed by its own transfer, never by the earlier one", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const { tokenId } = await indexedCertificate(p, artworkId);
    const custodial = await walletOf(p, artist.id);
    const holder = privateKeyToAccount(generatePrivateKey());
    const linked = await linkedWallet(p.api, artist.token, holder);
    const first = await withdraw(artist.token, { artwork_id: artworkId, to: linked });
    expect(first.status).toBe(202);
    const firstDone = await completed(artist.token, first.body.id);
    expect(firstDone.status).toBe("completed");
    // Deposited back: the linked wallet sends the certificate to the custodial one.
    await publicClient().request({ method: "hardhat_setBalance", params: [holder.address, toHex(parseEther("1"))] } as never);
    const holderClient = createWalletClient({ account: holder, transport: http(testEnvironment().rpcUrl) });
    const back = await holderClient.writeContract({ chain: null, address: testEnvironment().artCertificateAddress, abi: artCertificateAbi, functionName: "safeTransferFrom", args: [holder.address, getAddress(custodial), tokenId] });
    expect((await publicClient().waitForTransactionReceipt({ hash: back })).status).toBe("success");

    // The second withdrawal's send is held, as if its process died before the hash was recorded:
    // what the indexer shows of the same token between the same wallets is the first one's transfer.
    const service = p.api.server.platform.services.withdrawals;
    const sends = holdCalls(service.certificates as unknown as { send: (op: unknown) => Promise<void> }, "send", { which: (op) => (op as { key: string }).key !== `withdraw:${first.body.id}` });
    let second: { id: string };
    try {
      const asked = await waitFor(async () => {
        const got = await withdraw(artist.token, { artwork_id: artworkId, to: linked });
        return got.status === 202 && got;
      }, { timeoutMs: 30_000, what: "the deposit indexed and the second withdrawal asked for" });
      second = asked.body;
      await signalled(sends.reached(1), "the second withdrawal's send held");
      const op = await p.db.selectFrom("chain_operations").selectAll().where("key", "=", `withdraw:${second.id}`).executeTakeFirstOrThrow();
      expect(op.tx_hash).toBeNull();
      // The sweep's lookup and the cursor's read over every block so far find nothing of it.
      expect(await service.certificates.kind.lookupIndexed([op])).toEqual([]);
      const head = await publicClient().getBlockNumber({ cacheTime: 0 });
      expect((await service.certificates.kind.readIndexed(0n, head)).filter((f) => f.key === op.key)).toEqual([]);
    } finally {
      sends.restore();
    }
    const secondDone = await completed(artist.token, second.id);
    expect(secondDone).toMatchObject({ status: "completed", tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(secondDone.tx_hash).not.toBe(firstDone.tx_hash);
    expect(await ownerOnChain(tokenId)).toBe(linked);
  });

  it("refuses an unlinked address, another's certificate, a shares withdrawal without a quantity, and stores nothing", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const stranger = privateKeyToAccount(generatePrivateKey()).address;
    const unlinked = await withdraw(artist.token, { artwork_id: artworkId, to: stranger });
    expectProblem(unlinked, 400, "validation_failed");
    expect(unlinked.body.errors).toEqual([{ field: "to", code: "not_linked", message: expect.stringContaining("linked wallets") }]);

    // Another user, to a wallet of their own: the certificate is not theirs.
    const otherWallet = await linkedWallet(p.api, other.token, privateKeyToAccount(generatePrivateKey()));
    expectProblem(await withdraw(other.token, { artwork_id: artworkId, to: otherWallet }), 403, "forbidden");
    // Shares need a quantity; a certificate is one.
    expectProblem(await withdraw(artist.token, { artwork_id: artworkId, asset: "shares", to: wallet.address }), 400, "validation_failed");
    expectProblem(await withdraw(artist.token, { artwork_id: artworkId, quantity: 2, to: wallet.address }), 400, "validation_failed");
    expect((await p.db.selectFrom("withdrawals").selectAll().where("artwork_id", "=", artworkId).execute())).toEqual([]);
  });

  it("refuses a listed or fractionalized artwork with the reason (409)", async () => {
    const [listedId, fractionalId] = await Promise.all([certifiedArtwork(p, artist), certifiedArtwork(p, artist)]);
    expect((await p.api.request("POST", "/v1/marketplace/listings", { token: artist.token, body: { artwork_id: listedId, price_usd: 900, accepts_offers: true } })).status).toBe(201);
    const listed = await withdraw(artist.token, { artwork_id: listedId, to: wallet.address });
    expectProblem(listed, 409, "invalid_state");
    expect(listed.body.reason).toBe("listed");

    const fractionalized = await p.api.request("POST", "/v1/fractional/artworks", { token: artist.token, body: { artwork_id: fractionalId, total_shares: 100, price_per_share_usd: 5 } });
    expect([201, 202]).toContain(fractionalized.status);
    const shared = await withdraw(artist.token, { artwork_id: fractionalId, to: wallet.address });
    expectProblem(shared, 409, "invalid_state");
    expect(shared.body.reason).toBe("shares_issued");
    expect(await p.db.selectFrom("withdrawals").select("id").where("artwork_id", "in", [listedId, fractionalId]).execute()).toEqual([]);
  });

  it("moves a certificate once when two withdrawals race; the loser is told why", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const { tokenId } = await indexedCertificate(p, artworkId);
    const custodial = await walletOf(p, artist.id);
    const results = await Promise.all([1, 2, 3].map(() => withdraw(artist.token, { artwork_id: artworkId, to: wallet.address })));
    // A loser is refused under the lock (`withdrawing`), or, when the winner's transfer was done before it read the holder, as the holder already.
    const outcome = (r: (typeof results)[number]) => (r.status !== 409 ? `${r.status}` : r.body.reason === "withdrawing" || r.body.detail.includes("in your own wallet") ? "409 refused" : `409 ${r.body.detail}`);
    expect(results.map(outcome).sort()).toEqual(["202", "409 refused", "409 refused"]);
    const winner = results.find((r) => r.status === 202)!;
    expect((await completed(artist.token, winner.body.id)).status).toBe("completed");
    expect(await ownerOnChain(tokenId)).toBe(to);
    expect(await p.db.selectFrom("chain_operations").select("key").where("kind", "=", "withdrawal").where(sql`payload->>'token_id'`, "=", tokenId.toString()).execute()).toHaveLength(1);
    expect(await p.views.selectFrom("certificate_transfer").select("id").where("token_id", "=", tokenId).where("from", "=", custodial as `0x${string}`).execute()).toHaveLength(1);
  });

  it("fails a withdrawal the chain refuses (a contract wallet that takes no ERC-721), and the certificate stays", async () => {
    // An ERC-1271 wallet linked by its owner's signature; it has no onERC721Received, so safeTransferFrom reverts.
    const owner = privateKeyToAccount(generatePrivateKey());
    const contractWallet = await erc1271Wallet(owner);
    expect((await p.api.request("POST", "/v1/users/me/wallets", { token: artist.token, body: await signedLink(p.api, owner, contractWallet) })).status).toBe(201);

    const artworkId = await certifiedArtwork(p, artist);
    const { tokenId } = await indexedCertificate(p, artworkId);
    const made = await withdraw(artist.token, { artwork_id: artworkId, to: contractWallet });
    expect(made.status).toBe(202);
    const failed = await completed(artist.token, made.body.id);
    expect(failed).toMatchObject({ status: "failed", failure_reason: expect.stringContaining("ERC721InvalidReceiver") });
    expect(await ownerOnChain(tokenId)).toBe(await walletOf(p, artist.id));
    // Nothing hangs off the artwork any more: it may be withdrawn again (to a wallet that takes it).
    const again = await withdraw(artist.token, { artwork_id: artworkId, to: wallet.address });
    expect(again.status).toBe(202);
    expect((await completed(artist.token, again.body.id)).status).toBe("completed");
  });

  it("shows a withdrawal to its user and admins only", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const made = await withdraw(artist.token, { artwork_id: artworkId, to: wallet.address });
    expect(made.status).toBe(202);
    const path = `/v1/withdrawals/${made.body.id}`;
    expect((await p.api.request("GET", path, { token: artist.token })).body.id).toBe(made.body.id);
    expect((await p.api.request("GET", path, { token: admin })).status).toBe(200);
    expectProblem(await p.api.request("GET", path, { token: other.token }), 404, "not_found");
    expectProblem(await p.api.request("GET", path), 401, "unauthenticated");
    const reader = await createUser(p.api, { scope: ["users:read"] });
    expectProblem(await p.api.request("GET", path, { token: reader.token }), 403, "insufficient_scope");
    expectProblem(await p.api.request("POST", "/v1/withdrawals", { token: reader.token, body: { artwork_id: artworkId, asset: "certificate", to: wallet.address } }), 403, "insufficient_scope");

    const mine = await p.api.request("GET", "/v1/withdrawals", { token: artist.token });
    expect(mine.body.data.map((w: { id: string }) => w.id)).toContain(made.body.id);
    expect((await p.api.request("GET", "/v1/withdrawals", { token: other.token })).body.data).toEqual([]);
    await completed(artist.token, made.body.id);
  });
  it("moves shares to a linked wallet in a transaction the custodial wallet signs, once each, never more than it holds; the user stays their shareholder", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const { tokenId } = await indexedCertificate(p, artworkId);
    const created = await p.api.request("POST", "/v1/fractional/artworks", { token: artist.token, body: { artwork_id: artworkId, total_shares: 100, price_per_share_usd: 5 } });
    expect([201, 202]).toContain(created.status);
    await waitFor(async () => (await p.api.request("GET", `/v1/fractional/artworks/${artworkId}`)).body.status === "active", { timeoutMs: 30_000, what: "the share class" });
    const bought = await p.api.request("POST", `/v1/fractional/${artworkId}/purchase`, { token: other.token, body: { shares_quantity: 10, payment_method_id: "pm_card_visa" } });
    expect([201, 202]).toContain(bought.status);
    await waitFor(async () => (await p.api.request("GET", `/v1/fractional/purchases/${bought.body.purchase_id}`, { token: other.token })).body.status === "confirmed", { timeoutMs: 30_000, what: "the shares minted" });
    const custodial = (await walletOf(p, other.id)) as `0x${string}`;
    const linked = await linkedWallet(p.api, other.token, privateKeyToAccount(generatePrivateKey()));
    const shares = (holder: string) => publicClient().readContract({ address: testEnvironment().artSharesAddress, abi: artSharesAbi, functionName: "balanceOf", args: [holder as `0x${string}`, tokenId] });
    const withdrawShares = (quantity: number) => withdraw(other.token, { asset: "shares", artwork_id: artworkId, quantity, to: linked });

    const tooMany = await withdrawShares(11);
    expectProblem(tooMany, 409, "invalid_state");
    expect(tooMany.body.reason).toBe("insufficient_balance");
    // Two withdrawals of 6 at once: one fits.
    const racing = await Promise.all([withdrawShares(6), withdrawShares(6)]);
    expect(racing.map((r) => r.status).sort()).toEqual([202, 409]);
    const first = racing.find((r) => r.status === 202)!.body;
    expect(first).toMatchObject({ asset: "shares", artwork_id: artworkId, quantity: 6, amount: null, to: getAddress(linked), status: "pending" });
    // The rest, asked for at once: it waits for the first's transaction, then takes the wallet's next
    // nonce. Its first wait for the receipt is lost, as in a crash after the send: the next attempt
    // sends the same signed transaction, and the shares move once.
    const { relayer } = p.api.server.platform;
    const waitForReceipt = relayer.waitForReceipt.bind(relayer);
    let lost = 0;
    relayer.waitForReceipt = async (hash, options) => {
      if (lost === 0 && options?.label?.startsWith("withdraw:") && options.label !== `withdraw:${first.id}`) {
        lost++;
        throw new TransientChainError("timeout", `lost the receipt of ${hash}`, { hash, label: options.label });
      }
      return waitForReceipt(hash, options);
    };
    let done: Record<string, unknown>;
    let restDone: Record<string, unknown>;
    let rest: Awaited<ReturnType<typeof withdrawShares>>;
    try {
      rest = await withdrawShares(4);
      expect(rest.status, rest.text).toBe(202);
      [done, restDone] = [await completed(other.token, first.id), await completed(other.token, rest.body.id)];
    } finally {
      relayer.waitForReceipt = waitForReceipt;
    }
    expect(lost).toBe(1);
    const restOp = await p.db.selectFrom("chain_operations").select(["attempts", "tx_hash"]).where("key", "=", `withdraw:${rest.body.id}`).executeTakeFirstOrThrow();
    expect(restOp.attempts).toBeGreaterThanOrEqual(2);
    const moved = await p.views.selectFrom("share_transfer").select(["tx_hash", "amount"]).where("from", "=", custodial).where("to", "=", linked).execute();
    expect(moved.map((t) => t.amount).sort()).toEqual([4n, 6n]);
    expect([done.status, restDone.status]).toEqual(["completed", "completed"]);
    expect(done.tx_hash).not.toBe(restDone.tx_hash);
    expect(await shares(linked)).toBe(10n);
    expect(await shares(custodial)).toBe(0n);
    // Each sent by the custodial wallet itself, with consecutive nonces.
    const txs = await Promise.all([done.tx_hash, restDone.tx_hash].map((hash) => publicClient().getTransaction({ hash: hash as `0x${string}` })));
    expect(txs.map((t) => t.from.toLowerCase())).toEqual([custodial, custodial]);
    expect(txs[1]!.nonce).toBe(txs[0]!.nonce + 1);
    expect(await p.db.selectFrom("chain_operations").select("key").where("kind", "=", "withdrawal_shares").where(sql`payload->>'withdrawal_id'`, "in", [first.id, rest!.body.id]).execute()).toHaveLength(2);
    const events = await p.db.selectFrom("outbox_events").select(["audience", "payload"]).where("event_type", "=", "asset.withdrawn").execute();
    expect(events.filter((e) => (e.payload as { withdrawal_id: string }).withdrawal_id === first.id)).toEqual([{ audience: [other.id], payload: expect.objectContaining({ asset: "shares", quantity: 6, tx_hash: done.tx_hash }) }]);
    // Nothing more to withdraw; the linked wallet's shares are still the user's.
    expect((await withdrawShares(1)).body.reason).toBe("insufficient_balance");
    const holders = await waitFor(async () => {
      const got = (await p.api.request("GET", `/v1/fractional/${artworkId}/shares`)).body;
      const rows = (got.shareholders ?? got.data) as { wallet?: string; user_id: string | null; shares?: number }[];
      return rows.some((h) => h.wallet?.toLowerCase() === linked) && rows;
    }, { timeoutMs: 30_000, what: "the linked wallet among the shareholders" });
    expect(holders.filter((h) => h.wallet?.toLowerCase() === linked).map((h) => h.user_id)).toEqual([other.id]);
    // Private: the artist does not see them; anonymous callers are refused.
    expectProblem(await p.api.request("GET", `/v1/withdrawals/${first.id}`, { token: artist.token }), 404, "not_found");
    expectProblem(await p.api.request("POST", "/v1/withdrawals", { body: { asset: "shares", artwork_id: artworkId, quantity: 1, to: linked } }), 401, "unauthenticated");
  }, 120_000);
  it("two attempts of one shares withdrawal at once (a lease that ran out) send one transaction, signed once", async () => {
    const artworkId = await certifiedArtwork(p, artist);
    const created = await p.api.request("POST", "/v1/fractional/artworks", { token: artist.token, body: { artwork_id: artworkId, total_shares: 50, price_per_share_usd: 2 } });
    expect([201, 202]).toContain(created.status);
    await waitFor(async () => (await p.api.request("GET", `/v1/fractional/artworks/${artworkId}`)).body.status === "active", { timeoutMs: 30_000, what: "the share class" });
    const holder = await createUser(p.api);
    const bought = await p.api.request("POST", `/v1/fractional/${artworkId}/purchase`, { token: holder.token, body: { shares_quantity: 5, payment_method_id: "pm_card_visa" } });
    expect([201, 202]).toContain(bought.status);
    await waitFor(async () => (await p.api.request("GET", `/v1/fractional/purchases/${bought.body.purchase_id}`, { token: holder.token })).body.status === "confirmed", { timeoutMs: 30_000, what: "the shares minted" });
    const custodial = (await walletOf(p, holder.id)) as `0x${string}`;
    const linked = await linkedWallet(p.api, holder.token, privateKeyToAccount(generatePrivateKey()));
    const nonceBefore = await publicClient().getTransactionCount({ address: custodial, blockTag: "latest" });

    // The worker's attempt is held at its start; two more attempts of the same operation run at once
    // meanwhile, forced into the interleaving that could sign twice: both find the withdrawal not yet
    // signed, and the second signs only once the first has signed and sent its transaction (mined at once).
    const service = p.api.server.platform.services.withdrawals;
    const kind = service.shares.kind;
    const send = kind.send.bind(kind);
    const worker = holdCalls(kind, "send", { keyOf: (op) => (op as { key: string }).key });
    const signing = service.shares.sender;
    const sign = signing.signOnce.bind(signing);
    let firstSent!: () => void;
    const sentOnce = new Promise<void>((resolve) => (firstSent = resolve));
    let bothArrived!: () => void;
    const arrivedTogether = new Promise<void>((resolve) => (bothArrived = resolve));
    let arrived = 0;
    Object.defineProperty(signing, "signOnce", {
      configurable: true,
      writable: true,
      value: async (...args: Parameters<typeof sign>) => {
        const mine = ++arrived;
        if (arrived === 2) bothArrived();
        await arrivedTogether;
        if (mine === 2) await sentOnce;
        return sign(...args);
      },
    });
    let withdrawal: Record<string, unknown>;
    const sent: string[] = [];
    try {
      const asked = await withdraw(holder.token, { asset: "shares", artwork_id: artworkId, quantity: 3, to: linked });
      expect(asked.status, asked.text).toBe(202);
      withdrawal = asked.body;
      await signalled(worker.reached(1), "the worker's attempt held");
      const op = await p.db.selectFrom("chain_operations").selectAll().where("key", "=", `withdraw:${String(withdrawal.id)}`).executeTakeFirstOrThrow();
      const ctx = {
        started: undefined,
        recordSent: async (_keys: readonly string[], hash: string) => {
          sent.push(hash);
          firstSent();
        },
      };
      await signalled(Promise.all([send(op, ctx), send(op, ctx)]), "both attempts settled", 60_000);
      expect(arrived).toBe(2);
    } finally {
      delete (signing as { signOnce?: unknown }).signOnce;
      worker.restore();
    }
    const done = await completed(holder.token, String(withdrawal!.id));
    expect(done.status).toBe("completed");
    // Both attempts sent the one transaction the withdrawal keeps; the worker's, released, too.
    expect(new Set(sent)).toEqual(new Set([done.tx_hash]));
    expect(sent).toHaveLength(2);
    expect(await publicClient().getTransactionCount({ address: custodial, blockTag: "latest" })).toBe(nonceBefore + 1);
    const moved = await p.views.selectFrom("share_transfer").select("amount").where("from", "=", custodial).where("to", "=", linked).execute();
    expect(moved.map((t) => t.amount)).toEqual([3n]);
    // The withdrawal keeps that transaction, signed with the wallet's nonce: its hash is the one answered.
    const row = await p.db.selectFrom("withdrawals").select(["sender_nonce", "signed_tx"]).where("id", "=", String(withdrawal!.id)).executeTakeFirstOrThrow();
    expect({ sender_nonce: row.sender_nonce, tx_hash: keccak256(row.signed_tx as `0x${string}`) }).toEqual({ sender_nonce: nonceBefore, tx_hash: done.tx_hash });
  }, 120_000);
});
