/**
 * An artwork's documents on a platform of their own (database, Ponder, relayer; the run's chain):
 * the canonical document, token metadata, the on-chain hash lookup and the verify page; the image
 * pipeline (sizes without metadata, the original's access, bombs refused, the backfill); a
 * certification that fails for good and an admin's retry; the artwork routes' OpenAPI. Registration
 * and changes: artworks.test.ts. Each test creates its own users and artworks.
 */
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { sql } from "kysely";
import sharp from "sharp";
import { keccak256, stringToBytes } from "viem";
import { describe, expect, it } from "vitest";
import { createUser, expectProblem, startTestApi } from "../support/api.ts";
import { artworkInput, artworkReads, formFields, originalsUnder, pngDeclaring, pngImage, postMultipart, useArtworkPlatform, useImageServer } from "../support/artworks.ts";
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
    expect(metadata.body).toMatchObject({ name: art.title, image: art.images.display.url, certificate_hash: art.certificate_hash });
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
    // The image shown is the display size of the one the certificate fingerprints, from the API's own origin (the page's CSP allows only 'self').
    const image = await fetch(imageUrl);
    expect([image.status, image.headers.get("content-type")]).toEqual([200, "image/webp"]);
    const original = await fetch(art.images.original.url);
    expect(createHash("sha256").update(Buffer.from(await original.arrayBuffer())).digest("hex")).toBe(art.image_sha256);
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

