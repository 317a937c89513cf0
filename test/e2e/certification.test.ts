/**
 * The certification pipeline end to end on real pieces: Postgres, the Hardhat chain, Ponder, the
 * API over HTTP, and the verification page in a real headless Chromium. The API reaches the chain
 * through a proxy this file can cut, to show RPC outages being retried.
 */
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { sql } from "kysely";
import type { BrowserContext } from "playwright-core";
import { keccak256, stringToBytes } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { privateKeyToAccount } from "viem/accounts";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { ADMIN_VERIFY_WAIT_MS } from "../../api/src/modules/artworks/artworks.service.ts";
import { certifyOperationOf, pngImage, publicClient, startImageServer, tokenIdOfArtwork, transactionCount, useArtworkPlatform } from "../support/artworks.ts";
import { launchChromiumContext } from "../support/browser.ts";
import { testEnvironment } from "../support/environment.ts";
import { adminSdk, artworkForm, artworkJson, createSdkUser, expectApiError, sdk, type SdkUser } from "../support/sdk.ts";
import { waitFor } from "../support/wait.ts";

const env = testEnvironment();

/**
 * JSON-RPC proxy in front of the chain: `up = false` answers 503, as a node behind a failing load
 * balancer; while `held` is a list, each request waits in it until the test releases it.
 */
const rpcProxy = { up: true, url: "", server: null as Server | null, held: null as (() => void)[] | null };
beforeAll(async () => {
  rpcProxy.server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (rpcProxy.held) await new Promise<void>((release) => rpcProxy.held!.push(release));
    if (!rpcProxy.up) {
      res.writeHead(503).end("upstream unavailable");
      return;
    }
    const upstream = await fetch(env.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: Buffer.concat(chunks) });
    res.writeHead(upstream.status, { "content-type": "application/json" }).end(Buffer.from(await upstream.arrayBuffer()));
  });
  await new Promise<void>((resolve) => rpcProxy.server!.listen(0, "127.0.0.1", resolve));
  rpcProxy.url = `http://127.0.0.1:${(rpcProxy.server!.address() as { port: number }).port}`;
});
afterAll(async () => {
  rpcProxy.server?.closeAllConnections();
  await new Promise((resolve) => rpcProxy.server?.close(resolve));
});

const p = useArtworkPlatform(() => ({ CHAIN_RPC_URL: rpcProxy.url }));

let browser: BrowserContext;
let images: Awaited<ReturnType<typeof startImageServer>>;
beforeAll(async () => {
  images = await startImageServer();
  browser = await launchChromiumContext({ userDataDir: mkdtempSync(path.join(env.tempDir, "chromium-")) });
});
afterAll(async () => {
  await browser?.close();
  await images?.close();
});

/** The API as anyone reads it (public endpoints, no credentials). */
const anonymous = () => sdk(p.api.url);

async function waitCertified(id: string, timeoutMs = 20_000) {
  return waitFor(
    async () => {
      const { data } = await anonymous().GET("/v1/artworks/{id}", { params: { path: { id } } });
      return data.status === "certified" ? data : null;
    },
    { timeoutMs, what: `certification of ${id}` },
  );
}

async function certifiedEvents(artworkId: string) {
  return p.db
    .selectFrom("outbox_events")
    .selectAll()
    .where("event_type", "=", "artwork.certified")
    .where(sql`payload->>'artwork_id'`, "=", artworkId)
    .execute();
}

/** The verification page as Chromium renders it. */
async function openVerifyPage(artworkId: string) {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  const response = await page.goto(`${p.api.url}/verify/${artworkId}`);
  const text = async (selector: string) => (await page.locator(selector).textContent())?.trim() ?? null;
  return {
    page,
    status: response?.status(),
    verdict: await page.locator("#verdict").getAttribute("data-verdict"),
    headline: await text("#verdict strong"),
    onChainHash: (await page.locator("#onchain-hash").count()) ? await text("#onchain-hash") : null,
    recomputedHash: (await page.locator("#recomputed-hash").count()) ? await text("#recomputed-hash") : null,
    tokenId: (await page.locator("#token-id").count()) ? await text("#token-id") : null,
    owner: (await page.locator("#owner").count()) ? await text("#owner") : null,
    errors,
  };
}

