/**
 * Hostile input from the security review (issue 7): control characters and lone surrogates in
 * every string field (JSON, query, path, multipart), numbers in multipart text, an over-long or
 * internal image_url, malformed percent-escapes in paths, bodies that lie about their
 * Content-Encoding, the verification page's 404 and the Content-Security-Policy of /docs. Each
 * refusal is a 400 problem+json that stored nothing.
 */
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_API_KEY, adminToken, createUser, expectProblem, type TestResponse, type TestUser } from "../support/api.ts";
import { artworkInput, filesUnder, formFields, pngImage, postMultipart, startImageServer, useArtworkPlatform } from "../support/artworks.ts";
import { launchChromium } from "../support/browser.ts";
import { waitFor } from "../support/wait.ts";

const p = useArtworkPlatform();
// Answers 404 to everything: an artwork whose image_url points here fails certification for good.
let images: Awaited<ReturnType<typeof startImageServer>>;
beforeAll(async () => {
  images = await startImageServer();
});
afterAll(async () => {
  await images?.close();
});

const NUL = "\u0000";
const PUBLIC_IMAGE = "https://93.184.216.34/art.png"; // a public literal: never fetched, the requests here fail validation

type CountedTable = "users" | "api_keys" | "webhook_subscriptions" | "artworks" | "artwork_provenance" | "outbox_events";

/**
 * Row counts of the tables a refused request could have written to. Provenance and outbox rows are
 * also written by the certification pipeline, so only tests that wait for it count those.
 */
