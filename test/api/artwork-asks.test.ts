/**
 * An artwork's `for_sale` and `price_usd` are its holder's ask (docs/decisions.md#for-sale), on the
 * real pieces: Postgres, the Hardhat chain with the contracts, Ponder, the sandbox processor and the
 * API over HTTP. The ask is made by the holder (upload, PATCH, a listing), ended by them (PATCH, a
 * delisting), by a move of the certificate out of the wallet that asked, and by fractionalizing.
 * The races of the ask against the other moves: test/api/ownership-races.test.ts (ask_A, ask_B).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { useArtworkPlatform } from "../support/artworks.ts";
import { certifiedArtwork, indexedCertificate, walletOf } from "../support/marketplace.ts";
import { waitFor } from "../support/wait.ts";
import { adminToken, createUser, expectProblem, startTestApi, type TestUser } from "../support/api.ts";

const p = useArtworkPlatform();

describe("the holder's ask (for_sale, price_usd)", () => {
  let artist: TestUser;
  let collector: TestUser;
  let stranger: TestUser;
  let admin: string;

  const detail = async (id: string) => {
    const res = await p.api.request("GET", `/v1/artworks/${id}`);
    expect(res.status, res.text).toBe(200);
    return res.body as { for_sale: boolean; price_usd: number | null; provenance: { event: string; price_usd?: number; listing_id?: string }[] };
  };
  const ask = (token: string | undefined, id: string, body: Record<string, unknown>) => p.api.request("PATCH", `/v1/artworks/${id}`, { token, body });
  const list = async (owner: TestUser, artworkId: string, price: number) => {
    const res = await p.api.request("POST", "/v1/marketplace/listings", { token: owner.token, body: { artwork_id: artworkId, price_usd: price, accepts_offers: false } });
    expect(res.status, res.text).toBe(201);
    return res.body.listing_id as string;
  };
  const offered = async (artistId: string) =>
    ((await p.api.request("GET", `/v1/artworks?for_sale=true&artist_id=${artistId}&limit=100`)).body.data as { id: string; price_usd: number }[]).map((a) => a.id);
  const events = (d: Awaited<ReturnType<typeof detail>>) => d.provenance.map((e) => e.event);

  beforeAll(async () => {
    [artist, collector, stranger, admin] = await Promise.all([
      createUser(p.api, { role: "artist", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      adminToken(p.api),
    ]);
  }, 60_000);

  it("an upload's ask is `for_sale` in the provenance, a listing's is `listed`, once each; a sale ends the seller's ask", async () => {
    const id = await certifiedArtwork(p, artist, { for_sale: true, price_usd: 50 });
    const uploaded = await detail(id);
    expect(uploaded).toMatchObject({ for_sale: true, price_usd: 50 });
    expect(events(uploaded)).toEqual(["created", "for_sale", "certified"]);
    expect(uploaded.provenance[1]).toMatchObject({ event: "for_sale", price_usd: 50 });

    // The listing is the ask: its price is the artwork's, and the ask cannot change beside it.
    const listingId = await list(artist, id, 100);
    const listed = await detail(id);
    expect(listed).toMatchObject({ for_sale: true, price_usd: 100 });
    expect(events(listed).filter((e) => e === "listed")).toEqual(["listed"]);
    expect(listed.provenance.find((e) => e.event === "listed")).toMatchObject({ listing_id: listingId, price_usd: 100 });
    const beside = await ask(artist.token, id, { price_usd: 80 });
    expectProblem(beside, 409, "invalid_state");
    expect(beside.body.reason).toBe("listed");
    expect((await detail(id)).price_usd).toBe(100);
    // The description is not the ask: it changes while listed.
    expect((await ask(artist.token, id, { description: "Still listed." })).status).toBe(200);

    const bought = await p.api.request("POST", `/v1/marketplace/listings/${listingId}/purchase`, { token: collector.token, body: { payment_method_id: "pm_card_visa" } });
    expect([201, 202], bought.text).toContain(bought.status);
    const collectorWallet = await walletOf(p, collector.id);
    await waitFor(async () => (await indexedCertificate(p, id)).owner === collectorWallet, { what: "the sale's transfer indexed" });
    // The move ends the seller's ask as the indexer shows it: no longer for sale, no stale price.
    await waitFor(async () => { const d = await detail(id); return !d.for_sale && d.price_usd === null; }, { what: "the seller's ask ended by the sale" });
    expect(await offered(artist.id)).not.toContain(id);
    expect(events(await detail(id)).filter((e) => e === "listed")).toEqual(["listed"]);

    // The new holder asks; the seller may not, nor a stranger; anonymous is 401; an admin may.
    expect((await ask(artist.token, id, { for_sale: true, price_usd: 60 })).status).toBe(403);
    expect((await ask(stranger.token, id, { for_sale: true, price_usd: 60 })).status).toBe(403);
    expectProblem(await ask(undefined, id, { for_sale: true, price_usd: 60 }), 401, "unauthenticated");
    const mine = await ask(collector.token, id, { for_sale: true, price_usd: 150 });
    expect(mine.status, mine.text).toBe(200);
    expect(mine.body).toMatchObject({ price_usd: 150, for_sale: true });
    expect((await ask(admin, id, { price_usd: 140 })).status).toBe(200);
    expect(await detail(id)).toMatchObject({ for_sale: true, price_usd: 140 });

    // The sale's move applied again after the new holder's ask (a process reading the chain from
    // its start, as a new one does): the ask is the new holder's wallet's, and stands.
    await p.db.updateTable("chain_cursors").set({ block_number: 0n }).where("consumer", "=", "artworks_asks").execute();
    const { tokenId } = await indexedCertificate(p, id);
    const sale = await p.views.selectFrom("certificate_transfer").select("block_number").where("token_id", "=", tokenId).orderBy("block_number", "desc").limit(1).executeTakeFirstOrThrow();
    const second = await startTestApi(p.env);
    try {
      await waitFor(async () => {
        const c = await p.db.selectFrom("chain_cursors").select("block_number").where("consumer", "=", "artworks_asks").executeTakeFirstOrThrow();
        return BigInt(c.block_number) >= BigInt(sale.block_number);
      }, { what: "the asks' projection replayed past the sale" });
    } finally {
      await second.close();
    }
    expect(await detail(id)).toMatchObject({ for_sale: true, price_usd: 140 });
  });

  it("cancelling the listing ends the ask and keeps its price; PATCH for_sale false ends one too", async () => {
    const id = await certifiedArtwork(p, artist);
    const listingId = await list(artist, id, 75);
    expect(await offered(artist.id)).toContain(id);
    expect((await p.api.request("DELETE", `/v1/marketplace/listings/${listingId}`, { token: artist.token })).status).toBe(200);
    const delisted = await detail(id);
    expect(delisted).toMatchObject({ for_sale: false, price_usd: 75 });
    expect(await offered(artist.id)).not.toContain(id);

    expect((await ask(artist.token, id, { for_sale: true })).status).toBe(200);
    expect((await detail(id)).for_sale).toBe(true);
    const off = await ask(artist.token, id, { for_sale: false });
    expect(off.status, off.text).toBe(200);
    const d = await detail(id);
    expect(d).toMatchObject({ for_sale: false, price_usd: 75 });
    expect(events(d).slice(-3)).toEqual(["delisted", "for_sale", "not_for_sale"]);
  });

  it("fractionalizing ends the ask, and a new one is refused while the shares exist", async () => {
    const id = await certifiedArtwork(p, artist, { for_sale: true, price_usd: 90 });
    const res = await p.api.request("POST", "/v1/fractional/artworks", { token: artist.token, body: { artwork_id: id, total_shares: 10, price_per_share_usd: 5 } });
    expect([201, 202], res.text).toContain(res.status);
    expect((await detail(id)).for_sale).toBe(false);
    const refused = await ask(artist.token, id, { for_sale: true, price_usd: 90 });
    expectProblem(refused, 409, "invalid_state");
    expect(refused.body.reason).toBe("shares_issued");
    expect((await detail(id)).for_sale).toBe(false);
    // Its description is not the ask.
    expect((await ask(artist.token, id, { description: "In shares now." })).status).toBe(200);
  });
});
