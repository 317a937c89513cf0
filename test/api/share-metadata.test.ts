/**
 * ERC-1155 metadata of share tokens, fetched where the deployed ArtShares says it is: `uri(id)` read
 * from the contract, `{id}` replaced as wallets do (64 lower-case hex digits, no 0x), on a share
 * class created and sold through the API (Postgres, the Hardhat chain, Ponder, the sandbox processor).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import { publicClient, useArtworkPlatform } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { certifiedArtwork, indexedCertificate } from "../support/marketplace.ts";
import { waitFor } from "../support/wait.ts";
import { createUser, expectProblem, send, type TestUser } from "../support/api.ts";

const p = useArtworkPlatform();

describe("share token metadata (ArtShares uri)", () => {
  let artist: TestUser;
  let collector: TestUser;
  let artworkId: string;
  let tokenId: bigint;

  beforeAll(async () => {
    [artist, collector] = await Promise.all([createUser(p.api, { role: "artist", scope: ["write"] }), createUser(p.api, { role: "collector", scope: ["write"] })]);
    artworkId = await certifiedArtwork(p, artist);
    tokenId = (await indexedCertificate(p, artworkId)).tokenId;
    const created = await p.api.request("POST", "/v1/fractional/artworks", { token: artist.token, body: { artwork_id: artworkId, total_shares: 40, price_per_share_usd: 12.5 } });
    expect([201, 202], created.text).toContain(created.status);
    await waitFor(async () => (await p.api.request("GET", `/v1/fractional/artworks/${artworkId}`)).body.status === "active", { timeoutMs: 20_000, what: "the share class on-chain" });
    const bought = await p.api.request("POST", `/v1/fractional/${artworkId}/purchase`, { token: collector.token, body: { shares_quantity: 3, payment_method_id: "pm_card_visa" } });
    expect([201, 202], bought.text).toContain(bought.status);
    await waitFor(async () => (await p.api.request("GET", `/v1/fractional/purchases/${bought.body.purchase_id}`, { token: collector.token })).body.status === "confirmed", {
      timeoutMs: 20_000,
      what: "the purchase minted",
    });
  }, 120_000);

  /** What a wallet fetches for token `id`: the contract's URI with `{id}` replaced, on this test's API (see below). */
  async function walletFetch(id: bigint) {
    const template = await publicClient().readContract({ address: testEnvironment().artSharesAddress, abi: artSharesAbi, functionName: "uri", args: [id] });
    const url = new URL(template.replace("{id}", id.toString(16).padStart(64, "0")));
    // The run's ArtShares was deployed once with `npm start`'s base URL; this file's API listens on a
    // port of its own: the path is the contract's, the origin the API's.
    return { template, path: url.pathname, res: await send(p.api.url, "GET", url.pathname) };
  }

  it("answers the URI the contract gives with ERC-1155 metadata JSON: the artwork, its image, the class's supply, cap and price", async () => {
    const { template, path, res } = await walletFetch(tokenId);
    expect(template).toBe("http://127.0.0.1:3000/v1/fractional/metadata/{id}.json");
    expect(path).toBe(`/v1/fractional/metadata/${tokenId.toString(16).padStart(64, "0")}.json`);
    expect(res.status, res.text).toBe(200);
    const artwork = (await p.api.request("GET", `/v1/artworks/${artworkId}`)).body;
    const { display_name } = await p.db.selectFrom("users").select("display_name").where("id", "=", artist.id).executeTakeFirstOrThrow();
    expect(res.body).toEqual({
      name: `${artwork.title} (shares)`,
      description: `A share of “${artwork.title}” by ${display_name}, certified on-chain as certificate #${tokenId}: one of 40 at 12.50 USD.`,
      image: `${p.api.url}/v1/artworks/${artworkId}/image`,
      external_url: `${p.api.url}/verify/${artworkId}`,
      decimals: 0,
      properties: {
        artwork_id: artworkId,
        title: artwork.title,
        artist: display_name,
        artist_id: artist.id,
        certificate_token_id: tokenId.toString(),
        share_class: { total_supply: 3, cap: 40, shares_available: 37, price_per_share_usd: 12.5 },
      },
    });
    // The supply and cap are the chain's.
    const [supply, cap] = await Promise.all(
      (["totalSupply", "shareCap"] as const).map((functionName) => publicClient().readContract({ address: testEnvironment().artSharesAddress, abi: artSharesAbi, functionName, args: [tokenId] })),
    );
    expect([supply, cap]).toEqual([3n, 40n]);
    // The image is the one the API serves for the artwork: an absolute URL a wallet can load.
    const image = await fetch(res.body.image);
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toMatch(/^image\//);
    expect(artwork.image_url).toBe(res.body.image);
  });

  it("reads the id as 64 hex digits, 0x-prefixed hex or decimal, all the same token; public and cacheable", async () => {
    const { res } = await walletFetch(tokenId);
    for (const id of [tokenId.toString(), `0x${tokenId.toString(16)}`, `0x${tokenId.toString(16).toUpperCase()}`, tokenId.toString(16).padStart(64, "0").toUpperCase()]) {
      const other = await send(p.api.url, "GET", `/v1/fractional/metadata/${id}.json`);
      expect(other.status, id).toBe(200);
      expect(other.text, id).toBe(res.text);
    }
    expect(res.headers.get("cache-control")).toBe("public, max-age=0, must-revalidate");
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^W\/"/);
    const revalidated = await send(p.api.url, "GET", `/v1/fractional/metadata/${tokenId}.json`, { headers: { "if-none-match": etag } });
    expect([revalidated.status, revalidated.text]).toEqual([304, ""]);
  });

  it("answers 404 for a token id without a share class on-chain, and 400 for what is no token id", async () => {
    const unfractionalized = await certifiedArtwork(p, artist);
    const noClass = (await indexedCertificate(p, unfractionalized)).tokenId;
    for (const id of [noClass, 0n, 10n ** 30n, (1n << 256n) - 1n]) {
      const { res } = await walletFetch(id);
      expectProblem(res, 404, "not_found");
    }
    for (const id of ["abc", "-1", "1.5", "0x", `0x${"f".repeat(65)}`, "1".repeat(79), `2${"0".repeat(77)}`, "f".repeat(63)]) {
      const res = await send(p.api.url, "GET", `/v1/fractional/metadata/${id}.json`);
      expect(res.status, id).toBe(400);
      expectProblem(res, 400, "invalid_parameter");
    }
  });
});