async function tableCounts(tables: CountedTable[] = ["users", "api_keys", "webhook_subscriptions", "artworks"]) {
  const counts: Partial<Record<CountedTable, number>> = {};
  for (const table of tables) {
    counts[table] = Number((await p.db.selectFrom(table).select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n);
  }
  return counts;
}

async function createArtwork(artist: TestUser): Promise<string> {
  const res = await postMultipart(p.api.url, artist.token, formFields(artworkInput()), { bytes: pngImage() });
  expect(res.status).toBe(201);
  return res.body.id;
}

/** Waits until the pipeline is done with the artwork (and so has written all it writes). */
async function settled(artworkId: string, status: "certified" | "certification_failed"): Promise<void> {
  await waitFor(
    async () => {
      const row = await p.db.selectFrom("artworks").select("status").where("id", "=", artworkId).executeTakeFirstOrThrow();
      return row.status === status ? true : null;
    },
    { timeoutMs: 20_000, what: `${status} of ${artworkId}` },
  );
}

function expectFieldProblem(res: TestResponse, status: number, code: string, field: string, label: string): void {
  expect(res.status, `${label}: ${res.text}`).toBe(status);
  expectProblem(res, status, code);
  expect(res.body.errors, label).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
}

describe("control characters and lone surrogates in string fields", () => {
  it("refuses NUL in each of the 15 reported places (and the other text fields) with 400, storing nothing", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const admin = await adminToken(p.api);
    const artworkId = await createArtwork(artist);
    // An admin may verify only a failed (or pending) artwork: with a certified one the NUL would never reach the database.
    const failed = await p.api.request("POST", "/v1/artworks", { token: artist.token, body: artworkInput({ image_url: images.url("/missing.png") }) });
    expect(failed.status).toBe(201);
    await settled(artworkId, "certified");
    await settled(failed.body.id, "certification_failed");
    const artworkRow = () => p.db.selectFrom("artworks").select(["title", "medium", "description", "certified_by"]).where("id", "=", artworkId).executeTakeFirstOrThrow();
    const userRow = () => p.db.selectFrom("users").select(["display_name", "bio", "location", "website", "updated_at"]).where("id", "=", artist.id).executeTakeFirstOrThrow();
    const allTables: CountedTable[] = ["users", "api_keys", "webhook_subscriptions", "artworks", "artwork_provenance", "outbox_events"];
    const [artworkBefore, userBefore, countsBefore] = [await artworkRow(), await userRow(), await tableCounts(allTables)];
    const bad = `bad${NUL}text`;
    const q = encodeURIComponent(bad);

    const body: [string, string, unknown, string, string?][] = [
      // [label, method path, body, field, token]
      ["artwork title", `POST /v1/artworks`, artworkInput({ title: bad, image_url: PUBLIC_IMAGE }), "title"],
      ["artwork description", `POST /v1/artworks`, artworkInput({ description: bad, image_url: PUBLIC_IMAGE }), "description"],
      ["artwork medium", `POST /v1/artworks`, artworkInput({ medium: bad, image_url: PUBLIC_IMAGE }), "medium"],
      ["artwork image_url", `POST /v1/artworks`, artworkInput({ image_url: `${PUBLIC_IMAGE}${NUL}` }), "image_url"],
      ["PATCH artwork description", `PATCH /v1/artworks/${artworkId}`, { description: bad }, "description"],
      ["profile display_name", `PATCH /v1/users/${artist.id}/profile`, { display_name: bad }, "display_name"],
      ["profile bio", `PATCH /v1/users/${artist.id}/profile`, { bio: bad }, "bio"],
      ["profile location", `PATCH /v1/users/${artist.id}/profile`, { location: bad }, "location"],
      ["profile website", `PATCH /v1/users/${artist.id}/profile`, { website: `https://example.com/${NUL}` }, "website"],
      ["api key name", `POST /v1/api-keys`, { name: bad }, "name"],
      ["webhook description", `POST /v1/webhooks`, { url: "https://93.184.216.34/hook", events: ["*"], description: bad }, "description"],
      ["webhook url", `POST /v1/webhooks`, { url: `https://93.184.216.34/${NUL}`, events: ["*"] }, "url"],
      ["admin display_name", `POST /v1/admin/users`, { username: `nul_${artworkId.slice(-8).toLowerCase()}`, email: "nul@example.test", display_name: bad }, "display_name", admin],
      ["override_reason", `POST /v1/admin/artworks/${failed.body.id}/verify`, { override_reason: bad }, "override_reason", admin],
      ["inspector_id", `POST /v1/admin/artworks/${failed.body.id}/verify`, { override_reason: "inspected", inspector_id: bad }, "inspector_id", admin],
      ["token api_key", `POST /v1/auth/token`, { api_key: `${ADMIN_API_KEY}${NUL}`, scope: ["read"] }, "api_key"],
    ];
    for (const [label, route, json, field, token] of body) {
      const [method, path] = route.split(" ") as [string, string];
      const res = await p.api.request(method, path, { token: token ?? artist.token, body: json });
      expectFieldProblem(res, 400, "validation_failed", field, label);
    }

    const query: [string, string, string, string?][] = [
      ["query medium", `/v1/artworks?medium=${q}`, "medium"],
      ["query artist_id", `/v1/artworks?artist_id=${q}`, "artist_id"],
      ["query q", `/v1/artworks?q=${q}`, "q"],
      ["admin q", `/v1/admin/users?q=${q}`, "q", admin],
      ["path artwork id", `/v1/artworks/${q}`, "id"],
      ["path user id", `/v1/users/${q}`, "id"],
      ["path verify page", `/verify/${q}`, "artwork_id"],
    ];
    for (const [label, path, field, token] of query) {
      const res = await p.api.request("GET", path, { token: token ?? artist.token });
      expectFieldProblem(res, 400, "invalid_parameter", field, label);
    }

    expect(await tableCounts(allTables)).toEqual(countsBefore);
    expect(await artworkRow()).toEqual(artworkBefore);
    expect(await p.db.selectFrom("artworks").select(["status", "certified_by"]).where("id", "=", failed.body.id).executeTakeFirstOrThrow()).toEqual({
      status: "certification_failed",
      certified_by: null,
    });
    expect(await userRow()).toEqual(userBefore);
  });

  it("refuses other control characters and lone surrogates; multiline text keeps newline, CRLF and tab", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const artworkId = await createArtwork(artist);
    const before = await tableCounts();

    for (const title of ["esc\u001b[31m", "del\u007f", "c1\u0085", "line\nbreak", "tab\tin title", "lone \ud800 high", "lone \udc00 low"]) {
      const res = await p.api.request("POST", "/v1/artworks", { token: artist.token, body: artworkInput({ title, image_url: PUBLIC_IMAGE }) });
      expectFieldProblem(res, 400, "validation_failed", "title", JSON.stringify(title));
    }
    for (const description of ["bell\u0007", "lone CR\rhere", "surrogate \udbff"]) {
      const res = await p.api.request("PATCH", `/v1/artworks/${artworkId}`, { token: artist.token, body: { description } });
      expectFieldProblem(res, 400, "validation_failed", "description", JSON.stringify(description));
    }
    expect(await tableCounts()).toEqual(before);

    const multiline = "First line\n\tindented\r\nWindows line 🎨";
    const ok = await p.api.request("PATCH", `/v1/artworks/${artworkId}`, { token: artist.token, body: { description: multiline } });
    expect(ok.status).toBe(200);
    const stored = await p.db.selectFrom("artworks").select("description").where("id", "=", artworkId).executeTakeFirstOrThrow();
    expect(stored.description).toBe(multiline);
  });

  it("applies the same schemas to multipart form fields", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const before = await tableCounts();
    const filesBefore = filesUnder(p.storageDir);
    for (const [field, value] of [["title", `Harbour${NUL}`], ["medium", `Oil${NUL}`], ["description", `Light${NUL}`], ["dimensions[unit]", `cm${NUL}`]] as const) {
      const fields = { ...formFields(artworkInput({ dimensions: null })), "dimensions[width]": "60", "dimensions[height]": "80", "dimensions[unit]": "cm", [field]: value };
      const res = await postMultipart(p.api.url, artist.token, fields, { bytes: pngImage() });
      expectFieldProblem(res, 400, "validation_failed", field.replace(/\[(\w+)\]/, ".$1"), field);
    }
    expect(await tableCounts()).toEqual(before);
    expect(filesUnder(p.storageDir)).toEqual(filesBefore);
  });
});

