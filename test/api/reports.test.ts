/**
 * Admin reports: a quarter's figures (JSON, CSV and the HTML page with its charts) equal to rows
 * this file writes into 2024-Q4..2025-Q3 of a database of its own, with each boundary of the
 * half-open quarter tried; refused labels and formats; who may read them (Bearer and HTTP Basic).
 * (`last_login`, which the users list shows beside them: users.test.ts.)
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { TransactionType } from "../../api/src/modules/payments/payments.tables.ts";
import { newId } from "../../api/src/lib/ids.ts";
import { VERIFY_PAGE_CSP } from "../../api/src/modules/certificates/verify-page.ts";
import { toCsv } from "../../api/src/modules/reports/report-csv.ts";
import { launchChromium } from "../support/browser.ts";
import { testEnvironment } from "../support/environment.ts";
import { ADMIN_API_KEY, adminToken, createUser, expectProblem, type TestResponse, type TestUser, uniqueName, useIsolatedTestApi } from "../support/api.ts";

// A database of its own: the seeded quarters hold exactly what this file writes.
const api = useIsolatedTestApi();

const at = (iso: string) => new Date(iso);
const randomHex = (bytes: number) => `0x${randomBytes(bytes).toString("hex")}`;
const basic = (password: string, user = "admin") => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

/** Minimal RFC 4180 reader: quoted fields with doubled quotes, commas and line breaks inside. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") row.push(field), (field = "");
    else if (c === "\r" && text[i + 1] === "\n") {
      row.push(field), rows.push(row), (row = []), (field = ""), i++;
    } else field += c;
  }
  if (field !== "" || row.length > 0) throw new Error("CSV does not end with CRLF");
  return rows;
}

describe("admin reports", () => {
  let admin: string;
  let artist: TestUser;
  let buyer: TestUser;

  const seedUser = (createdAt: Date) =>
    api.db
      .insertInto("users")
      .values({
        id: newId("user"),
        username: uniqueName("seeded"),
        display_name: "Seeded",
        email: null,
        role: "collector",
        status: "active",
        wallet_address: randomHex(20),
        wallet_kind: "siwe",
        custody_index: null,
        bio: null,
        location: null,
        website: null,
        avatar_url: null,
        last_login_at: null,
        created_at: createdAt,
        updated_at: createdAt,
      })
      .execute();

  const seedArtwork = async (certifiedAt: Date | null, opts: { deleted?: boolean } = {}) => {
    const id = newId("artwork");
    await api.db
      .insertInto("artworks")
      .values({
        id,
        artist_id: artist.id,
        title: "Seeded work",
        year: 2020,
        medium: "oil",
        dimensions: JSON.stringify({ width: 10, height: 10, unit: "cm" }),
        description: null,
        price_cents: null,
        status: certifiedAt ? "certified" : "certification_failed",
        image_source_url: "https://example.test/seeded.png",
        image_storage_key: null,
        image_sha256: null,
        image_content_type: null,
        image_bytes: null,
        certificate_hash: certifiedAt ? randomHex(32) : null,
        token_id: certifiedAt ? BigInt(`0x${randomBytes(6).toString("hex")}`) : null,
        certified_at: certifiedAt,
        certified_by: null,
        certification_error: certifiedAt ? null : "seeded",
        failed_at: certifiedAt ? null : at("2025-08-01T00:00:00Z"),
        deleted_at: opts.deleted ? at("2025-09-01T00:00:00Z") : null,
        fractionalized_at: null,
      })
      .execute();
    return id;
  };

  const seedTransaction = async (type: TransactionType, usd: number, status: "pending" | "completed" | "failed" | "refunded", completedAt: Date | null) => {
    const id = newId("transaction");
    await api.db
      .insertInto("transactions")
      .values({
        id,
        type,
        status,
        artwork_id: null,
        amount_cents: BigInt(Math.round(usd * 100)),
        buyer_id: buyer.id,
        seller_id: null,
        recipient_id: null,
        recipient_wallet: null,
        parent_id: null,
        charge_id: null,
        chain_tx: null,
        failure_reason: null,
        completed_at: completedAt,
        failed_at: status === "failed" ? at("2025-08-01T00:00:00Z") : null,
        refunded_at: status === "refunded" ? at("2025-08-05T00:00:00Z") : null,
      })
      .execute();
    return id;
  };

  /** A completed sale of 2023 (outside every reported quarter) and a dispute of it. */
  const seedDispute = async (createdAt: Date, resolvedAt: Date | null) => {
    const artworkId = await seedArtwork(at("2023-01-01T00:00:00Z"));
    const token = (await api.db.selectFrom("artworks").select("token_id").where("id", "=", artworkId).executeTakeFirstOrThrow()).token_id!;
    const listingId = newId("listing");
    const wallet = randomHex(20);
    await api.db
      .insertInto("listings")
      .values({ id: listingId, artwork_id: artworkId, seller_id: artist.id, seller_wallet: wallet, token_id: token, price_cents: 10_000n, currency: "USD", accepts_offers: false, status: "sold" })
      .execute();
    const saleId = await seedTransaction("sale", 100, "completed", at("2023-06-01T00:00:00Z"));
    await api.db
      .insertInto("sales")
      .values({
        id: saleId, listing_id: listingId, offer_id: null, artwork_id: artworkId, token_id: token, buyer_id: buyer.id, seller_id: artist.id,
        buyer_wallet: randomHex(20), seller_wallet: wallet, price_cents: 10_000n, payment_method_id: "pm_card_visa", status: "completed",
      })
      .execute();
    await api.db
      .insertInto("disputes")
      .values({
        id: newId("dispute"), transaction_id: saleId, buyer_id: buyer.id, seller_id: artist.id, reason: "seeded",
        status: resolvedAt ? "resolved" : "open", resolution: resolvedAt ? "reject" : null, resolution_note: null, resolved_by: null,
        refund_status: null, refund_id: null, certificate_return: null, created_at: createdAt, resolved_at: resolvedAt,
      })
      .execute();
  };

  const seedChallenge = (deadline: Date) =>
    api.db
      .insertInto("community_challenges")
      .values({
        id: newId("challenge"), title: "Seeded", theme: "Light", prize_pool_cents: 0n,
        starts_at: new Date(deadline.getTime() - 86_400_000), deadline, created_by: artist.id,
      })
      .execute();

  beforeAll(async () => {
    [admin, artist, buyer] = await Promise.all([adminToken(api), createUser(api, { role: "artist" }), createUser(api)]);

    // New users: 2024-Q4 1, 2025-Q1 2, 2025-Q2 2, 2025-Q3 3 (both ends of Q3 tried), 2025-Q4 1.
    for (const created of [
      "2024-11-01T00:00:00Z", "2025-01-15T00:00:00Z", "2025-03-31T23:59:59.999Z", "2025-04-10T00:00:00Z", "2025-06-30T23:59:59.999Z",
      "2025-07-01T00:00:00Z", "2025-08-15T12:00:00Z", "2025-09-30T23:59:59.999Z", "2025-10-01T00:00:00Z",
    ]) {
      await seedUser(at(created));
    }

    // Certified in 2025-Q3: 2 (one deleted since); next to it, just before, just after, and a failure.
    await seedArtwork(at("2025-07-01T00:00:00Z"));
    await seedArtwork(at("2025-09-30T12:00:00Z"), { deleted: true });
    await seedArtwork(at("2025-06-30T23:59:59.999Z"));
    await seedArtwork(at("2025-10-01T00:00:00Z"));
    await seedArtwork(null);

    // Volume of 2025-Q3: 1000.00 + 250.50 + 49.99; what must not count beside it.
    await seedTransaction("sale", 1000, "completed", at("2025-07-01T00:00:00Z"));
    await seedTransaction("share_purchase", 250.5, "completed", at("2025-08-01T00:00:00Z"));
    await seedTransaction("ticket_purchase", 49.99, "completed", at("2025-09-30T23:59:59.999Z"));
    await seedTransaction("royalty_payout", 100, "completed", at("2025-08-01T00:00:00Z"));
    await seedTransaction("sale", 500, "refunded", at("2025-08-01T00:00:00Z"));
    await seedTransaction("sale", 400, "pending", null);
    await seedTransaction("sale", 300, "failed", null);
    await seedTransaction("sale", 777, "completed", at("2025-10-01T00:00:00Z"));
    // The chart's earlier quarters.
    await seedTransaction("sale", 100, "completed", at("2024-12-31T23:59:59.999Z"));
    await seedTransaction("share_purchase", 200, "completed", at("2025-02-01T00:00:00Z"));
    await seedTransaction("sale", 300.25, "completed", at("2025-06-30T23:59:59.999Z"));

    // Disputes open now: 2 (whenever opened); 2 resolved.
    await seedDispute(at("2025-08-10T00:00:00Z"), null);
    await seedDispute(at("2025-03-01T00:00:00Z"), null);
    await seedDispute(at("2025-08-10T00:00:00Z"), at("2025-10-05T00:00:00Z"));
    await seedDispute(at("2025-07-05T00:00:00Z"), at("2025-09-01T00:00:00Z"));

    // Challenges with their deadline in 2025-Q3: 2; one at the next quarter's first instant.
    await seedChallenge(at("2025-07-01T00:00:00Z"));
    await seedChallenge(at("2025-09-30T23:59:59.999Z"));
    await seedChallenge(at("2025-10-01T00:00:00Z"));
  }, 60_000);

  const Q3_2025 = { period: "2025-Q3", new_users: 3, artworks_certified: 2, total_volume_usd: 1300.49, active_disputes: 2, challenges_completed: 2 };

  it("answers a past quarter's figures, equal to the seeded rows", async () => {
    const before = Date.now();
    const res = await api.request("GET", "/v1/admin/reports?period=2025-Q3", { token: admin });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.body).toEqual({ ...Q3_2025, generated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) });
    expect(Date.parse(res.body.generated_at)).toBeGreaterThanOrEqual(before - 5);
    expect(Date.parse(res.body.generated_at)).toBeLessThanOrEqual(Date.now() + 5);

    const earlier = await Promise.all(["2024-Q4", "2025-Q1", "2025-Q2", "2025-Q4"].map((q) => api.request("GET", `/v1/admin/reports?period=${q}`, { token: admin })));
    expect(earlier.map((r) => [r.body.period, r.body.new_users, r.body.artworks_certified, r.body.total_volume_usd, r.body.challenges_completed])).toEqual([
      ["2024-Q4", 1, 0, 100, 0],
      ["2025-Q1", 2, 0, 200, 0],
      ["2025-Q2", 2, 1, 300.25, 0],
      ["2025-Q4", 1, 1, 777, 1],
    ]);
    // Open disputes are counted when the report is generated, whatever the quarter.
    expect(earlier.every((r) => r.body.active_disputes === 2)).toBe(true);
  });

  it("reports the current quarter (UTC) by default, counted up to now", async () => {
    const now = new Date();
    const label = `${now.getUTCFullYear()}-Q${Math.floor(now.getUTCMonth() / 3) + 1}`;
    // One challenge whose deadline just passed, one still running: only the first is completed.
    await seedChallenge(new Date(Date.now() - 60_000));
    await seedChallenge(new Date(Date.now() + 3_600_000));
    const first = await api.request("GET", "/v1/admin/reports", { token: admin });
    expect(first.status, first.text).toBe(200);
    expect(first.body.period).toBe(label);
    expect(first.body.challenges_completed).toBe(1);
    expect(first.body.active_disputes).toBe(2);
    const stored = await api.db.selectFrom("users").select((eb) => eb.fn.countAll<string>().as("n")).where("created_at", ">=", at(`${now.getUTCFullYear()}-${String(Math.floor(now.getUTCMonth() / 3) * 3 + 1).padStart(2, "0")}-01T00:00:00Z`)).executeTakeFirstOrThrow();
    expect(first.body.new_users).toBe(Number(stored.n));

    await createUser(api);
    const second = await api.request("GET", `/v1/admin/reports?period=${label}`, { token: admin });
    expect(second.body.new_users).toBe(first.body.new_users + 1);
  });

  it("answers CSV for ?format=csv or Accept: text/csv, parsing back to the JSON figures", async () => {
    const json = (await api.request("GET", "/v1/admin/reports?period=2025-Q3", { token: admin })).body;
    for (const res of [
      await api.request("GET", "/v1/admin/reports?period=2025-Q3&format=csv", { token: admin }),
      await api.request("GET", "/v1/admin/reports?period=2025-Q3", { token: admin, headers: { accept: "text/csv" } }),
      await api.request("GET", "/v1/admin/reports?period=2025-Q3", { token: admin, headers: { accept: "application/json;q=0.5, text/csv" } }),
    ]) {
      expect(res.status, res.text).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/csv; charset=utf-8/);
      expect(res.headers.get("content-disposition")).toBe('attachment; filename="report-2025-Q3.csv"');
      expect(res.headers.get("vary")).toMatch(/Accept/);
      const rows = parseCsv(res.text);
      expect(rows).toHaveLength(2);
      const [header, values] = rows as [string[], string[]];
      expect(header).toEqual(Object.keys(json));
      const parsed = Object.fromEntries(header.map((name, i) => [name, name === "period" || name === "generated_at" ? values[i] : Number(values[i])]));
      expect({ ...parsed, generated_at: undefined }).toEqual({ ...json, generated_at: undefined });
      expect(Number.isNaN(Date.parse(parsed.generated_at as string))).toBe(false);
    }
    // Documented as answered: both media types of the 200.
    const doc = (await api.request("GET", "/v1/openapi.json")).body;
    expect(Object.keys(doc.paths["/v1/admin/reports"].get.responses["200"].content)).toEqual(["application/json", "text/csv"]);
    // ?format wins over Accept.
    const forced = await api.request("GET", "/v1/admin/reports?period=2025-Q3&format=json", { token: admin, headers: { accept: "text/csv" } });
    expect(forced.headers.get("content-type")).toMatch(/^application\/json/);
    expect(forced.body).toMatchObject(Q3_2025);
    // Anything else the client accepts gets JSON.
    expect((await api.request("GET", "/v1/admin/reports?period=2025-Q3", { token: admin, headers: { accept: "text/html" } })).body).toMatchObject(Q3_2025);
  });

  it("writes CSV by RFC 4180: fields with commas, quotes or line breaks are quoted", () => {
    expect(toCsv([{ a: "plain", b: 'say "hi", then\r\nleave', c: 12.5 }])).toBe('a,b,c\r\nplain,"say ""hi"", then\r\nleave",12.5\r\n');
    expect(parseCsv(toCsv([{ x: 'a,"b"\nc' }]))).toEqual([["x"], ['a,"b"\nc']]);
  });

  it("refuses malformed, too early and future periods and unknown formats with 400 validation_failed", async () => {
    const now = new Date();
    const next = now.getUTCMonth() >= 9 ? `${now.getUTCFullYear() + 1}-Q1` : `${now.getUTCFullYear()}-Q${Math.floor(now.getUTCMonth() / 3) + 2}`;
    for (const [query, field, code] of [
      ["period=2026-Q5", "period", "invalid_format"],
      ["period=2026Q3", "period", "invalid_format"],
      ["period=26-Q1", "period", "invalid_format"],
      ["period=2026-q3", "period", "invalid_format"],
      ["period=2026-Q0", "period", "invalid_format"],
      ["period=%202026-Q3", "period", "invalid_format"],
      ["period=", "period", "invalid_format"],
      ["period=1969-Q4", "period", "too_small"],
      [`period=${next}`, "period", "too_big"],
      ["period=9999-Q4", "period", "too_big"],
      ["format=xml", "format", "invalid_value"],
    ] as const) {
      for (const path of ["/v1/admin/reports", "/admin/reports"]) {
        if (path === "/admin/reports" && field === "format") continue;
        const res = await api.request("GET", `${path}?${query}`, { token: admin });
        expectProblem(res, 400, "validation_failed");
        expect(res.body.errors, `${path}?${query}`).toEqual([{ field, code, message: expect.any(String) }]);
      }
    }
  });

  it("is for admins only: 401 without a bearer, 403 without the admin scope or role", async () => {
    expectProblem(await api.request("GET", "/v1/admin/reports"), 401, "unauthenticated");
    const collector = await createUser(api, { scope: ["write"] });
    expectProblem(await api.request("GET", "/v1/admin/reports", { token: collector.token }), 403, "insufficient_scope");
    const readOnlyAdmin = await createUser(api, { role: "admin", scope: ["read"] });
    expectProblem(await api.request("GET", "/v1/admin/reports", { token: readOnlyAdmin.token }), 403, "insufficient_scope");
    // The admin's API key is a bearer here as on every endpoint.
    expect((await api.request("GET", "/v1/admin/reports?period=2025-Q3", { token: ADMIN_API_KEY })).body).toMatchObject(Q3_2025);

    const reader = await createUser(api, { role: "admin", scope: ["admin:read"] });
    expect((await api.request("GET", "/v1/admin/reports?period=2025-Q3", { token: reader.token })).body).toMatchObject(Q3_2025);
    const demoted = await api.request("PATCH", `/v1/admin/users/${reader.id}`, { token: admin, body: { role: "collector" } });
    expect(demoted.status).toBe(200);
    // Its admin:read token went with the role; its key (no cap of its own) is a collector's now.
    for (const path of ["/v1/admin/reports", "/admin/reports"]) {
      expectProblem(await api.request("GET", path, { token: reader.token }), 401, "token_revoked");
      expectProblem(await api.request("GET", path, { token: reader.apiKey }), 403, "insufficient_scope");
    }
  });

  it("serves the page to an admin's API key or token, by Bearer or HTTP Basic, and asks browsers for Basic credentials", async () => {
    const page = (headers: Record<string, string> = {}) => api.request("GET", "/admin/reports?period=2025-Q3", { headers });
    const expectPage = (res: TestResponse) => {
      expect(res.status, res.text).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(res.headers.get("content-security-policy")).toBe(VERIFY_PAGE_CSP);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(res.text).toContain('<dd id="total-volume" data-value="1300.49">$1,300.49</dd>');
      expect(res.text).not.toMatch(/<script/i);
    };
    expectPage(await page({ authorization: basic(ADMIN_API_KEY) }));
    expectPage(await page({ authorization: basic(ADMIN_API_KEY, "") }));
    expectPage(await page({ authorization: basic(admin, "anyone") }));
    expectPage(await page({ authorization: `Bearer ${admin}` }));
    expectPage(await page({ authorization: `Bearer ${ADMIN_API_KEY}` }));
    // Both documented.
    expect((await api.request("GET", "/v1/openapi.json")).body.paths["/admin/reports"].get.security).toEqual([{ bearerAuth: [] }, { basicAuth: [] }]);

    const challenged = (res: TestResponse, status: number, code: string) => {
      expectProblem(res, status, code);
      expect(res.headers.get("www-authenticate")).toBe('Basic realm="Admin reports"');
    };
    challenged(await page(), 401, "unauthenticated");
    challenged(await page({ authorization: basic("sk_not_a_key") }), 401, "token_invalid");
    challenged(await page({ authorization: `Basic ${Buffer.from("no colon").toString("base64")}` }), 401, "token_invalid");
    challenged(await page({ authorization: basic("") }), 401, "token_invalid");
    challenged(await page({ authorization: "Bearer at_not_a_token" }), 401, "token_invalid");

    const collector = await createUser(api);
    expectProblem(await page({ authorization: basic(collector.apiKey) }), 403, "insufficient_scope");
    expectProblem(await page({ authorization: `Bearer ${collector.token}` }), 403, "insufficient_scope");
  });

  it("shows the figures and a 4-bar chart in a browser, with no policy violation", async () => {
    const browser = await launchChromium();
    try {
      // Without credentials the browser gets the Basic challenge. (Contexts stay open: the packaged
      // Chromium runs in a single process, which closing a context can take down.)
      const anonymous = await browser.newContext();
      const refused = await (await anonymous.newPage()).goto(new URL("/admin/reports", api.url).href);
      expect(refused?.status()).toBe(401);
      expect(refused?.headers()["www-authenticate"]).toBe('Basic realm="Admin reports"');

      const context = await browser.newContext({ httpCredentials: { username: "admin", password: ADMIN_API_KEY }, viewport: { width: 1100, height: 900 } });
      const page = await context.newPage();
      const violations: string[] = [];
      page.on("console", (message) => {
        if (/Content.Security.Policy|Refused/i.test(message.text())) violations.push(message.text());
      });
      const response = await page.goto(new URL("/admin/reports?period=2025-Q3", api.url).href);
      expect(response?.status()).toBe(200);
      expect(await page.locator("#period").textContent()).toBe("2025-Q3");
      for (const [id, text] of [
        ["new-users", "3"],
        ["artworks-certified", "2"],
        ["total-volume", "$1,300.49"],
        ["active-disputes", "2"],
        ["challenges-completed", "2"],
      ] as const) {
        // The page is rendered on the server (no scripts): once loaded, each figure is in it.
        expect(await page.locator(`#${id}`).textContent()).toBe(text);
        expect(await page.locator(`#${id}`).isVisible()).toBe(true);
      }
      for (const chart of ["#volume-chart", "#users-chart"]) {
        const svg = page.locator(`svg${chart}`);
        expect(await svg.isVisible()).toBe(true);
        const bars = svg.locator("rect.bar");
        expect(await bars.count()).toBe(4);
        for (let i = 0; i < 4; i++) expect(await bars.nth(i).isVisible(), `${chart} bar ${i}`).toBe(true);
        expect(await bars.evaluateAll((rects) => rects.map((r) => r.getAttribute("data-period")))).toEqual(["2024-Q4", "2025-Q1", "2025-Q2", "2025-Q3"]);
      }
      const volumeHeights = await page.locator("#volume-chart rect.bar").evaluateAll((rects) => rects.map((r) => (r as unknown as { getBBox(): { height: number } }).getBBox().height));
      // Heights in proportion to 100, 200, 300.25 and 1300.49 dollars (the largest fills the plot).
      expect(volumeHeights).toEqual([13, 26, 39, 170]);
      expect(await page.locator("#volume-chart rect.bar.current").getAttribute("data-period")).toBe("2025-Q3");
      expect(await page.evaluate("document.scripts.length")).toBe(0);
      expect(violations).toEqual([]);

      const screenshot = path.join(testEnvironment().tempDir, "admin-report-2025-Q3.png");
      await page.screenshot({ path: screenshot, fullPage: true });
      console.log(`admin report page screenshot: ${screenshot}`);

      // The browser keeps sending the credentials: the link to the quarter before opens it.
      await page.locator("#previous").click();
      await page.waitForURL(/period=2025-Q2/);
      expect(await page.locator("#period").textContent()).toBe("2025-Q2");
      expect(await page.locator("#total-volume").textContent()).toBe("$300.25");
    } finally {
      await browser.close();
    }
  });

  it("documents both endpoints in the OpenAPI document", async () => {
    const doc = (await api.request("GET", "/v1/openapi.json")).body;
    const json = doc.paths["/v1/admin/reports"].get;
    expect(json.parameters.map((p: { name: string }) => p.name).sort()).toEqual(["format", "period"]);
    expect(json.description).toContain("open now");
    expect(json.responses["200"].content["application/json"].schema).toBeDefined();
    expect(doc.components.schemas.Report.required.sort()).toEqual(
      ["active_disputes", "artworks_certified", "challenges_completed", "generated_at", "new_users", "period", "total_volume_usd"],
    );
    const html = doc.paths["/admin/reports"].get;
    expect(Object.keys(html.responses["200"].content)).toEqual(["text/html"]);
    expect(html.description).toContain('Basic realm="Admin reports"');
  });
});