describe("certification end to end", () => {
  let artist: SdkUser;
  beforeAll(async () => {
    artist = await createSdkUser(p.api.url, { role: "artist" });
  });

  it("create -> certified on-chain -> certificate -> outbox event -> verify page says match; a tampered record says mismatch", async () => {
    images.respond((_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(pngImage()));
    const { data: created, response } = await artist.api.POST("/v1/artworks", { body: artworkJson({ image_url: images.url("/e2e.png") }) });
    expect(response.status).toBe(201);
    const id = created.id;
    const detail = await waitCertified(id);

    // The chain has exactly one token for it, owned by the artist's wallet.
    const tokenId = await tokenIdOfArtwork(id);
    expect(tokenId).toBe(BigInt(detail.token_id!));
    const wallet = (await p.db.selectFrom("users").select("wallet_address").where("id", "=", artist.id).executeTakeFirstOrThrow()).wallet_address.toLowerCase();
    const { data: certificate, response: certificateResponse } = await anonymous().GET("/v1/artworks/{id}/certificate", { params: { path: { id } } });
    expect(certificateResponse.status).toBe(200);
    expect(certificate).toMatchObject({
      artwork_id: id,
      certificate_hash: detail.certificate_hash,
      chain: "hardhat-local",
      chain_id: 31337,
      contract_address: env.artCertificateAddress.toLowerCase(),
      token_id: Number(tokenId),
      verified: true,
      issuer: "Art Platform",
      owner: wallet,
    });

    // One event, in the transaction that certified it, with the reference's fields and the chain's.
    const events = await certifiedEvents(id);
    expect(events).toHaveLength(1);
    expect(events[0]!.payload).toEqual({
      artwork_id: id,
      certificate_hash: detail.certificate_hash,
      certified_at: detail.certified_at,
      token_id: Number(tokenId),
      contract_address: env.artCertificateAddress.toLowerCase(),
      chain_id: 31337,
      tx_hash: certificate.tx_hash,
    });
    expect(events[0]!.audience).toEqual([artist.id]); // only the artist's webhook subscriptions (and admins' all-users ones) get it
    await waitFor(async () => (await p.db.selectFrom("outbox_events").select("dispatched_at").where("id", "=", events[0]!.id).executeTakeFirstOrThrow()).dispatched_at, {
      what: "the event's dispatch",
    });

    const good = await openVerifyPage(id);
    expect(good.status).toBe(200);
    expect(good.verdict).toBe("match");
    expect(good.headline).toMatch(/^Match/);
    expect(good.onChainHash).toBe(detail.certificate_hash);
    expect(good.recomputedHash).toBe(detail.certificate_hash);
    expect(good.tokenId).toBe(String(tokenId));
    expect(good.owner).toBe(wallet);
    expect(good.errors).toEqual([]);
    await good.page.screenshot({ path: path.join(env.tempDir, "verify-match.png"), fullPage: true });
    await good.page.close();

    // Someone edits the stored record behind the API's back: the document no longer hashes to the chain's.
    await p.db.updateTable("artworks").set({ title: "A forged title" }).where("id", "=", id).execute();
    const tampered = await openVerifyPage(id);
    expect(tampered.verdict).toBe("mismatch");
    expect(tampered.headline).toMatch(/^Mismatch/);
    expect(tampered.onChainHash).toBe(detail.certificate_hash);
    expect(tampered.recomputedHash).not.toBe(detail.certificate_hash);
    await tampered.page.screenshot({ path: path.join(env.tempDir, "verify-mismatch.png"), fullPage: true });
    await tampered.page.close();
    expect((await anonymous().GET("/v1/artworks/{id}/certificate", { params: { path: { id } } })).data.verified).toBe(false);
    const { data: document } = await anonymous().GET("/v1/artworks/{id}/certificate/document", { params: { path: { id } }, parseAs: "text" });
    expect(keccak256(stringToBytes(document))).not.toBe(detail.certificate_hash);
  });

  it("escapes everything on the page: a title with markup is shown as text and runs nothing", async () => {
    const title = `<img src=x onerror="document.title='pwned'"><script>window.__pwned = 1</script>"'&`;
    const { data: created, response } = await artist.api.POST("/v1/artworks", { body: artworkForm({ title }) });
    expect(response.status).toBe(201);
    await waitCertified(created.id);
    const view = await openVerifyPage(created.id);
    expect(view.verdict).toBe("match");
    expect(await view.page.locator("h1").textContent()).toBe(`Certificate of ${title}`);
    expect(await view.page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await view.page.title()).toBe(`Certificate of ${title}`);
    expect(await view.page.locator("script").count()).toBe(0);
    expect(await view.page.locator("img[src=x]").count()).toBe(0);
    await view.page.close();
  });

  it("shows 'not certified' for a pending artwork and 404 for an unknown one", async () => {
    images.respond((_req, res) => res.writeHead(503).end());
    const { data: pending } = await artist.api.POST("/v1/artworks", { body: artworkJson({ image_url: images.url("/later.png") }) });
    const view = await openVerifyPage(pending.id);
    expect(view.status).toBe(200);
    expect(view.verdict).toBe("not_certified");
    await view.page.close();
    const unknown = await openVerifyPage("art_01JD3Y5V0Q3G7W7J6T4N4C2X1M");
    expect(unknown.status).toBe(404);
    expect(unknown.verdict).toBe("unknown");
    await unknown.page.close();
    await artist.api.DELETE("/v1/artworks/{id}", { params: { path: { id: pending.id } } });
  });

  it("mints one token when three attempts of the same artwork's operation run at once", async () => {
    const relayer = privateKeyToAccount(p.relayerKey).address;
    const attemptsOf = async (id: string) => (await certifyOperationOf(p.db, id))!.attempts;
    const nonceBefore = await transactionCount(relayer);
    const fromBlock = await publicClient().getBlockNumber();
    // The API's chain requests wait at the proxy: no attempt gets past the chain until all three have started.
    rpcProxy.held = [];
    let id: string;
    let extra: Promise<void>[] = [];
    try {
      const { data: created, response } = await artist.api.POST("/v1/artworks", { body: artworkForm() });
      expect(response.status).toBe(201);
      id = created.id;
      // The worker's claim makes one attempt; two more of the same operation run beside it, as a
      // second worker whose lease of it looked lost would (`run` attempts whether due or not).
      await waitFor(async () => ((await attemptsOf(id)) === 1 ? true : null), { what: "the worker's attempt" });
      const operations = p.api.server.platform.chainOperations;
      extra = [operations.run(`certify:${id}`), operations.run(`certify:${id}`)];
      // The barrier: each attempt is counted on the operation before its first chain request, so three
      // counted while the chain is held means three attempts under way at once.
      await waitFor(async () => ((await attemptsOf(id)) === 3 ? true : null), { what: "three attempts under way at once" });
      expect(await transactionCount(relayer)).toBe(nonceBefore);
    } finally {
      const held = rpcProxy.held;
      rpcProxy.held = null;
      for (const release of held) release();
    }

    await Promise.all(extra);
    await waitCertified(id);
    expect(await certifyOperationOf(p.db, id)).toMatchObject({ status: "confirmed", attempts: 3, last_error: null }); // none failed and retried
    // The chain holds one token and one ArtworkCertified event for it, minted by this relayer. How many
    // transactions carried it is not fixed: the first attempt's certify leaves at once, and each other
    // one either rides a later certifyBatch (the contract skips an artwork already certified) or is
    // refused in simulation (AlreadyCertified) and never sent, depending on whether the first was mined.
    const tokenId = await tokenIdOfArtwork(id);
    expect(tokenId).toBeGreaterThan(0n);
    const minted = await publicClient().getContractEvents({
      address: env.artCertificateAddress,
      abi: artCertificateAbi,
      eventName: "ArtworkCertified",
      args: { artworkKey: keccak256(stringToBytes(id)) },
      fromBlock,
    });
    expect(minted.map((e) => e.args.tokenId)).toEqual([tokenId]);
    expect((await publicClient().getTransaction({ hash: minted[0]!.transactionHash })).from.toLowerCase()).toBe(relayer.toLowerCase());
    const sent = (await transactionCount(relayer)) - nonceBefore;
    expect(sent).toBeGreaterThanOrEqual(1);
    expect(sent).toBeLessThanOrEqual(3);
    expect(await p.views.selectFrom("certificate").select("token_id").where("artwork_id", "=", id).execute()).toEqual([{ token_id: tokenId }]);
    expect(await certifiedEvents(id)).toHaveLength(1);
    expect(await p.db.selectFrom("artwork_provenance").select("id").where("artwork_id", "=", id).where("event", "=", "certified").execute()).toHaveLength(1);
  });

  it("retries RPC failures with backoff; an admin verify during the outage answers 202; certified once the chain is back", async () => {
    rpcProxy.up = false;
    try {
      const { data: created, response } = await artist.api.POST("/v1/artworks", { body: artworkForm() });
      expect(response.status).toBe(201);
      const id = created.id;
      // The chain operation counts the attempts and keeps the last error; the artwork stays pending, with no failure reason.
      const retried = await waitFor(
        async () => {
          const op = (await certifyOperationOf(p.db, id))!;
          return op.attempts >= 2 && op.last_error !== null ? op : null;
        },
        { timeoutMs: 15_000, what: "two failed attempts" },
      );
      expect(retried.last_error).toMatch(/HTTP request failed|503|unavailable/i);
      expect(await p.db.selectFrom("artworks").select(["status", "certification_error"]).where("id", "=", id).executeTakeFirstOrThrow()).toEqual({
        status: "pending_certification",
        certification_error: null,
      });

      const admin = adminSdk(p.api.url);
      const adminId = (await admin.GET("/v1/users/me")).data.id;
      const started = Date.now();
      const { data: verified, response: verify } = await admin.POST("/v1/admin/artworks/{id}/verify", { params: { path: { id } }, body: { override_reason: "Chain outage; inspected" } });
      expect(Date.now() - started).toBeGreaterThanOrEqual(ADMIN_VERIFY_WAIT_MS); // it waited the whole window for the chain
      expect(verify.status).toBe(202);
      expect(verified).toEqual({ artwork_id: id, status: "pending_certification", certificate_hash: null, certified_at: null, certified_by: adminId });

      rpcProxy.up = true;
      const detail = await waitCertified(id, 30_000);
      expect(detail.certificate_hash).toMatch(/^0x[0-9a-f]{64}$/);
      const row = await p.db.selectFrom("artworks").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: "certified", certified_by: adminId });
      expect(await certifiedEvents(id)).toHaveLength(1);
    } finally {
      rpcProxy.up = true;
    }
  }, 60_000);

  it("refuses the admin verify of an already certified artwork", async () => {
    const { data: created } = await artist.api.POST("/v1/artworks", { body: artworkForm() });
    await waitCertified(created.id);
    await expectApiError(adminSdk(p.api.url).POST("/v1/admin/artworks/{id}/verify", { params: { path: { id: created.id } }, body: { override_reason: "x" } }), 409, "invalid_state");
  });
});