describe("multipart numbers", () => {
  it("accepts plain decimal text only: hex, exponents, padding, signs and Infinity are refused", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const before = await tableCounts();
    const base = () => ({ ...formFields(artworkInput({ dimensions: null })), "dimensions[width]": "60", "dimensions[height]": "80", "dimensions[unit]": "cm" });
    const cases: [string, string, string][] = [
      ["year", "0x7e4", "year"],
      ["year", "1e3", "year"],
      ["year", " 2021 ", "year"],
      ["year", "+2021", "year"],
      ["year", "Infinity", "year"],
      ["year", "0b11111100101", "year"],
      ["price_usd", "1e3", "price_usd"],
      ["price_usd", "0x10", "price_usd"],
      ["price_usd", "12.", "price_usd"],
      ["dimensions[width]", "0x3c", "dimensions.width"],
      ["dimensions[height]", "8e1", "dimensions.height"],
    ];
    for (const [name, value, field] of cases) {
      const res = await postMultipart(p.api.url, artist.token, { ...base(), [name]: value }, { bytes: pngImage() });
      expectFieldProblem(res, 400, "validation_failed", field, `${name}=${JSON.stringify(value)}`);
    }
    expect(await tableCounts()).toEqual(before);

    const ok = await postMultipart(p.api.url, artist.token, { ...base(), year: "2021", price_usd: "12500.50", "dimensions[width]": "60.5" }, { bytes: pngImage() });
    expect(ok.status, ok.text).toBe(201);
    const stored = await p.db.selectFrom("artworks").select(["year", "price_cents", "dimensions"]).where("id", "=", ok.body.id).executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ year: 2021, price_cents: 1250050n });
    expect(stored.dimensions).toMatchObject({ width: 60.5, height: 80, unit: "cm" });
  });
});

