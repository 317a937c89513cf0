import { mkdtempSync, readFileSync } from "node:fs";
import path from "node:path";
import { generatePrivateKey } from "viem/accounts";
import { describe, expect, expectTypeOf, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { type ErrorCode as CatalogueCode, ERROR_CODES } from "../../api/src/lib/problem-types.ts";
import { signWebhook, verifyWebhookSignature as verifyOnServer } from "../../api/src/modules/webhooks/signature.ts";
import { SCHEMA_TYPES_FILE, schemaTypes } from "../../clients/typescript/generate.ts";
import { ApiError, type components, createArtPlatformClient, type ErrorCode, verifyWebhookSignature } from "../../clients/typescript/index.ts";
import { gifImage, pngImage } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { createUser, type TestUser, useIsolatedTestApi } from "../support/api.ts";
import { useReceiver } from "../support/webhooks.ts";

// A database of its own: the webhook test's ping is delivered by this server's job queue. Images
// in a directory of its own; a relayer without funds or roles: the artworks uploaded here are never
// minted, and no other file's relayer nonces are touched.
const api = useIsolatedTestApi({
  STORAGE_DIR: mkdtempSync(path.join(testEnvironment().tempDir, "sdk-storage-")),
  RELAYER_PRIVATE_KEY: generatePrivateKey(),
});
const receiver = useReceiver();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The SDK as the user, with its token; `fetch` sees every request it sends. */
function clientOf(user: TestUser, fetch?: (request: Request) => Promise<Response>) {
  return createArtPlatformClient({ baseUrl: api.url, token: user.token, fetch, retry: { baseDelayMs: 10 } });
}

async function raised(call: Promise<unknown>): Promise<ApiError> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

const postsOf = (userId: string) => api.db.selectFrom("community_posts").select(["id", "content"]).where("author_id", "=", userId).execute();

describe("the SDK's types", () => {
  it("are generated from the document the API serves: clients/typescript/schema.ts is not stale", async () => {
    const served = await api.request("GET", "/v1/openapi.json");
    const generated = await schemaTypes(served.body);
    expect(generated === readFileSync(SCHEMA_TYPES_FILE, "utf8"), "clients/typescript/schema.ts is stale: run `npm run sdk:generate`").toBe(true);
  });

  it("type ApiError.code as the error codes of the server's catalogue, through the document", async () => {
    const served = await api.request("GET", "/v1/openapi.json");
    expect(served.body.components.schemas.Problem.properties.code.enum).toEqual(ERROR_CODES);
    expectTypeOf<ErrorCode>().toEqualTypeOf<CatalogueCode>();
    expectTypeOf<ApiError["code"]>().toEqualTypeOf<CatalogueCode | `http_${number}`>();
  });

  it("leave out the request fields the server fills in (those with a default in the document)", async () => {
    const served = await api.request("GET", "/v1/openapi.json");
    const schemas: Record<string, { properties?: Record<string, { default?: unknown }>; required?: string[] }> = served.body.components.schemas;
    const defaulted = Object.entries(schemas).flatMap(([name, schema]) =>
      Object.entries(schema.properties ?? {}).flatMap(([field, property]) => (property.default === undefined ? [] : [{ field: `${name}.${field}`, required: schema.required?.includes(field) ?? false }])),
    );
    expect(defaulted).toContainEqual({ field: "OfferCreate.expires_in_hours", required: false });
    expect(defaulted.filter((d) => d.required)).toEqual([]);
    // The generated types follow `required` (openapi-typescript would otherwise require every field with a default).
    expectTypeOf<{ listing_id: string; offer_amount_usd: number; payment_method_id: string }>().toExtend<components["schemas"]["OfferCreate"]>();
    expectTypeOf<{ type: "discussion"; content: string }>().toExtend<components["schemas"]["PostCreate"]>();
  });
});

describe("the SDK against the API", () => {
  it("exchanges the API key for a token and renews it before expires_at", async () => {
    const user = await createUser(api);
    let clock = Date.now();
    const exchanges: Request[] = [];
    const bearers: string[] = [];
    const sdk = createArtPlatformClient({
      baseUrl: api.url,
      apiKey: user.apiKey,
      scope: ["users:read"],
      now: () => clock,
      fetch: (request) => {
        if (new URL(request.url).pathname === "/v1/auth/token") exchanges.push(request);
        else bearers.push(request.headers.get("Authorization")!);
        return fetch(request);
      },
    });
    const tokens = () => api.db.selectFrom("access_tokens").select(["scopes", "expires_at"]).where("user_id", "=", user.id).orderBy("created_at").execute();
    const before = (await tokens()).length; // createUser's own

    const { data: me } = await sdk.GET("/v1/users/me");
    expect(me.id).toBe(user.id);
    await sdk.GET("/v1/users/me");
    expect(exchanges).toHaveLength(1);
    expect(bearers[1]).toBe(bearers[0]);
    expect(bearers[0]).toBe(`Bearer ${await sdk.accessToken()}`);
    expect(exchanges[0]!.headers.get("Idempotency-Key")).toMatch(UUID);
    const issued = (await tokens()).slice(before);
    expect(issued).toHaveLength(1);
    expect(issued[0]!.scopes).toEqual(["users:read"]);

    // Just under five minutes before it expires (the default margin), the next call renews it first.
    clock = issued[0]!.expires_at.getTime() - 299_000;
    const { data: again } = await sdk.GET("/v1/users/me");
    expect(again.id).toBe(user.id);
    expect(exchanges).toHaveLength(2);
    expect(bearers).toHaveLength(3);
    expect(bearers[2]).not.toBe(bearers[0]);
    expect((await tokens()).slice(before)).toHaveLength(2);
  });

  it("shares one exchange among calls made at once", async () => {
    const user = await createUser(api);
    let exchanges = 0;
    const sdk = createArtPlatformClient({
      baseUrl: api.url,
      apiKey: user.apiKey,
      scope: ["users:read"],
      fetch: (request) => {
        if (new URL(request.url).pathname === "/v1/auth/token") exchanges++;
        return fetch(request);
      },
    });
    const answers = await Promise.all([1, 2, 3, 4].map(() => sdk.GET("/v1/users/me")));
    expect(answers.map((a) => a.data.id)).toEqual([user.id, user.id, user.id, user.id]);
    expect(exchanges).toBe(1);
  });

  it("sends every POST with a random Idempotency-Key: after a lost answer the retry gets the same resource", async () => {
    const user = await createUser(api);
    const keys: string[] = [];
    let lost = 0;
    const sdk = clientOf(user, async (request) => {
      keys.push(request.headers.get("Idempotency-Key") ?? "none");
      const response = await fetch(request);
      // The API created the post; its answer is lost on the way back.
      if (lost++ === 0) {
        await response.body?.cancel();
        throw new TypeError("fetch failed: connection reset");
      }
      return response;
    });

    const { data: post, response } = await sdk.POST("/v1/community/posts", { body: { type: "discussion", content: "Varnish: gloss or satin?" } });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(UUID);
    expect(keys[1]).toBe(keys[0]);
    expect(response.status).toBe(201);
    expect(response.headers.get("Idempotent-Replayed")).toBe("true");
    expect(post.author_id).toBe(user.id);
    expect(await postsOf(user.id)).toEqual([{ id: post.post_id, content: "Varnish: gloss or satin?" }]);

    // Each call has a key of its own; a key the caller gives is kept.
    const { data: other } = await sdk.POST("/v1/community/posts", { body: { type: "discussion", content: "Another" }, headers: { "Idempotency-Key": "mine-1" } });
    const { data: replayed } = await sdk.POST("/v1/community/posts", { body: { type: "discussion", content: "Another" }, headers: { "Idempotency-Key": "mine-1" } });
    expect(keys.slice(2)).toEqual(["mine-1", "mine-1"]);
    expect(replayed.post_id).toBe(other.post_id);
    expect((await postsOf(user.id)).map((p) => p.id).sort()).toEqual([post.post_id, other.post_id].sort());
  });

  it("iterates every page of a list endpoint", async () => {
    const user = await createUser(api);
    const sdk = clientOf(user);
    const created: string[] = [];
    for (let i = 1; i <= 5; i++) created.push((await sdk.POST("/v1/community/posts", { body: { type: "discussion", content: `Note ${i}` } })).data.post_id);

    const pages = [];
    for await (const page of sdk.pages("/v1/community/posts", { params: { query: { author_id: user.id, limit: 2 } } })) pages.push(page);
    expect(pages.map((p) => p.pagination)).toEqual([
      { page: 1, limit: 2, total: 5, has_more: true },
      { page: 2, limit: 2, total: 5, has_more: true },
      { page: 3, limit: 2, total: 5, has_more: false },
    ]);
    // Newest first, each post once.
    expect(pages.flatMap((p) => p.data.map((post) => post.post_id))).toEqual([...created].reverse());

    // From a later page on.
    const rest = [];
    for await (const page of sdk.pages("/v1/community/posts", { params: { query: { author_id: user.id, limit: 2, page: 2 } } })) rest.push(page.pagination.page);
    expect(rest).toEqual([2, 3]);
  });

  it("uploads files as multipart/form-data: an artwork's image, whose retry after a lost answer replays the same artwork", async () => {
    const artist = await createUser(api, { role: "artist" });
    const bodies: { contentType: string | null; key: string | null }[] = [];
    let lost = 0;
    const sdk = clientOf(artist, async (request) => {
      bodies.push({ contentType: request.headers.get("content-type"), key: request.headers.get("Idempotency-Key") });
      const response = await fetch(request);
      if (lost++ === 0) {
        await response.body?.cancel();
        throw new TypeError("fetch failed: connection reset");
      }
      return response;
    });
    const image = pngImage();
    const { data: created, response } = await sdk.POST("/v1/artworks", {
      body: {
        title: "Harbour at Dawn",
        year: "2021",
        medium: "Oil on canvas",
        dimensions: JSON.stringify({ width: 60, height: 80, unit: "cm" }),
        price_usd: "12500.50",
        for_sale: "true",
        image: new File([image], "harbour.png", { type: "image/png" }),
      },
    });
    // Both attempts sent the whole form, with one key: the second got the first one's answer.
    expect(bodies).toHaveLength(2);
    expect(bodies[0]!.contentType).toMatch(/^multipart\/form-data; boundary=/);
    expect(bodies[1]).toEqual(bodies[0]);
    expect(bodies[0]!.key).toMatch(UUID);
    expect(response.status).toBe(201);
    expect(response.headers.get("Idempotent-Replayed")).toBe("true");
    expect(created).toMatchObject({ title: "Harbour at Dawn", artist_id: artist.id, status: "pending_certification" });
    expect(await api.db.selectFrom("artworks").select("id").where("artist_id", "=", artist.id).execute()).toEqual([{ id: created.id }]);

    // The text parts parsed as their fields, the file part stored byte for byte.
    const { data: detail } = await sdk.GET("/v1/artworks/{id}", { params: { path: { id: created.id } } });
    expect(detail).toMatchObject({ year: 2021, medium: "Oil on canvas", dimensions: { width: 60, height: 80, unit: "cm" }, price_usd: 12500.5, for_sale: true });
    const { data: stored, response: served } = await sdk.GET("/v1/artworks/{id}/image", { params: { path: { id: created.id } }, parseAs: "arrayBuffer" });
    expect(served.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(stored)).toEqual(image);
  });

  it("sends a list of files as parts of one name (a post's images), and JSON when no field holds a file", async () => {
    const user = await createUser(api);
    const types: (string | null)[] = [];
    const sdk = clientOf(user, (request) => {
      types.push(request.headers.get("content-type"));
      return fetch(request);
    });
    const images = [new File([pngImage()], "one.png", { type: "image/png" }), new Blob([gifImage()], { type: "image/gif" })];
    const { data: post } = await sdk.POST("/v1/community/posts", { body: { type: "discussion", content: "Two studies", tags: ["sketch", "study"], images } });
    expect(types[0]).toMatch(/^multipart\/form-data; boundary=/);
    expect(post).toMatchObject({ content: "Two studies", tags: ["sketch", "study"] });
    expect(post.images).toHaveLength(2);

    await sdk.POST("/v1/community/posts", { body: { type: "discussion", content: "No pictures" } });
    expect(types[1]).toBe("application/json");
  });

  it("raises problem answers as ApiError: 404 not_found, 400 validation_failed, 422 idempotency_key_reused", async () => {
    const user = await createUser(api);
    const sdk = clientOf(user);

    const missing = await raised(sdk.GET("/v1/artworks/{id}", { params: { path: { id: "art_01JD3Y5V0Q3G7W7J6T4N4C2X1M" } } }));
    expect(missing).toMatchObject({ status: 404, code: "not_found", title: "Not found", detail: "Artwork not found", errors: [] });
    expect(missing.requestId).toMatch(/^req_/);
    expect(missing.body).toMatchObject({ type: "/problems/not_found", status: 404, request_id: missing.requestId });
    expect(missing.message).toBe("404 not_found: Artwork not found");

    const invalid = await raised(sdk.POST("/v1/community/posts", { body: { type: "discussion", content: "" } }));
    expect(invalid).toMatchObject({ status: 400, code: "validation_failed", title: "Validation failed" });
    expect(invalid.errors.map((e) => e.field)).toEqual(["content"]);

    const headers = { "Idempotency-Key": "reused-key" };
    await sdk.POST("/v1/community/posts", { body: { type: "discussion", content: "First" }, headers });
    const reused = await raised(sdk.POST("/v1/community/posts", { body: { type: "discussion", content: "Second" }, headers }));
    expect(reused).toMatchObject({ status: 422, code: "idempotency_key_reused" });
    expect((await postsOf(user.id)).map((p) => p.content)).toEqual(["First"]);
  });

  it("verifies a real webhook delivery's signatures, and refuses a tampered body, another secret and an old timestamp", async () => {
    const user = await createUser(api);
    const sdk = clientOf(user);
    const url = receiver.endpoint();
    const { data: subscription } = await sdk.POST("/v1/webhooks", { body: { url, events: ["artwork.certified"] } });
    await sdk.POST("/v1/webhooks/{id}/test", { params: { path: { id: subscription.id } } });
    const [delivery] = await receiver.waitForRequests(url, 1);
    const { headers, body } = delivery!;
    const secret = subscription.secret!;
    const now = Number(headers["webhook-timestamp"]) * 1000;

    // Standard Webhooks headers, else X-Service-Signature; Node's headers or a fetch Headers.
    expect(await verifyWebhookSignature(body, headers, secret, { now })).toBe(true);
    const serviceOnly = { "x-service-signature": headers["x-service-signature"] };
    expect(await verifyWebhookSignature(new TextEncoder().encode(body), serviceOnly, secret, { now })).toBe(true);
    expect(await verifyWebhookSignature(body, new Headers(headers as Record<string, string>), secret, { now })).toBe(true);

    const tampered = body.replace('"ping"', '"pong"');
    expect(tampered).not.toBe(body);
    expect(await verifyWebhookSignature(tampered, headers, secret, { now })).toBe(false);
    expect(await verifyWebhookSignature(tampered, serviceOnly, secret, { now })).toBe(false);
    const { data: other } = await sdk.POST("/v1/webhooks", { body: { url: receiver.endpoint(), events: ["artwork.certified"] } });
    expect(await verifyWebhookSignature(body, headers, other.secret!, { now })).toBe(false);
    expect(await verifyWebhookSignature(body, {}, secret, { now })).toBe(false);

    // Signed six minutes ago by the API's signer: refused with the default 5-minute tolerance.
    const old = Math.floor(now / 1000) - 360;
    const stale = signWebhook({ id: "whd_old", timestamp: old, body, secrets: [secret] });
    expect(await verifyWebhookSignature(body, stale, secret, { now })).toBe(false);
    expect(await verifyWebhookSignature(body, { "X-Service-Signature": stale["X-Service-Signature"] }, secret, { now })).toBe(false);
    expect(await verifyWebhookSignature(body, stale, secret, { now, toleranceSeconds: 600 })).toBe(true);
    expect(await verifyWebhookSignature(body, headers, secret, { now: now + 301_000 })).toBe(false);
  });

  it("accepts either secret during a rotation, as the signer sends both", async () => {
    const [newer, older] = ["whsec_" + Buffer.alloc(32, 1).toString("base64"), "whsec_" + Buffer.alloc(32, 2).toString("base64")];
    const body = JSON.stringify({ id: "whe_1", event: "ping" });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = signWebhook({ id: "whd_1", timestamp, body, secrets: [newer, older] });
    for (const secret of [newer, older]) {
      expect(await verifyWebhookSignature(body, headers, secret)).toBe(true);
      expect(await verifyWebhookSignature(body, { "X-Service-Signature": headers["X-Service-Signature"] }, secret)).toBe(true);
    }
    expect(await verifyWebhookSignature(body, headers, "whsec_" + Buffer.alloc(32, 3).toString("base64"))).toBe(false);
  });

  it("takes its arguments as the server's verifier and the standardwebhooks package do: (payload, headers) with the secret", async () => {
    const secret = "whsec_" + Buffer.alloc(32, 4).toString("base64");
    const body = JSON.stringify({ id: "whe_2", event: "ping" });
    const timestamp = Math.floor(Date.now() / 1000);
    const server = signWebhook({ id: "whd_2", timestamp, body, secrets: [secret] });
    const standard = { "webhook-id": "whd_2", "webhook-timestamp": String(timestamp), "webhook-signature": new Webhook(secret).sign("whd_2", new Date(timestamp * 1000), body) };
    expect(standard["webhook-signature"]).toBe(server["webhook-signature"]);

    for (const headers of [server, standard]) {
      expect(await verifyWebhookSignature(body, headers, secret)).toBe(true);
      expect(verifyOnServer(body, headers, secret)).toBe(true);
      expect(new Webhook(secret).verify(body, headers)).toEqual({ id: "whe_2", event: "ping" });
      const tampered = body.replace("ping", "pong");
      expect([await verifyWebhookSignature(tampered, headers, secret), verifyOnServer(tampered, headers, secret)]).toEqual([false, false]);
    }
    // The SDK's former order, (secret, headers, body), is refused rather than answered false.
    await expect(verifyWebhookSignature(secret, server, body)).rejects.toThrow(TypeError);
    // One signature for both: code written for the one verifier compiles and answers with the other.
    expectTypeOf<Parameters<typeof verifyWebhookSignature>>().toEqualTypeOf<Parameters<typeof verifyOnServer>>();
  });
});
