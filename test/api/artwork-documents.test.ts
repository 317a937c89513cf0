/**
 * An artwork's documents on a platform of their own (database, Ponder, relayer; the run's chain):
 * the canonical document, token metadata, the on-chain hash lookup and the verify page; a
 * certification that fails for good and an admin's retry; the artwork routes' OpenAPI. Registration
 * and changes: artworks.test.ts. Each test creates its own users and artworks.
 */
import { createHash } from "node:crypto";
import { sql } from "kysely";
import { keccak256, stringToBytes } from "viem";
import { describe, expect, it } from "vitest";
import { createUser, expectProblem, startTestApi } from "../support/api.ts";
import { artworkInput, artworkReads, pngImage, useArtworkPlatform, useImageServer } from "../support/artworks.ts";
import { waitFor } from "../support/wait.ts";

const p = useArtworkPlatform();
const images = useImageServer();
const { artworkRow, createCertified } = artworkReads(p);

describe("documents, metadata and hash lookup", () => {
  it("serves the canonical document (keccak256 of its bytes is the hash), the token metadata, and finds the hash on-chain", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const art = await createCertified(artist, { title: "Ünïcödé “quotes” & <tags>" });

    const doc = await fetch(`${p.api.url}/v1/artworks/${art.id}/certificate/document`);
    expect(doc.headers.get("content-type")).toMatch(/^application\/json/);
    const text = await doc.text();
    expect(keccak256(stringToBytes(text))).toBe(art.certificate_hash);
    expect(JSON.parse(text)).toEqual({
      artwork_id: art.id,
      artist_id: artist.id,
      dimensions: { height: 80, unit: "cm", width: 60 },
      image_sha256: art.image_sha256,
      medium: "Oil on canvas",
      title: "Ünïcödé “quotes” & <tags>",
      year: 2021,
    });
    // RFC 8785: sorted keys, no whitespace.
    expect(text.startsWith('{"artist_id":')).toBe(true);

    const metadata = await p.api.request("GET", `/v1/artworks/${art.id}/metadata.json`);
    expect(metadata.status).toBe(200);
    expect(metadata.body).toMatchObject({ name: art.title, image: art.image_url, certificate_hash: art.certificate_hash });
    const onChain = await p.views.selectFrom("certificate").select(["token_uri", "royalty_bps", "owner", "royalty_receiver"]).where("artwork_id", "=", art.id).executeTakeFirstOrThrow();
    expect(onChain.token_uri).toBe(`${p.api.url}/v1/artworks/${art.id}/metadata.json`);
    expect(onChain.royalty_bps).toBe(500);
    const wallet = (await p.db.selectFrom("users").select("wallet_address").where("id", "=", artist.id).executeTakeFirstOrThrow()).wallet_address.toLowerCase();
    expect(onChain).toMatchObject({ owner: wallet, royalty_receiver: wallet });

    const found = await p.api.request("GET", `/v1/certificates/verify?hash=${art.certificate_hash}`);
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({ artwork_id: art.id, token_id: art.token_id, owner: wallet, certificate_hash: art.certificate_hash });
    expectProblem(await p.api.request("GET", `/v1/certificates/verify?hash=0x${"ab".repeat(32)}`), 404, "not_found");
    expectProblem(await p.api.request("GET", "/v1/certificates/verify?hash=0x1234"), 400, "invalid_parameter");
  });

  it("serves the verify page with the artwork's image beside the facts, linked to EXPLORER_URL only when it is set", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const art = await createCertified(artist);
    const certificate = (await p.api.request("GET", `/v1/artworks/${art.id}/certificate`)).body;

    const page = await fetch(`${p.api.url}/verify/${art.id}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const imageUrl = `${p.api.url}/v1/artworks/${art.id}/image`;
    expect(html).toContain(`<img id="artwork-image" src="${imageUrl}"`);
    // The image shown is the one the certificate fingerprints, from the API's own origin (the page's CSP allows only 'self').
    const image = await fetch(imageUrl);
    expect(image.status).toBe(200);
    expect(createHash("sha256").update(Buffer.from(await image.arrayBuffer())).digest("hex")).toBe(art.image_sha256);
    expect(page.headers.get("content-security-policy")).toContain("img-src 'self'");
    // No EXPLORER_URL and a local chain (no explorer known): plain text.
    expect(html).toContain(`<code id="owner">${certificate.owner}</code>`);
    expect(html).toContain(`<code id="tx">${certificate.tx_hash}</code>`);
    // Read from the contract now: its holder through OwnershipService's ownerOf, not the indexer's projection.
    expect(html).toContain("read from the contract now");
    expect(html).not.toMatch(/href="[^"]*\/(address|tx|block)\//);

    const withExplorer = await startTestApi({ ...p.env, EXPLORER_URL: "https://explorer.example.com/" });
    try {
      // A process just started answers 503 until it has found the database, the chain and the indexer ready.
      await waitFor(async () => ((await fetch(`${withExplorer.url}/readyz`)).status === 200 ? true : null), { timeoutMs: 20_000, what: "the second API ready" });
      const linked = await (await fetch(`${withExplorer.url}/verify/${art.id}`)).text();
      const link = (path: string, text: string) => `<a href="https://explorer.example.com/${path}">${text}</a>`;
      expect(linked).toContain(`<code id="owner">${link(`address/${certificate.owner}`, certificate.owner)}</code>`);
      expect(linked).toContain(`<code id="contract">${link(`address/${certificate.contract_address}`, certificate.contract_address)}</code>`);
      expect(linked).toContain(`<code id="tx">${link(`tx/${certificate.tx_hash}`, certificate.tx_hash)}</code>`);
      expect(linked).toContain(`<span id="block">${link(`block/${certificate.block_number}`, String(certificate.block_number))}</span>`);
      expect(linked).toContain(`<code id="royalty-receiver">${link(`address/${certificate.owner}`, certificate.owner)}</code>`);
    } finally {
      await withExplorer.close();
    }
  });

  it("answers 404 for the certificate of an artwork not certified yet", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    images.respond((_req, res) => res.writeHead(503).end());
    const res = await p.api.request("POST", "/v1/artworks", { token: artist.token, body: artworkInput({ image_url: images.url("/unavailable.png") }) });
    expectProblem(await p.api.request("GET", `/v1/artworks/${res.body.id}/certificate`), 404, "not_found");
    expectProblem(await p.api.request("GET", `/v1/artworks/${res.body.id}/certificate/document`), 404, "not_found");
    expectProblem(await p.api.request("GET", `/v1/artworks/${res.body.id}/image`), 404, "not_found");
    // A 503 is retried: the download's attempts count up with its error, the artwork stays pending (no failure reason).
    await waitFor(async () => ((await artworkRow(res.body.id))!.image_fetch_attempts >= 2 ? true : null), { what: "a retry" });
    expect(await artworkRow(res.body.id)).toMatchObject({ status: "pending_certification", image_fetch_error: "image_url answered HTTP 503", certification_error: null });
    // The artist (its holder) and admins see why and how many attempts are left; anyone else sees it pending.
    const [admin, stranger] = await Promise.all([createUser(p.api, { role: "admin", scope: ["admin"] }), createUser(p.api)]);
    const seen = async (token?: string) => (await p.api.request("GET", `/v1/artworks/${res.body.id}`, token ? { token } : {})).body;
    for (const token of [artist.token, admin.token]) {
      expect((await seen(token)).image_download).toEqual({ attempts: expect.any(Number), max_attempts: p.api.config.certification.maxAttempts, last_error: "image_url answered HTTP 503" });
    }
    for (const token of [stranger.token, undefined]) {
      const detail = await seen(token);
      expect(detail.status).toBe("pending_certification");
      expect(detail).not.toHaveProperty("image_download");
    }
    await p.api.request("DELETE", `/v1/artworks/${res.body.id}`, { token: artist.token });
  });
});

describe("failed certification and admin verification", () => {
  it("fails for good on an unusable image (event recorded); an admin retry certifies it with certified_by and the reason", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    images.respond((_req, res) => res.writeHead(200, { "content-type": "image/png" }).end("<html>a login page</html>"));
    const created = await p.api.request("POST", "/v1/artworks", { token: artist.token, body: artworkInput({ image_url: images.url("/login.png") }) });
    const id = created.body.id;
    const failed = await waitFor(async () => {
      const d = await p.api.request("GET", `/v1/artworks/${id}`);
      return d.body.status === "certification_failed" ? d.body : null;
    });
    expect(failed.certification_error).toMatch(/did not return a JPEG, PNG, WebP or GIF/);
    const event = await p.db.selectFrom("outbox_events").selectAll().where("event_type", "=", "artwork.certification_failed").where(sql`payload->>'artwork_id'`, "=", id).executeTakeFirstOrThrow();
    expect(event.payload).toEqual({ artwork_id: id, reason: failed.certification_error, failed_at: expect.any(String) });
    expect(event.audience).toEqual([artist.id]); // only the artist's webhook subscriptions (and admins' all-users ones) get it

    const admin = await createUser(p.api, { role: "admin", scope: ["admin"] });
    expectProblem(await p.api.request("POST", `/v1/admin/artworks/${id}/verify`, { token: artist.token, body: { override_reason: "x" } }), 403, "insufficient_scope");
    expectProblem(await p.api.request("POST", `/v1/admin/artworks/${id}/verify`, { token: admin.token, body: {} }), 400, "validation_failed");
    expectProblem(await p.api.request("POST", "/v1/admin/artworks/art_01JD3Y5V0Q3G7W7J6T4N4C2X1M/verify", { token: admin.token, body: { override_reason: "x" } }), 404, "not_found");

    const bytes = pngImage();
    images.respond((_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(bytes));
    const verified = await p.api.request("POST", `/v1/admin/artworks/${id}/verify`, {
      token: admin.token,
      body: { override_reason: "Image re-uploaded by the gallery; inspected in person", inspector_id: "insp_42" },
    });
    expect(verified.status).toBe(200);
    expect(verified.body).toEqual({
      artwork_id: id,
      status: "certified",
      certificate_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      certified_at: expect.any(String),
      certified_by: admin.id,
    });
    const row = await artworkRow(id);
    expect(row).toMatchObject({ status: "certified", certified_by: admin.id, certification_error: null, failed_at: null });
    const detail = await p.api.request("GET", `/v1/artworks/${id}`);
    const override = detail.body.provenance.find((e: { event: string }) => e.event === "verification_override");
    expect(override).toMatchObject({ actor: admin.id, reason: "Image re-uploaded by the gallery; inspected in person", inspector_id: "insp_42" });

    expectProblem(await p.api.request("POST", `/v1/admin/artworks/${id}/verify`, { token: admin.token, body: { override_reason: "again" } }), 409, "invalid_state");
    await p.api.request("DELETE", `/v1/artworks/${id}`, { token: admin.token });
    expectProblem(await p.api.request("POST", `/v1/admin/artworks/${id}/verify`, { token: admin.token, body: { override_reason: "again" } }), 409, "invalid_state");
  });
});

describe("OpenAPI", () => {
  it("documents the multipart form of POST /v1/artworks, its limits and the artwork routes", async () => {
    const doc = (await p.api.request("GET", "/v1/openapi.json")).body;
    const post = doc.paths["/v1/artworks"].post;
    expect(Object.keys(post.requestBody.content)).toEqual(["application/json", "multipart/form-data"]);
    expect(post.requestBody.content["multipart/form-data"].schema.$ref).toBe("#/components/schemas/ArtworkCreateForm");
    expect(doc.components.schemas.ArtworkCreateForm.properties.image).toMatchObject({ type: "string", format: "binary" });
    expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(["201", "400", "403", "413", "415"]));
    for (const path of ["/v1/artworks/{id}", "/v1/artworks/{id}/certificate", "/v1/artworks/{id}/certificate/document", "/v1/certificates/verify", "/verify/{artwork_id}", "/v1/admin/artworks/{id}/verify"]) {
      expect(Object.keys(doc.paths)).toContain(path);
    }
    expect(Object.keys(doc.paths["/v1/admin/artworks/{id}/verify"].post.responses)).toEqual(expect.arrayContaining(["200", "202", "409"]));
  });
});