describe("image_url", () => {
  it("says an over-long URL is too long, not that it is not a URL", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const before = await tableCounts();
    const res = await p.api.request("POST", "/v1/artworks", { token: artist.token, body: artworkInput({ image_url: `https://example.com/${"a".repeat(2100)}.png` }) });
    expectProblem(res, 400, "validation_failed");
    expect(res.body.errors).toEqual([{ field: "image_url", code: "too_big", message: "must be at most 2,048 characters" }]);
    expect(await tableCounts()).toEqual(before);
  });

  it("refuses internal addresses under the development setting, which allows loopback only", async () => {
    expect(p.api.config.outboundPolicy.allowPrivate).toBe(true);
    const artist = await createUser(p.api, { role: "artist" });
    const before = await tableCounts();
    for (const host of ["169.254.169.254", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1", "[fe80::1]", "[fd00::1]", "224.0.0.1", "0.0.0.0", "[::]", "198.18.0.1", "[::ffff:a9fe:a9fe]"]) {
      const url = `http://${host}/latest/meta-data/iam.png`;
      const res = await p.api.request("POST", "/v1/artworks", { token: artist.token, body: artworkInput({ image_url: url }) });
      expectProblem(res, 400, "validation_failed");
      expect(res.body.errors, url).toEqual([expect.objectContaining({ field: "image_url", code: "invalid_url" })]);
    }
    expect(await tableCounts()).toEqual(before);
  });
});

