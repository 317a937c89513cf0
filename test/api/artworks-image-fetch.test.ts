/**
 * Slow image URLs must not starve anyone else's certifications: downloads run in a job runner of
 * their own, outside the certification slots, and one artist has at most IMAGE_FETCH_PER_USER of
 * them in flight. Artist A's URLs hang (the receiver holds every request until the test lets go);
 * meanwhile artist B's multipart uploads and artist C's fast URL are certified, A's extra
 * downloads wait for A's slots, and A's artworks stay pending until their images arrive. Ordering
 * and state only: the held requests are released by the test, never by a clock.
 */
import type { ServerResponse } from "node:http";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createUser } from "../support/api.ts";
import { artworkInput, formFields, pngImage, postMultipart, startImageServer, useArtworkPlatform } from "../support/artworks.ts";
import { waitFor } from "../support/wait.ts";

// Two certification slots: with downloads inside them (before), two hanging URLs took both.
const p = useArtworkPlatform({
  CERTIFICATION_CONCURRENCY: "2",
  IMAGE_FETCH_CONCURRENCY: "4",
  IMAGE_FETCH_PER_USER: "2",
  IMAGE_FETCH_TIMEOUT_MS: "120000",
});

let images: Awaited<ReturnType<typeof startImageServer>>;
const held: ServerResponse[] = [];
const slow = { inFlight: 0, maxInFlight: 0, requested: 0, hold: true };
const png = pngImage();
beforeAll(async () => {
  images = await startImageServer();
  images.respond((req, res) => {
    if (!req.url?.startsWith("/slow/")) return void res.writeHead(200, { "content-type": "image/png" }).end(png);
    slow.requested++;
    if (!slow.hold) return void res.writeHead(200, { "content-type": "image/png" }).end(png);
    slow.inFlight++;
    slow.maxInFlight = Math.max(slow.maxInFlight, slow.inFlight);
    res.on("close", () => slow.inFlight--);
    held.push(res);
  });
});
afterAll(async () => {
  await images?.close();
});

const statusOf = async (ids: string[]) =>
  (await p.db.selectFrom("artworks").select(["id", "status", "image_sha256"]).where("id", "in", ids).execute()).map((r) => r.status);

it("certifies other users' uploads while one user's image URLs hang; that user has at most its cap of downloads in flight", async () => {
  const [a, b, c] = await Promise.all([createUser(p.api, { role: "artist" }), createUser(p.api, { role: "artist" }), createUser(p.api, { role: "artist" })]);

  const slowIds: string[] = [];
  for (let i = 0; i < 6; i++) {
    const res = await p.api.request("POST", "/v1/artworks", { token: a.token, body: artworkInput({ image_url: images.url(`/slow/${i}.png`) }) });
    expect(res.status).toBe(201);
    slowIds.push(res.body.id);
  }
  // A's downloads fill A's share of the slots and hang there.
  await waitFor(() => held.length === 2, { what: "A's first two downloads in flight" });

  const fastIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await postMultipart(p.api.url, b.token, formFields(artworkInput()), { bytes: pngImage() });
    expect(res.status).toBe(201);
    fastIds.push(res.body.id);
  }
  const byUrl = await p.api.request("POST", "/v1/artworks", { token: c.token, body: artworkInput({ image_url: images.url("/fast/c.png") }) });
  expect(byUrl.status).toBe(201);
  fastIds.push(byUrl.body.id);

  // B's uploads and C's URL are certified while every one of A's downloads still hangs.
  await waitFor(async () => (await statusOf(fastIds)).every((s) => s === "certified"), { timeoutMs: 30_000, what: "B's and C's certifications" });
  expect(held.filter((res) => !res.writableEnded)).toHaveLength(2);
  expect(slow).toMatchObject({ inFlight: 2, maxInFlight: 2, requested: 2 });
  const waiting = await p.db.selectFrom("artworks").select(["status", "image_sha256", "certification_error"]).where("id", "in", slowIds).execute();
  expect(waiting).toEqual(slowIds.map(() => ({ status: "pending_certification", image_sha256: null, certification_error: null })));
  const detail = await p.api.request("GET", `/v1/artworks/${slowIds[0]}`);
  expect(detail.body).toMatchObject({ status: "pending_certification", verified: false, certificate_hash: null });

  // A's images arrive: all of A's artworks are certified, never more than two downloads at once.
  slow.hold = false;
  for (const res of held.splice(0)) res.writeHead(200, { "content-type": "image/png" }).end(png);
  await waitFor(async () => (await statusOf(slowIds)).every((s) => s === "certified"), { timeoutMs: 30_000, what: "A's certifications" });
  expect(slow.maxInFlight).toBe(2);
  expect(slow.requested).toBe(6);
  for (const id of [...slowIds, ...fastIds]) {
    const events = await p.db.selectFrom("outbox_events").select("id").where("event_type", "=", "artwork.certified").where(sql`payload->>'artwork_id'`, "=", id).execute();
    expect(events).toHaveLength(1);
  }
  // Nothing is left counting against A's share.
  const leases = await p.db.selectFrom("artworks").select("image_fetch_lease_until").where("id", "in", slowIds).execute();
  expect(leases.every((r) => r.image_fetch_lease_until === null)).toBe(true);
}, 90_000);
