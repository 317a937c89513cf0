/**
 * Artworks over HTTP on a platform of their own (database, Ponder, relayer; the run's chain):
 * registration by JSON and multipart, refused inputs that store nothing, owner/admin rules,
 * immutable certified fields, soft delete, listing filters, media, metadata and documents, and
 * a failed certification retried by an admin. Each test creates its own users and artworks.
 */
import { createHash } from "node:crypto";
import { sql } from "kysely";
import { keccak256, stringToBytes } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestUser, adminToken, createUser, expectProblem, startTestApi } from "./helpers.ts";
import {
  artworkInput,
  filesUnder,
  formFields,
  gifImage,
  jpegImage,
  pngImage,
  postMultipart,
  startImageServer,
  useArtworkPlatform,
  webpImage,
} from "../support/artworks.ts";
import { waitFor } from "../support/wait.ts";

const p = useArtworkPlatform();
let images: Awaited<ReturnType<typeof startImageServer>>;

beforeAll(async () => {
  images = await startImageServer();
});
afterAll(async () => {
  await images?.close();
});

const asForm = formFields;

async function artworkRow(id: string) {
  return p.db.selectFrom("artworks").selectAll().where("id", "=", id).executeTakeFirst();
}

/** The artist's `artworks_count` as their public profile shows it. */
async function artworksCount(userId: string): Promise<number> {
  const res = await p.api.request("GET", `/v1/users/${userId}`);
  expect(res.status).toBe(200);
  return res.body.artworks_count as number;
}

async function waitCertified(id: string) {
  return waitFor(
    async () => {
      const res = await p.api.request("GET", `/v1/artworks/${id}`);
      return res.body?.status === "certified" ? res.body : null;
    },
    { timeoutMs: 20_000, what: `certification of ${id}` },
  );
}

async function createCertified(artist: TestUser, extra: Record<string, unknown> = {}) {
  const res = await postMultipart(p.api.url, artist.token, asForm(artworkInput(extra)), { bytes: pngImage() });
  expect(res.status).toBe(201);
  return waitCertified(res.body.id);
}

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
    expect(detail.provenance.map((e: { event: string }) => e.event)).toEqual(["created", "listed", "certified"]);
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
      expect(events.map((e) => e.event)).toEqual(i % 2 === 0 ? ["created", "listed"] : ["created"]);
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
    expect(detail.body.provenance.map((e: { event: string }) => e.event)).toEqual(["created", "certified", "listed", "delisted"]);
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
