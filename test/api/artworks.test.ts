/**
 * Artworks over HTTP on a platform of their own (database, Ponder, relayer; the run's chain):
 * registration by JSON and multipart, refused inputs that store nothing, owner/admin rules,
 * immutable certified fields, soft delete and listing filters. Media, metadata, documents and a
 * failed certification: artwork-documents.test.ts. Each test creates its own users and artworks.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { adminToken, createUser, expectProblem } from "../support/api.ts";
import {
  artworkInput,
  artworkReads,
  filesUnder,
  formFields,
  gifImage,
  jpegImage,
  pngImage,
  postMultipart,
  useArtworkPlatform,
  useImageServer,
  webpImage,
} from "../support/artworks.ts";
import { waitFor } from "../support/wait.ts";

const p = useArtworkPlatform();
const images = useImageServer();
const asForm = formFields;
const { artworkRow, artworksCount, waitCertified, createCertified } = artworkReads(p);

describe("POST /v1/artworks", () => {
  it("registers an artwork from image_url: 201 pending, then the pipeline fetches, hashes, stores and certifies it", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const bytes = pngImage();
    images.respond((_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(bytes));
    const input = artworkInput({ image_url: images.url("/harbour.png"), for_sale: true });
    const res = await p.api.request("POST", "/v1/artworks", { token: artist.token, body: input });

    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ title: input.title, artist_id: artist.id, status: "pending_certification", certificate_hash: null });
    expect(res.body.id).toMatch(/^art_[0-9A-Z]{26}$/);
    expect(res.body.estimated_certification_time).toMatch(/^\d+-\d+ (seconds|minutes|hours)$/);
    expect(await artworksCount(artist.id)).toBe(1);
    const stored = await artworkRow(res.body.id);
    expect(stored).toMatchObject({ artist_id: artist.id, image_source_url: images.url("/harbour.png"), price_cents: 1250050n, for_sale: true });

    const detail = await waitCertified(res.body.id);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    expect(detail).toMatchObject({
      id: res.body.id,
      artist: { id: artist.id, name: artist.username },
      year: 2021,
      medium: "Oil on canvas",
      dimensions: { width: 60, height: 80, unit: "cm" },
      price_usd: 12500.5,
      for_sale: true,
      verified: true,
      image_sha256: sha256,
    });
    expect(detail.certificate_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(detail.provenance.map((e: { event: string }) => e.event)).toEqual(["created", "for_sale", "certified"]);
    expect(detail.provenance[2].tx).toMatch(/^0x[0-9a-f]{64}$/);

    const image = await fetch(detail.image_url);
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await image.arrayBuffer()).equals(bytes)).toBe(true);
    expect(filesUnder(p.storageDir).some((f) => f.endsWith(`${res.body.id}/${sha256}.png`))).toBe(true);
  });

  it("accepts multipart/form-data: the image part, dimensions as JSON or as dimensions[...] parts, type by content", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const viaJson = await postMultipart(p.api.url, artist.token, asForm(artworkInput()), { bytes: gifImage(), filename: "scan.png", type: "image/png" });
    expect(viaJson.status).toBe(201);
    expect(await artworkRow(viaJson.body.id)).toMatchObject({ image_content_type: "image/gif", dimensions: { width: 60, height: 80, unit: "cm" } });

    const { dimensions: _d, ...rest } = artworkInput({ price_usd: 99.99, for_sale: true });
    const viaParts = await postMultipart(
      p.api.url,
      artist.token,
      { ...asForm(rest), "dimensions[width]": "24.5", "dimensions[height]": "36", "dimensions[unit]": "in" },
      { bytes: jpegImage(), filename: "photo.bin", type: "application/octet-stream" },
    );
    expect(viaParts.status).toBe(201);
    expect(await artworkRow(viaParts.body.id)).toMatchObject({
      image_content_type: "image/jpeg",
      dimensions: { width: 24.5, height: 36, unit: "in" },
      price_cents: 9999n,
      for_sale: true,
    });
    const webp = await postMultipart(p.api.url, artist.token, asForm(artworkInput()), { bytes: webpImage() });
    expect(webp.status).toBe(201);
    expect(await artworksCount(artist.id)).toBe(3);
  });

  it("replays a multipart request with the same Idempotency-Key, and refuses the key with another file", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const fields = asForm(artworkInput());
    const image = { bytes: pngImage() };
    const headers = { "Idempotency-Key": `art-${artist.id}` };
    const first = await postMultipart(p.api.url, artist.token, fields, image, headers);
    const again = await postMultipart(p.api.url, artist.token, fields, image, headers);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.id).toBe(first.body.id);
    const other = await postMultipart(p.api.url, artist.token, fields, { bytes: pngImage() }, headers);
    expectProblem(other, 422, "idempotency_key_reused");
    expect(await artworksCount(artist.id)).toBe(1);
  });

  it("writes uploads that arrive together in shared transactions, each with its provenance and certification, and certifies them all", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const creations = p.api.server.platform.services.artworks.creations;
    const before = { ...creations.stats };
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) => postMultipart(p.api.url, artist.token, asForm(artworkInput({ title: `Together ${i}`, for_sale: i % 2 === 0, price_usd: 100 })), { bytes: pngImage() })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(16).fill(201));
    const ids = answers.map((a) => a.body.id as string);
    expect(new Set(ids).size).toBe(16);
    expect(creations.stats.items - before.items).toBe(16);
    expect(creations.stats.statements - before.statements).toBeLessThan(16);
    for (const [i, answer] of answers.entries()) {
      expect(answer.body).toMatchObject({ title: `Together ${i}`, artist_id: artist.id, status: "pending_certification", certificate_hash: null });
      const events = await p.db.selectFrom("artwork_provenance").select("event").where("artwork_id", "=", ids[i]!).orderBy("id").execute();
      // What the upload wrote (its certification may already have added `certified` after them).
      expect(events.map((e) => e.event).filter((e) => e !== "certified")).toEqual(i % 2 === 0 ? ["created", "for_sale"] : ["created"]);
    }
    const operations = await p.db.selectFrom("chain_operations").select("key").where("key", "in", ids.map((id) => `certify:${id}`)).execute();
    expect(operations).toHaveLength(16);
    for (const id of ids) expect((await waitCertified(id)).token_id).toEqual(expect.any(Number));
    expect(await artworksCount(artist.id)).toBe(16);
  });

  it("refuses bad inputs and stores nothing: type by content, size, year, price, unknown fields, missing image", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const filesBefore = filesUnder(p.storageDir);
    const form = asForm(artworkInput());
    const nextYear = new Date().getUTCFullYear() + 1;

    // A text file named .png with an image content type is still not an image.
    expectProblem(await postMultipart(p.api.url, artist.token, form, { bytes: Buffer.from("<html>not an image</html>"), filename: "fake.png", type: "image/png" }), 415, "unsupported_media_type");
    // An SVG is not one of the allowed types.
    expectProblem(await postMultipart(p.api.url, artist.token, form, { bytes: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), filename: "a.svg", type: "image/svg+xml" }), 415, "unsupported_media_type");
    const oversize = Buffer.concat([pngImage(), Buffer.alloc(20 * 1024 * 1024)]);
    expectProblem(await postMultipart(p.api.url, artist.token, form, { bytes: oversize }), 413, "payload_too_large");
    expectProblem(await postMultipart(p.api.url, artist.token, form, { bytes: Buffer.alloc(0) }), 400, "validation_failed");
    expectProblem(await postMultipart(p.api.url, artist.token, form), 400, "validation_failed");
    expectProblem(await postMultipart(p.api.url, artist.token, { ...form, year: "999" }, { bytes: pngImage() }), 400, "validation_failed");
    expectProblem(await postMultipart(p.api.url, artist.token, { ...form, dimensions: "{not json" }, { bytes: pngImage() }), 400, "validation_failed");
    expectProblem(await postMultipart(p.api.url, artist.token, { ...form, colour: "blue" }, { bytes: pngImage() }), 400, "validation_failed");
    expectProblem(await postMultipart(p.api.url, artist.token, { ...form, "__proto__[admin]": "1" }, { bytes: pngImage() }), 400, "validation_failed");

    const json = (extra: Record<string, unknown>) =>
      p.api.request("POST", "/v1/artworks", { token: artist.token, body: artworkInput({ image_url: images.url(), ...extra }) });
    const cases: [Record<string, unknown>, string][] = [
      [{ year: nextYear }, "year"],
      [{ year: 999 }, "year"],
      [{ year: 2001.5 }, "year"],
      [{ price_usd: -1 }, "price_usd"],
      [{ price_usd: 10.005 }, "price_usd"],
      [{ price_usd: 1_000_000_001 }, "price_usd"],
      [{ title: "x".repeat(201) }, "title"],
      [{ title: "   " }, "title"],
      [{ description: "x".repeat(5001) }, "description"],
      [{ dimensions: { width: -1, height: 2, unit: "cm" } }, "dimensions.width"],
      [{ dimensions: { width: 1, height: 2, unit: "furlong" } }, "dimensions.unit"],
      [{ for_sale: true, price_usd: null }, "for_sale"],
      [{ colour: "blue" }, "colour"],
      [{ image_url: "ftp://example.com/a.png" }, "image_url"],
    ];
    for (const [extra, field] of cases) {
      const res = await json(extra);
      expectProblem(res, 400, "validation_failed");
      expect(res.body.errors.map((e: { field: string }) => e.field), JSON.stringify(extra)).toContain(field);
    }
    const unknownField = await json({ colour: "blue" });
    expect(unknownField.body.errors[0].code).toBe("unknown_field");
    // As the request schemas say: JSON requires image_url, a form requires the image file and has no image_url.
    const noImage = await p.api.request("POST", "/v1/artworks", { token: artist.token, body: artworkInput() });
    expectProblem(noImage, 400, "validation_failed");
    expect(noImage.body.errors).toContainEqual(expect.objectContaining({ field: "image_url" }));
    const noFile = await postMultipart(p.api.url, artist.token, form);
    expect(noFile.body.errors).toContainEqual(expect.objectContaining({ field: "image", code: "required" }));
    const urlInForm = await postMultipart(p.api.url, artist.token, { ...form, image_url: images.url() });
    expectProblem(urlInForm, 400, "validation_failed");
    expect(urlInForm.body.errors).toContainEqual(expect.objectContaining({ field: "image_url", code: "unknown_field" }));
    const both = await postMultipart(p.api.url, artist.token, { ...form, image_url: images.url() }, { bytes: pngImage() });
    expectProblem(both, 400, "validation_failed");
    // Multipart where a route does not take it.
    const profile = await fetch(new URL(`/v1/users/${artist.id}/profile`, p.api.url), {
      method: "PATCH",
      headers: { authorization: `Bearer ${artist.token}` },
      body: (() => {
        const f = new FormData();
        f.append("bio", "x");
        return f;
      })(),
    });
    expect(profile.status).toBe(415);

    expect(await p.db.selectFrom("artworks").select("id").where("artist_id", "=", artist.id).execute()).toHaveLength(0);
    expect(await artworksCount(artist.id)).toBe(0);
    expect(filesUnder(p.storageDir)).toEqual(filesBefore);
  });

  it("is for artists and admins with artworks:write; admins may register for an artist", async () => {
    const collector = await createUser(p.api, { role: "collector" });
    const artist = await createUser(p.api, { role: "artist" });
    const reader = await createUser(p.api, { role: "artist", scope: ["read"] });
    const body = artworkInput({ image_url: images.url() });
    expectProblem(await p.api.request("POST", "/v1/artworks", { token: collector.token, body }), 403, "forbidden");
    expectProblem(await p.api.request("POST", "/v1/artworks", { token: reader.token, body }), 403, "insufficient_scope");
    expectProblem(await p.api.request("POST", "/v1/artworks", { body }), 401, "unauthenticated");
    // An artist registers only their own artworks.
    expectProblem(await p.api.request("POST", "/v1/artworks", { token: artist.token, body: { ...body, artist_id: collector.id } }), 403, "forbidden");

    const admin = await adminToken(p.api);
    const forArtist = await p.api.request("POST", "/v1/artworks", { token: admin, body: { ...body, artist_id: artist.id } });
    expect(forArtist.status).toBe(201);
    expect(forArtist.body.artist_id).toBe(artist.id);
    expect(await artworksCount(artist.id)).toBe(1);
    const forCollector = await p.api.request("POST", "/v1/artworks", { token: admin, body: { ...body, artist_id: collector.id } });
    expectProblem(forCollector, 400, "validation_failed");
  });
});

describe("PATCH /v1/artworks/:id", () => {
  it("changes price, description and sale status for the owner; certified fields are 409 immutable_field", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const art = await createCertified(artist);
    const res = await p.api.request("PATCH", `/v1/artworks/${art.id}`, {
      token: artist.token,
      body: { price_usd: 300.25, description: "Revised", for_sale: true },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: art.id, price_usd: 300.25, description: "Revised", for_sale: true });
    expect(await artworkRow(art.id)).toMatchObject({ price_cents: 30025n, description: "Revised", for_sale: true });

    const immutable: Record<string, unknown>[] = [
      { title: "New title" },
      { year: 2000 },
      { medium: "Acrylic" },
      { dimensions: { width: 1, height: 1, unit: "cm" } },
      { image_url: "https://example.com/other.png" },
      { image: "x" },
      { artist_id: artist.id },
      { price_usd: 1, title: "Sneaky" },
    ];
    for (const body of immutable) {
      const refused = await p.api.request("PATCH", `/v1/artworks/${art.id}`, { token: artist.token, body });
      expectProblem(refused, 409, "immutable_field");
    }
    expect(await artworkRow(art.id)).toMatchObject({ title: art.title, year: 2021, medium: "Oil on canvas", price_cents: 30025n });

    expectProblem(await p.api.request("PATCH", `/v1/artworks/${art.id}`, { token: artist.token, body: { colour: "red" } }), 400, "validation_failed");
    expectProblem(await p.api.request("PATCH", `/v1/artworks/${art.id}`, { token: artist.token, body: {} }), 400, "validation_failed");
    expectProblem(await p.api.request("PATCH", `/v1/artworks/${art.id}`, { token: artist.token, body: { price_usd: -5 } }), 400, "validation_failed");
    expectProblem(await p.api.request("PATCH", `/v1/artworks/${art.id}`, { token: artist.token, body: { price_usd: null } }), 400, "validation_failed");

    const delisted = await p.api.request("PATCH", `/v1/artworks/${art.id}`, { token: artist.token, body: { for_sale: false } });
    expect(delisted.body).toMatchObject({ for_sale: false });
    const detail = await p.api.request("GET", `/v1/artworks/${art.id}`);
    expect(detail.body.provenance.map((e: { event: string }) => e.event)).toEqual(["created", "certified", "for_sale", "not_for_sale"]);
    expect(detail.body.provenance[2]).toMatchObject({ actor: artist.id });
  });

  it("is refused to other artists (403) and unknown ids (404); an admin may change any", async () => {
    const owner = await createUser(p.api, { role: "artist" });
    const other = await createUser(p.api, { role: "artist" });
    const created = await postMultipart(p.api.url, owner.token, asForm(artworkInput()), { bytes: pngImage() });
    const id = created.body.id;
    expectProblem(await p.api.request("PATCH", `/v1/artworks/${id}`, { token: other.token, body: { price_usd: 1 } }), 403, "forbidden");
    expectProblem(await p.api.request("DELETE", `/v1/artworks/${id}`, { token: other.token }), 403, "forbidden");
    // Ownership is checked before immutability: a stranger learns nothing about the fields.
    expectProblem(await p.api.request("PATCH", `/v1/artworks/${id}`, { token: other.token, body: { title: "x" } }), 403, "forbidden");
    expectProblem(await p.api.request("PATCH", "/v1/artworks/art_01JD3Y5V0Q3G7W7J6T4N4C2X1M", { token: owner.token, body: { price_usd: 1 } }), 404, "not_found");
    expectProblem(await p.api.request("PATCH", "/v1/artworks/nonsense", { token: owner.token, body: { price_usd: 1 } }), 404, "not_found");
    expectProblem(await p.api.request("GET", "/v1/artworks/art_01JD3Y5V0Q3G7W7J6T4N4C2X1M"), 404, "not_found");
    expect((await artworkRow(id))!.price_cents).toBe(1250050n);

    const admin = await adminToken(p.api);
    const byAdmin = await p.api.request("PATCH", `/v1/artworks/${id}`, { token: admin, body: { price_usd: 10 } });
    expect(byAdmin.status).toBe(200);
    expect((await artworkRow(id))!.price_cents).toBe(1000n);
  });
});

describe("DELETE /v1/artworks/:id", () => {
  it("soft-deletes: 404 afterwards, gone from lists, count decremented, certificate and media preserved", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const art = await createCertified(artist);
    expect(await artworksCount(artist.id)).toBe(1);

    const res = await p.api.request("DELETE", `/v1/artworks/${art.id}`, { token: artist.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deleted: true, id: art.id, certificate_preserved: true, deleted_at: expect.any(String) });
    expect(await artworksCount(artist.id)).toBe(0);
    const row = await artworkRow(art.id);
    expect(row!.deleted_at).toBeInstanceOf(Date);
    expect(row!.status).toBe("certified");

    expectProblem(await p.api.request("GET", `/v1/artworks/${art.id}`), 404, "not_found");
    expectProblem(await p.api.request("DELETE", `/v1/artworks/${art.id}`, { token: artist.token }), 404, "not_found");
    expectProblem(await p.api.request("PATCH", `/v1/artworks/${art.id}`, { token: artist.token, body: { price_usd: 1 } }), 404, "not_found");
    const list = await p.api.request("GET", `/v1/artworks?artist_id=${artist.id}`);
    expect(list.body.data).toHaveLength(0);

    const certificate = await p.api.request("GET", `/v1/artworks/${art.id}/certificate`);
    expect(certificate.status).toBe(200);
    expect(certificate.body).toMatchObject({ artwork_id: art.id, certificate_hash: art.certificate_hash, token_id: art.token_id, verified: true });
    expect((await fetch(art.image_url)).status).toBe(200);
    const events = await p.db.selectFrom("artwork_provenance").select(["event", "actor_id"]).where("artwork_id", "=", art.id).orderBy("id").execute();
    expect(events.at(-1)).toEqual({ event: "deleted", actor_id: artist.id });
  });
});

describe("GET /v1/artworks", () => {
  it("filters by medium, price, artist, verified, for_sale and q, and paginates", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const tag = artist.id.slice(-8);
    const mk = async (extra: Record<string, unknown>) => {
      const res = await postMultipart(p.api.url, artist.token, asForm(artworkInput(extra)), { bytes: pngImage() });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const oil = await mk({ medium: "Oil on canvas", price_usd: 100, for_sale: true, title: `Sunrise ${tag}` });
    const ink = await mk({ medium: "Ink on paper", price_usd: 50.5, title: `Night ${tag}` });
    // Its image URL answers 404: its certification fails, so it stays unverified.
    const png = pngImage();
    images.respond((req, res) => (req.url?.startsWith("/missing") ? res.writeHead(404).end() : res.writeHead(200).end(png)));
    const bronzeRes = await p.api.request("POST", "/v1/artworks", {
      token: artist.token,
      body: artworkInput({ medium: "Bronze", price_usd: null, description: `cast ${tag} in 1990`, image_url: images.url(`/missing-${tag}.png`) }),
    });
    const bronze = bronzeRes.body.id as string;
    await Promise.all([waitCertified(oil), waitCertified(ink)]);
    await waitFor(async () => ((await artworkRow(bronze))!.status === "certification_failed" ? true : null), { what: "the failure" });

    const ids = async (query: string) => {
      const res = await p.api.request("GET", `/v1/artworks?artist_id=${artist.id}&${query}`);
      expect(res.status).toBe(200);
      return res.body.data.map((a: { id: string }) => a.id);
    };
    expect(await ids("")).toEqual([bronze, ink, oil]);
    expect(await ids("medium=oil")).toEqual([oil]);
    expect(await ids("price_min=50.5&price_max=99.99")).toEqual([ink]);
    expect(await ids("price_min=100")).toEqual([oil]);
    expect(await ids("for_sale=true")).toEqual([oil]);
    expect(await ids("for_sale=false")).toEqual([bronze, ink]);
    expect(await ids("verified=true")).toEqual([ink, oil]);
    expect(await ids("verified=false")).toEqual([bronze]);
    expect(await ids(`q=${tag}`)).toEqual([bronze, ink, oil]);
    expect(await ids("q=night")).toEqual([ink]);

    const page = await p.api.request("GET", `/v1/artworks?artist_id=${artist.id}&limit=2&page=2`);
    expect(page.body.pagination).toEqual({ page: 2, limit: 2, total: 3, has_more: false });
    expect(page.body.data).toHaveLength(1);
    const item = (await p.api.request("GET", `/v1/artworks?artist_id=${artist.id}&for_sale=true`)).body.data[0];
    expect(item).toEqual({
      id: oil,
      title: `Sunrise ${tag}`,
      artist_id: artist.id,
      year: 2021,
      medium: "Oil on canvas",
      price_usd: 100,
      for_sale: true,
      verified: true,
      fractional_available: false,
      thumbnail_url: `${p.api.url}/v1/artworks/${oil}/image`,
      status: "certified",
      created_at: expect.any(String),
    });

    expectProblem(await p.api.request("GET", "/v1/artworks?verified=maybe"), 400, "invalid_parameter");
    expectProblem(await p.api.request("GET", "/v1/artworks?price_min=10&price_max=5"), 400, "invalid_parameter");
    expectProblem(await p.api.request("GET", "/v1/artworks?limit=101"), 400, "invalid_parameter");
  });
});