describe("malformed requests", () => {
  it("answers a malformed percent-escape in a path with 400 invalid_parameter", async () => {
    const user = await createUser(p.api);
    for (const [method, path] of [
      ["GET", "/v1/artworks/%ff"],
      ["GET", "/v1/artworks/%E0%A4%A"],
      ["GET", "/v1/artworks/%ff/certificate"],
      ["PATCH", "/v1/artworks/%c0%af"],
      ["GET", "/v1/users/%ff"],
      ["PATCH", "/v1/users/%ff/profile"],
      ["GET", "/v1/webhooks/%ff"],
      ["GET", "/v1/webhooks/whs_x/deliveries/%ff"],
      ["DELETE", "/v1/api-keys/%ff"],
      ["GET", "/verify/%ff"],
    ] as const) {
      const res = await p.api.request(method, path, { token: user.token, ...(method === "PATCH" ? { body: { bio: "x" } } : {}) });
      expectProblem(res, 400, "invalid_parameter");
      expect(res.body.errors, path).toEqual([expect.objectContaining({ field: "path", code: "invalid_encoding" })]);
    }
  });

  it("answers a body that is not what its Content-Encoding says with 400, an unknown encoding with 415, and reads real gzip", async () => {
    const json = JSON.stringify({ api_key: ADMIN_API_KEY, scope: ["read"] });
    const post = (encoding: string, body: string | Buffer) =>
      p.api.request("POST", "/v1/auth/token", { rawBody: body, headers: { "content-type": "application/json", "content-encoding": encoding } });
    for (const encoding of ["gzip", "br", "deflate"]) {
      const res = await post(encoding, json);
      expect(res.status, `${encoding}: ${res.text}`).toBe(400);
      expectProblem(res, 400, "invalid_json");
    }
    expectProblem(await post("x-gzip", json), 415, "unsupported_media_type");
    for (const [encoding, bytes] of [["gzip", gzipSync(json)], ["br", brotliCompressSync(json)], ["deflate", deflateSync(json)]] as const) {
      const res = await post(encoding, bytes);
      expect(res.status, `${encoding}: ${res.text}`).toBe(201);
    }
    const user = await createUser(p.api);
    const before = await tableCounts();
    const webhook = await p.api.request("POST", "/v1/webhooks", {
      token: user.token,
      rawBody: JSON.stringify({ url: "https://93.184.216.34/hook", events: ["*"] }),
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
    });
    expectProblem(webhook, 400, "invalid_json");
    expect(await tableCounts()).toEqual(before);
  });

  // Found by test/api/fuzz.test.ts.
  it("refuses bytes that are not UTF-8 (JSON and form fields) and JSON nested deeper than 64, storing nothing", async () => {
    const user = await createUser(p.api);
    const posts = async () => Number((await p.db.selectFrom("community_posts").select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n);
    const before = [await tableCounts(), await posts()];
    // An overlong "/" and an encoded surrogate: neither is UTF-8.
    const around = (head: string, bad: number[], tail: string) => Buffer.concat([Buffer.from(head), Buffer.from(bad), Buffer.from(tail)]);
    const json = await p.api.request("POST", "/v1/webhooks", {
      token: user.token,
      rawBody: around('{"url":"https://93.184.216.34/hook","events":["*"],"description":"a', [0xc0, 0xaf], '"}'),
      headers: { "content-type": "application/json" },
    });
    expectProblem(json, 400, "invalid_json");
    const form = await p.api.request("POST", "/v1/community/posts", {
      token: user.token,
      rawBody: around('--b\r\nContent-Disposition: form-data; name="type"\r\n\r\ndiscussion\r\n--b\r\nContent-Disposition: form-data; name="content"\r\n\r\na', [0xed, 0xa0, 0x80], "\r\n--b--\r\n"),
      headers: { "content-type": "multipart/form-data; boundary=b" },
    });
    expectFieldProblem(form, 400, "validation_failed", "content", "form field not UTF-8");
    // A route without a body still reads it for the Idempotency-Key's fingerprint, which recursed once per level.
    const deep = await p.api.request("POST", "/v1/marketplace/offers/off_01JD3Y5V0Q3G7W7J6T4N4C2X1M/withdraw", {
      token: user.token,
      rawBody: `{"a":${"[".repeat(20_000)}${"]".repeat(20_000)}}`,
      headers: { "content-type": "application/json", "idempotency-key": "deep-body" },
    });
    expectProblem(deep, 400, "invalid_json");
    const nested = (depth: number) => `{"description":"x","a":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;
    expectProblem(await p.api.request("POST", "/v1/api-keys", { token: user.token, rawBody: nested(65), headers: { "content-type": "application/json" } }), 400, "invalid_json");
    // 64 levels parse: the refusal is the schema's (an unknown field), not the parser's.
    expectProblem(await p.api.request("POST", "/v1/api-keys", { token: user.token, rawBody: nested(64), headers: { "content-type": "application/json" } }), 400, "validation_failed");
    expect([await tableCounts(), await posts()]).toEqual(before);
  });

  it("refuses a form that ends inside its file, and the process lives on (the file's stream errs too)", async () => {
    const artist = await createUser(p.api, { role: "artist" });
    const before = await tableCounts();
    const head = '--b\r\nContent-Disposition: form-data; name="title"\r\n\r\nCut short\r\n--b\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n';
    const cut = await p.api.request("POST", "/v1/artworks", {
      token: artist.token,
      rawBody: Buffer.concat([Buffer.from(head), pngImage().subarray(0, 40)]),
      headers: { "content-type": "multipart/form-data; boundary=b" },
    });
    expect(cut.status).toBe(400);
    expect(JSON.stringify(cut.body.errors)).toContain("invalid_multipart");
    // busboy destroys the file's stream before it errs itself, and this answer follows the parser's
    // error: an unheard error of the file's stream would have ended the process before the 400.
    expect((await p.api.request("GET", "/v1/users/me", { token: artist.token })).status).toBe(200);
    expect(await tableCounts()).toEqual(before);
  });

  it("answers a DELETE whose body is not JSON with 415, leaving the resource", async () => {
    const user = await createUser(p.api);
    const post = await p.api.request("POST", "/v1/community/posts", { token: user.token, body: { type: "discussion", content: "Keep me" } });
    expect(post.status, post.text).toBe(201);
    const res = await p.api.request("DELETE", `/v1/community/posts/${post.body.post_id}`, { token: user.token, rawBody: "reason=spam", headers: { "content-type": "application/x-www-form-urlencoded" } });
    expectProblem(res, 415, "unsupported_media_type");
    expect((await p.api.request("GET", `/v1/community/posts/${post.body.post_id}`)).status).toBe(200);
  });

  it("answers a request line over Node's 16 KiB limit with a 431 problem+json, and keeps serving", async () => {
    const res = await p.api.request("GET", `/v1/artworks/${"x".repeat(20_000)}`);
    expect(res.status).toBe(431);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.body).toMatchObject({ status: 431, code: "header_too_large", title: "Request header fields too large", request_id: expect.stringMatching(/^req_/) });
    expect((await p.api.request("GET", "/v1/artworks?limit=1")).status).toBe(200);
  });
});

describe("verification page", () => {
  it("answers an unknown artwork with an HTML page, and the OpenAPI document says so", async () => {
    const res = await p.api.request("GET", "/verify/art_00000000000000000000000000");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const doc = (await p.api.request("GET", "/v1/openapi.json")).body;
    const responses = doc.paths["/verify/{artwork_id}"].get.responses;
    expect(Object.keys(responses["404"].content)).toEqual(["text/html"]);
    expect(Object.keys(responses["200"].content)).toEqual(["text/html"]);
    expect(Object.keys(responses["503"].content)).toEqual(["application/problem+json"]);
  });
});

describe("X-Content-Type-Options", () => {
  it("is nosniff on every answer: JSON, a problem that echoes the path, a problem page, the docs", async () => {
    const answers = await Promise.all([
      fetch(new URL("/v1/artworks", p.api.url)),
      fetch(new URL("/v1/no-such-thing-<script>", p.api.url)),
      fetch(new URL("/problems/not_found", p.api.url), { headers: { Accept: "text/html" } }),
      fetch(new URL("/healthz", p.api.url)),
      fetch(new URL("/docs", p.api.url)),
    ]);
    expect(answers.map((r) => [r.status, r.headers.get("x-content-type-options")])).toEqual([
      [200, "nosniff"],
      [404, "nosniff"],
      [200, "nosniff"],
      [200, "nosniff"],
      [200, "nosniff"],
    ]);
  });
});

describe("/docs", () => {
  it("is served with a Content-Security-Policy that allows only the API's own scripts", async () => {
    const res = await fetch(new URL("/docs", p.api.url));
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    const directives = Object.fromEntries(csp.split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]));
    expect(directives["default-src"]).toEqual(["'none'"]);
    expect(directives["script-src"]).toEqual(["'self'"]);
    expect(directives["frame-ancestors"]).toEqual(["'none'"]);
    expect(directives["connect-src"]).toContain("'self'");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    // Under script-src 'self' an inline script would not run: every script is a same-origin file that is served.
    const html = await res.text();
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, inline] of scripts) {
      expect(inline!.trim()).toBe("");
      const src = /src="([^"]+)"/.exec(attributes!)?.[1];
      expect(src).toMatch(/^\/[^/]/);
      const asset = await fetch(new URL(src!, p.api.url));
      expect(asset.status, src).toBe(200);
      expect(asset.headers.get("content-type")).toMatch(/javascript/);
    }
  });

  it("still renders the API reference in a browser under that policy", async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const violations: string[] = [];
      page.on("console", (message) => {
        if (/Content.Security.Policy/i.test(message.text())) violations.push(message.text());
      });
      const response = await page.goto(new URL("/docs", p.api.url).href);
      expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'");
      // A bound on a wait for the page, not a timing: Swagger UI renders the whole document first, which a loaded machine takes long over.
      await page.locator(".swagger-ui .info .title").getByText("Art Platform Developer API").waitFor({ timeout: 60_000 });
      await page.locator(".opblock").first().waitFor();
      expect(await page.locator(".opblock").count()).toBeGreaterThan(10);
      expect(violations).toEqual([]);
      // The policy is in force: an injected inline script does not run.
      const inlineRan = await page.evaluate(`(() => {
        const script = document.createElement("script");
        script.textContent = "window.__inlineRan = true";
        document.body.append(script);
        return window.__inlineRan === true;
      })()`);
      expect(inlineRan).toBe(false);
    } finally {
      await browser.close();
    }
  }, 120_000);
});
