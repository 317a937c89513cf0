/**
 * Marketplace listings on real pieces: Postgres, the Hardhat chain, Ponder (the owner check reads
 * the indexer's current owner of the certificate) and the API over HTTP.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { adminToken, createUser, expectProblem, type TestUser } from "../support/api.ts";
import { artworkInput, publicClient, unreachableImageUrl, useArtworkPlatform } from "../support/artworks.ts";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { testEnvironment } from "../support/environment.ts";
import { certifiedArtwork as certifiedArtworkOf, walletClientOf } from "../support/marketplace.ts";
import { waitFor } from "../support/wait.ts";

const p = useArtworkPlatform();

const certifiedArtwork = (owner: TestUser, extra: Record<string, unknown> = {}) => certifiedArtworkOf(p, owner, extra);

const listingCount = async () => Number((await p.db.selectFrom("listings").select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n);
type ArtworkName = "first" | "race" | "cancel" | "admin" | "siwe" | "cheap" | "mid" | "dear";
const list = (token: string, body: unknown, headers: Record<string, string> = {}) => p.api.request("POST", "/v1/marketplace/listings", { token, body, headers });

describe("marketplace listings", () => {
  let artist: TestUser;
  let artist2: TestUser;
  let collector: TestUser;
  let admin: string;
  /** Certified artworks of `artist` (and one of `artist2`), by purpose. */
  const art = {} as Record<ArtworkName, string>;

  beforeAll(async () => {
    [artist, artist2, collector, admin] = await Promise.all([
      createUser(p.api, { role: "artist", scope: ["write"] }),
      createUser(p.api, { role: "artist", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      adminToken(p.api),
    ]);
    const specs: [ArtworkName, TestUser, Record<string, unknown>][] = [
      ["first", artist, { medium: "Oil on canvas" }],
      ["race", artist, { medium: "Oil on canvas" }],
      ["cancel", artist, { medium: "Oil on canvas" }],
      ["admin", artist, { medium: "Oil on canvas" }],
      ["siwe", artist2, { medium: "Oil on canvas" }],
      ["cheap", artist, { medium: "Watercolour on paper" }],
      ["mid", artist, { medium: "Bronze casting" }],
      ["dear", artist2, { medium: "Oil on linen" }],
    ];
    const ids = await Promise.all(specs.map(([, owner, extra]) => certifiedArtwork(owner, extra)));
    specs.forEach(([name], i) => (art[name] = ids[i]!));
  }, 120_000);

  it("lists a certified artwork for its on-chain owner, with the listed provenance entry", async () => {
    const res = await list(artist.token, { artwork_id: art.first, price_usd: 12500.5, accepts_offers: true });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      listing_id: expect.stringMatching(/^lst_[0-9A-Z]{26}$/),
      artwork_id: art.first,
      title: expect.stringContaining("Harbour at Dawn"),
      seller_id: artist.id,
      price_usd: 12500.5,
      currency: "USD",
      accepts_offers: true,
      listed_at: expect.stringMatching(/Z$/),
      status: "active",
    });
    const row = await p.db.selectFrom("listings").selectAll().where("id", "=", res.body.listing_id).executeTakeFirstOrThrow();
    expect(row.price_cents).toBe(1250050n);
    expect((await p.api.request("GET", `/v1/marketplace/listings/${res.body.listing_id}`)).body).toEqual(res.body);

    const detail = await p.api.request("GET", `/v1/artworks/${art.first}`);
    const listed = detail.body.provenance.filter((e: { event: string }) => e.event === "listed");
    expect(listed).toEqual([expect.objectContaining({ event: "listed", actor: artist.id, listing_id: res.body.listing_id })]);

    // A second open listing of the same artwork.
    expectProblem(await list(artist.token, { artwork_id: art.first, price_usd: 1, accepts_offers: false }), 409, "conflict");
  });

  it("two listings of one artwork at once: exactly one is created", async () => {
    const before = await listingCount();
    const answers = await Promise.all(
      Array.from({ length: 4 }, (_, i) => list(artist.token, { artwork_id: art.race, price_usd: 1000 + i, accepts_offers: false })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409]);
    for (const a of answers.filter((a) => a.status === 409)) expectProblem(a, 409, "conflict");
    expect(await listingCount()).toBe(before + 1);
  });

  it("refuses non-owners, uncertified artworks, external wallets, anonymous callers and narrow tokens", async () => {
    const before = await listingCount();
    const body = (artworkId: string) => ({ artwork_id: artworkId, price_usd: 10, accepts_offers: false });
    // Not the holder of the certificate (an admin is no exception: it is the chain's owner that lists).
    expectProblem(await list(collector.token, body(art.cheap)), 403, "forbidden");
    expectProblem(await list(artist2.token, body(art.cheap)), 403, "forbidden");
    expectProblem(await list(admin, body(art.cheap)), 403, "forbidden");
    // Not certified: the image URL never answers, so the artwork stays uncertified.
    const pending = await p.api.request("POST", "/v1/artworks", { token: artist.token, body: artworkInput({ image_url: await unreachableImageUrl() }) });
    expect(pending.status, pending.text).toBe(201);
    const uncertified = await list(artist.token, body(pending.body.id));
    expectProblem(uncertified, 409, "invalid_state");
    expect(uncertified.body.detail).toMatch(/not certified/);
    // Unknown artwork.
    expectProblem(await list(artist.token, body("art_01JD3Y5V0Q3G7W7J6T4N4C2X1M")), 400, "validation_failed");
    // Anonymous, and a token without marketplace:write.
    expectProblem(await p.api.request("POST", "/v1/marketplace/listings", { body: body(art.cheap) }), 401, "unauthenticated");
    const reader = await createUser(p.api, { role: "artist", scope: ["read", "artworks:write"] });
    expectProblem(await list(reader.token, body(art.cheap)), 403, "insufficient_scope");
    // An owner whose wallet is external (signed in with Ethereum): refused, saying what to sign, until
    // the wallet's approval of ArtMarket is indexed. (The test holds that wallet's key.)
    const { custody_index } = await p.db.selectFrom("users").select("custody_index").where("id", "=", artist2.id).executeTakeFirstOrThrow();
    const wallet = await walletClientOf(p, artist2.id);
    await p.db.updateTable("users").set({ wallet_kind: "siwe", custody_index: null }).where("id", "=", artist2.id).execute();
    try {
      const external = await list(artist2.token, body(art.siwe));
      expectProblem(external, 409, "invalid_state");
      expect(external.body.detail).toContain(`setApprovalForAll(${testEnvironment().artMarketAddress}, true)`);
      expect(await listingCount()).toBe(before);
      const hash = await wallet.writeContract({ chain: null, address: testEnvironment().artCertificateAddress, abi: artCertificateAbi, functionName: "setApprovalForAll", args: [testEnvironment().artMarketAddress, true] });
      await publicClient().waitForTransactionReceipt({ hash });
      const listed = await waitFor(async () => {
        const res = await list(artist2.token, body(art.siwe));
        return res.status === 201 && res;
      }, { what: "listing once the approval is indexed" });
      expect((await p.api.request("DELETE", `/v1/marketplace/listings/${listed.body.listing_id}`, { token: artist2.token })).status).toBe(200);
    } finally {
      await p.db.updateTable("users").set({ wallet_kind: "custodial", custody_index }).where("id", "=", artist2.id).execute();
    }
  });

  it("refuses bad inputs with problem+json and stores nothing", async () => {
    const before = await listingCount();
    const ok = { artwork_id: art.cheap, price_usd: 10, accepts_offers: false };
    for (const bad of [
      { ...ok, price_usd: -5 },
      { ...ok, price_usd: 0 },
      { ...ok, price_usd: 10.005 },
      { ...ok, price_usd: 2e9 },
      { ...ok, price_usd: "10" },
      { ...ok, currency: "EUR" },
      { ...ok, artwork_id: `${art.cheap}\u0000` },
      { artwork_id: art.cheap, price_usd: 10 },
      { ...ok, accepts_offers: "yes" },
    ]) {
      const res = await list(artist.token, bad);
      expectProblem(res, 400, "validation_failed");
      expect(res.body.errors.length, JSON.stringify(bad)).toBeGreaterThan(0);
    }
    expectProblem(await p.api.request("POST", "/v1/marketplace/listings", { token: artist.token, rawBody: "{", headers: { "content-type": "application/json" } }), 400, "invalid_json");
    expect(await listingCount()).toBe(before);
    expectProblem(await p.api.request("GET", "/v1/marketplace/listings/lst_nope"), 404, "not_found");
    expectProblem(await p.api.request("GET", "/v1/marketplace/listings/lst_%00"), 400, "invalid_parameter");
    expectProblem(await p.api.request("GET", "/v1/marketplace/listings/lst_01JD3Y5V0Q3G7W7J6T4N4C2X1M"), 404, "not_found");
  });

  it("cancels: the seller or an admin, once; others are 403; cancelled listings stay readable by id", async () => {
    const created = await list(artist.token, { artwork_id: art.cancel, price_usd: 300, accepts_offers: true });
    expect(created.status, created.text).toBe(201);
    const id = created.body.listing_id;
    expectProblem(await p.api.request("DELETE", `/v1/marketplace/listings/${id}`), 401, "unauthenticated");
    expectProblem(await p.api.request("DELETE", `/v1/marketplace/listings/${id}`, { token: collector.token }), 403, "forbidden");
    const reader = await createUser(p.api, { role: "artist", scope: ["read"] });
    expectProblem(await p.api.request("DELETE", `/v1/marketplace/listings/${id}`, { token: reader.token }), 403, "insufficient_scope");
    expectProblem(await p.api.request("DELETE", "/v1/marketplace/listings/lst_01JD3Y5V0Q3G7W7J6T4N4C2X1M", { token: artist.token }), 404, "not_found");

    const cancelled = await p.api.request("DELETE", `/v1/marketplace/listings/${id}`, { token: artist.token });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toEqual({ ...created.body, status: "cancelled" });
    expectProblem(await p.api.request("DELETE", `/v1/marketplace/listings/${id}`, { token: artist.token }), 409, "invalid_state");
    expect((await p.api.request("GET", `/v1/marketplace/listings/${id}`)).body.status).toBe("cancelled");
    const listed = (await p.api.request("GET", "/v1/marketplace/listings?limit=100")).body.data.map((l: { listing_id: string }) => l.listing_id);
    expect(listed).not.toContain(id);
    const provenance = (await p.api.request("GET", `/v1/artworks/${art.cancel}`)).body.provenance.map((e: { event: string }) => e.event);
    expect(provenance.filter((e: string) => e === "listed" || e === "delisted")).toEqual(["listed", "delisted"]);

    // Cancelled, the artwork can be listed again; an admin cancels that one.
    const again = await list(artist.token, { artwork_id: art.cancel, price_usd: 250, accepts_offers: false });
    expect(again.status, again.text).toBe(201);
    const byAdmin = await p.api.request("DELETE", `/v1/marketplace/listings/${again.body.listing_id}`, { token: admin });
    expect(byAdmin.status, byAdmin.text).toBe(200);
    expect(byAdmin.body.status).toBe("cancelled");
    const row = await p.db.selectFrom("listings").select(["cancelled_by", "cancelled_at"]).where("id", "=", again.body.listing_id).executeTakeFirstOrThrow();
    expect(row.cancelled_at).not.toBeNull();
    expect(row.cancelled_by).not.toBe(artist.id);
  });

  describe("the public list", () => {
    const ids = {} as Record<"cheap" | "mid" | "dear" | "admin", string>;
    beforeAll(async () => {
      for (const [name, owner, price] of [
        ["cheap", artist, 50],
        ["mid", artist, 500.25],
        ["dear", artist2, 5000],
        ["admin", artist, 700],
      ] as const) {
        const res = await list(owner.token, { artwork_id: art[name], price_usd: price, accepts_offers: name !== "dear" });
        if (res.status !== 201) throw new Error(`listing ${name}: ${res.status} ${res.text}`);
        ids[name] = res.body.listing_id;
      }
      // The admin listing is cancelled: it leaves the list.
      expect((await p.api.request("DELETE", `/v1/marketplace/listings/${ids.admin}`, { token: admin })).status).toBe(200);
    });

    const get = async (query: string) => {
      const res = await p.api.request("GET", `/v1/marketplace/listings${query}`);
      expect(res.status, res.text).toBe(200);
      return res.body as { data: { listing_id: string; price_usd: number; status: string }[]; pagination: { page: number; limit: number; total: number; has_more: boolean } };
    };
    const idsOf = (body: { data: { listing_id: string }[] }) => body.data.map((l) => l.listing_id);

    it("is public, active listings only, newest first by default", async () => {
      const body = await get("");
      expect(body.data.every((l) => l.status === "active")).toBe(true);
      expect(idsOf(body)).not.toContain(ids.admin);
      // first, race (one), cheap, mid, dear are active.
      expect(body.pagination.total).toBe(5);
      expect(idsOf(body).slice(0, 3)).toEqual([ids.dear, ids.mid, ids.cheap]);
      expect(idsOf(await get("?sort=newest"))).toEqual(idsOf(body));
      expect(idsOf(await get("?sort=oldest"))).toEqual([...idsOf(body)].reverse());
    });

    it("sorts by price both ways", async () => {
      const asc = (await get("?sort=price_asc")).data.map((l) => l.price_usd);
      expect(asc).toEqual([...asc].sort((a, b) => a - b));
      expect(asc[0]).toBe(50);
      const desc = (await get("?sort=price_desc")).data.map((l) => l.price_usd);
      expect(desc).toEqual([...asc].reverse());
      expect(desc[0]).toBe(12500.5);
    });

    it("filters by price range (inclusive), medium and artist", async () => {
      expect(idsOf(await get("?price_min=50&price_max=500.25&sort=price_asc"))).toEqual([ids.cheap, ids.mid]);
      expect(idsOf(await get("?price_min=50.01&price_max=500.24"))).toEqual([]);
      // dear (5,000) and first (12,500.50).
      expect((await get("?price_min=5000&sort=price_asc")).data.map((l) => l.price_usd)).toEqual([5000, 12500.5]);
      expect(idsOf(await get("?price_min=5000&sort=price_asc"))[0]).toBe(ids.dear);
      expect(idsOf(await get("?medium=watercolour"))).toEqual([ids.cheap]);
      expect(idsOf(await get("?medium=BRONZE"))).toEqual([ids.mid]);
      expect(idsOf(await get(`?artist_id=${artist2.id}`))).toEqual([ids.dear]);
      expect(idsOf(await get(`?artist_id=${artist2.id}&medium=oil`))).toEqual([ids.dear]);
      expect(idsOf(await get(`?artist_id=${artist.id}&medium=watercolour`))).toEqual([ids.cheap]);
      for (const bad of ["?price_min=-1", "?price_min=10&price_max=5", "?sort=cheapest", "?limit=0", "?limit=101", "?page=0", "?medium=a%00b"]) {
        expectProblem(await p.api.request("GET", `/v1/marketplace/listings${bad}`), 400, "invalid_parameter");
      }
    });

    it("paginates", async () => {
      const all = idsOf(await get("?sort=price_asc&limit=100"));
      const first = await get("?sort=price_asc&limit=2");
      const second = await get("?sort=price_asc&limit=2&page=2");
      const third = await get("?sort=price_asc&limit=2&page=3");
      expect(first.pagination).toEqual({ page: 1, limit: 2, total: all.length, has_more: true });
      expect(third.pagination.has_more).toBe(false);
      expect([...idsOf(first), ...idsOf(second), ...idsOf(third)]).toEqual(all);
    });
  });

  it("documents the endpoints in OpenAPI", async () => {
    const doc = (await p.api.request("GET", "/v1/openapi.json")).body;
    expect(Object.keys(doc.paths["/v1/marketplace/listings"]).sort()).toEqual(["get", "post"]);
    expect(Object.keys(doc.paths["/v1/marketplace/listings/{id}"]).sort()).toEqual(["delete", "get"]);
    expect(doc.components.schemas.Listing.properties.status.enum).toEqual(["active", "pending_payment", "sold", "cancelled"]);
  });
});