describe("images: one pipeline, sizes without metadata, the original kept", () => {
  const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
  const bytesOf = async (res: Response) => Buffer.from(await res.arrayBuffer());
  /** A phone photo: 1600 x 1000 pixels shown turned a quarter (EXIF orientation 6), with its camera and GPS position. */
  const phonePhoto = () =>
    sharp({ create: { width: 1600, height: 1000, channels: 3, background: { r: 180, g: 90, b: 40 } } })
      .jpeg()
      .withExif({ IFD0: { Make: "CameraCo", Model: "X1" }, IFD3: { GPSLatitudeRef: "N", GPSLatitude: "38/1 42/1 0/1" } })
      .withMetadata({ orientation: 6 })
      .toBuffer();
  const upload = async (artist: { token: string }, bytes: Buffer, title = "Harbour, from the pier") => {
    const res = await postMultipart(p.api.url, artist.token, formFields(artworkInput({ title })), { bytes, type: "image/jpeg", filename: "IMG_0001.jpg" });
    expect(res.status, res.text).toBe(201);
    return res.body.id as string;
  };
  /** The artwork once its image is processed (by its job, after the upload's answer). */
  const processed = (id: string) =>
    waitFor(async () => {
      const d = (await p.api.request("GET", `/v1/artworks/${id}`)).body;
      return d.images ? d : null;
    }, { what: `the processing of ${id}'s image` });

  it("serves a photo's thumbnail and display size oriented, as WebP with no EXIF; its original only to its artist and admins", async () => {
    const [artist, other, admin] = await Promise.all([createUser(p.api, { role: "artist" }), createUser(p.api), createUser(p.api, { role: "admin", scope: ["admin"] })]);
    const photo = await phonePhoto();
    const id = await upload(artist, photo);
    const detail = await processed(id);
    const base = `${p.api.url}/v1/artworks/${id}`;
    expect(detail.images).toEqual({
      thumbnail: { url: `${base}/images/thumbnail.webp`, width: 400, height: 640, bytes: expect.any(Number), content_type: "image/webp" },
      display: { url: `${base}/images/display.webp`, width: 1000, height: 1600, bytes: expect.any(Number), content_type: "image/webp" },
      original: { url: `${base}/original`, width: 1000, height: 1600, bytes: photo.length, content_type: "image/jpeg", sha256: sha256(photo), public: false, metadata: ["exif"] },
    });
    expect(detail.thumbnail_url).toBe(detail.images.thumbnail.url);
    expect(detail.image_sha256).toBe(sha256(photo));

    // Every public answer: the right size, WebP, immutable, its own hash as ETag, and nothing of the camera or the place.
    for (const [url, width, height] of [[detail.images.thumbnail.url, 400, 640], [detail.images.display.url, 1000, 1600], [detail.image_url, 1000, 1600]] as const) {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/webp");
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      const body = await bytesOf(res);
      expect(res.headers.get("etag")).toBe(`"${sha256(body)}"`);
      const seen = await sharp(body).metadata();
      expect([seen.width, seen.height, seen.exif, seen.xmp, seen.iptc]).toEqual([width, height, undefined, undefined, undefined]);
      expect(body.includes("CameraCo")).toBe(false);
    }
    expect((await p.api.request("GET", `/v1/artworks/${id}/metadata.json`)).body.image).toBe(detail.images.display.url);

    // The original, EXIF and all: its artist and admins; 404 to anyone else, as if it did not exist.
    expectProblem(await p.api.request("GET", `/v1/artworks/${id}/original`), 404, "not_found");
    expectProblem(await p.api.request("GET", `/v1/artworks/${id}/original`, { token: other.token }), 404, "not_found");
    for (const reader of [artist, admin]) {
      const res = await fetch(`${base}/original`, { headers: { authorization: `Bearer ${reader.token}` } });
      expect(res.status).toBe(200);
      expect([res.headers.get("content-type"), res.headers.get("cache-control")]).toEqual(["image/jpeg", "private, max-age=3600"]);
      expect((await bytesOf(res)).equals(photo)).toBe(true);
    }
    expectProblem(await p.api.request("GET", `/v1/artworks/${id}/images/poster.webp`), 400, "invalid_parameter");
    expectProblem(await p.api.request("GET", "/v1/artworks/art_01JD3Y5V0Q3G7W7J6T4N4C2X1M/images/thumbnail.webp"), 404, "not_found");
  });

  it("serves an original without metadata to anyone: its SHA-256 is the certificate's image_sha256", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const bytes = pngImage();
    const id = await upload(artist, bytes);
    const detail = await processed(id);
    expect(detail.images.original).toMatchObject({ public: true, metadata: [], width: 1, height: 1 });
    const res = await fetch(detail.images.original.url);
    expect(res.status).toBe(200);
    expect(sha256(await bytesOf(res))).toBe(detail.image_sha256);
  });

  it("refuses a decompression bomb (413) or an unreadable header (415) storing nothing; an image cut short fails its certification", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const files = originalsUnder(p.storageDir).length;
    const bomb = await postMultipart(p.api.url, artist.token, formFields(artworkInput()), { bytes: pngDeclaring(60_000, 60_000) });
    expectProblem(bomb, 413, "payload_too_large");
    expect(bomb.body.detail).toMatch(/declares 60000 × 60000 pixels \(3600 megapixels\); at most 100 megapixels/);
    const garbled = Buffer.concat([Buffer.from("GIF89a"), Buffer.alloc(8)]);
    const unreadable = await postMultipart(p.api.url, artist.token, formFields(artworkInput()), { bytes: garbled, type: "image/gif" });
    expectProblem(unreadable, 415, "unsupported_media_type");
    expect(unreadable.body.detail).toMatch(/^The image could not be read/);
    expect(await p.db.selectFrom("artworks").select("id").where("artist_id", "=", artist.id).execute()).toEqual([]);
    expect(originalsUnder(p.storageDir).length).toBe(files);
    // A header that reads, pixels that do not: found by the processing after the answer, which ends the certification.
    const cut = await upload(artist, (await phonePhoto()).subarray(0, 2000));
    const failed = await waitFor(async () => {
      const d = (await p.api.request("GET", `/v1/artworks/${cut}`)).body;
      return d.status === "certification_failed" ? d : null;
    }, { what: "the cut image's certification failing" });
    expect(failed.certification_error).toMatch(/^The image could not be decoded/);
    expect(failed.images).toMatchObject({ thumbnail: null, display: null, refusal: failed.certification_error });
  });

  it("fails the certification of an image_url that is a bomb, for good and saying why, with nothing stored", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const bomb = pngDeclaring(50_000, 50_000);
    images.respond((_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(bomb));
    const created = await p.api.request("POST", "/v1/artworks", { token: artist.token, body: artworkInput({ image_url: images.url("/bomb.png") }) });
    expect(created.status, created.text).toBe(201);
    const failed = await waitFor(async () => {
      const d = await p.api.request("GET", `/v1/artworks/${created.body.id}`);
      return d.body.status === "certification_failed" ? d.body : null;
    }, { what: "the bomb's certification failing" });
    expect(failed.certification_error).toMatch(/^image_url: The image declares 50000 × 50000 pixels/);
    expect([failed.image_sha256, failed.images]).toEqual([null, null]);
  });

  it("makes the sizes of an original stored before the pipeline: at its first request, or by the backfill; says why a bomb stored then has none", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const { artworkImages } = p.api.server.platform.services;
    const [onDemand, backfilled, bomb] = [await upload(artist, pngImage()), await upload(artist, pngImage()), await upload(artist, pngImage())];
    for (const id of [onDemand, backfilled, bomb]) await processed(id);
    // As an artwork stored before derivatives existed: no rows, never processed; the bomb's original a bomb.
    const bombKey = `artworks/${bomb}/bomb.png`;
    writeStored(bombKey, pngDeclaring(40_000, 40_000));
    await p.db.deleteFrom("artwork_images").where("artwork_id", "in", [onDemand, backfilled, bomb]).execute();
    await p.db.updateTable("artworks").set({ image_processed_at: null, image_width: null, image_height: null, image_metadata: null }).where("id", "in", [onDemand, backfilled, bomb]).execute();
    await p.db.updateTable("artworks").set({ image_storage_key: bombKey }).where("id", "=", bomb).execute();
    expect((await p.api.request("GET", `/v1/artworks/${onDemand}`)).body.images).toBeNull();

    const thumbnail = await fetch(`${p.api.url}/v1/artworks/${onDemand}/images/thumbnail.webp`);
    expect([thumbnail.status, thumbnail.headers.get("content-type")]).toEqual([200, "image/webp"]);
    await artworkImages.backfillTask({}, undefined as never);
    const namesOf = async (id: string) => (await p.db.selectFrom("artwork_images").select("name").where("artwork_id", "=", id).orderBy("name").execute()).map((r) => r.name);
    expect([await namesOf(onDemand), await namesOf(backfilled), await namesOf(bomb)]).toEqual([["display", "thumbnail"], ["display", "thumbnail"], []]);
    expect((await p.api.request("GET", `/v1/artworks/${backfilled}`)).body.images.display).toMatchObject({ width: 1, height: 1 });
    const refused = (await p.api.request("GET", `/v1/artworks/${bomb}`)).body.images;
    expect(refused).toMatchObject({ thumbnail: null, display: null, refusal: expect.stringMatching(/declares 40000 × 40000 pixels/) });
    const image = await p.api.request("GET", `/v1/artworks/${bomb}/image`);
    expectProblem(image, 404, "not_found");
    expect(image.body.detail).toMatch(/cannot be shown: The image declares 40000 × 40000 pixels/);
    // Nothing left to do: the next job finds no work.
    expect(await p.db.selectFrom("artworks").select("id").where("image_storage_key", "is not", null).where("image_processed_at", "is", null).execute()).toEqual([]);
  });

  const writeStored = (key: string, bytes: Buffer) => {
    const file = path.join(p.storageDir, ...key.split("/"));
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, bytes);
  };
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
