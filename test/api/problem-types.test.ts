/**
 * The catalogue of error codes (api/src/lib/problem-types.ts) against what the code base raises,
 * docs/errors.md against the catalogue, and every problem's `type` URL against the page it answers.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ERROR_CODES, type ErrorCode, isErrorCode, PROBLEM_TYPES } from "../../api/src/lib/problem-types.ts";
import { errorsMarkdown } from "../../tools/errors-doc.ts";
import { createUser, type TestResponse, useTestApi } from "../support/api.ts";

const api = useTestApi();

const SOURCE = new URL("../../api/src/", import.meta.url).pathname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith(".ts") ? [full] : [];
  });
}

interface Raised {
  at: string;
  status: number | null;
  code: string;
}

/**
 * Every place api/src gives an error a code: `new ApiError(status, "code"` (and subclasses'
 * `super(...)`), `ApiError.conflict("code"`, problems written by hand (`status: 503, code: "..."`,
 * `problemTypeUrl("code")`, `"/problems/code"`) and the table of Express's own client errors.
 * Calls whose code is not a literal are listed apart.
 */
function raisedInSource(): { raised: Raised[]; dynamic: string[] } {
  const raised: Raised[] = [];
  const dynamic: string[] = [];
  for (const file of sourceFiles(SOURCE)) {
    const text = readFileSync(file, "utf8");
    const name = path.relative(SOURCE, file);
    const at = (index: number) => `${name}:${text.slice(0, index).split("\n").length}`;
    for (const m of text.matchAll(/(?:new ApiError|super)\(\s*(\d{3}),\s*"([a-z_]+)"/g)) raised.push({ at: at(m.index), status: Number(m[1]), code: m[2]! });
    for (const m of text.matchAll(/ApiError\.conflict\(\s*"([a-z_]+)"/g)) raised.push({ at: at(m.index), status: 409, code: m[1]! });
    for (const m of text.matchAll(/status: (\d{3}),\s*code: "([a-z_]+)"/g)) raised.push({ at: at(m.index), status: Number(m[1]), code: m[2]! });
    for (const m of text.matchAll(/problemTypeUrl\("([a-z_]+)"\)|"\/problems\/([a-z_]+)"/g)) raised.push({ at: at(m.index), status: null, code: (m[1] ?? m[2])! });
    for (const m of text.matchAll(/CLIENT_ERROR_CODES: Record<number, ErrorCode> = \{([^}]*)\}/g)) {
      for (const entry of m[1]!.matchAll(/(\d{3}): "([a-z_]+)"/g)) raised.push({ at: at(m.index), status: Number(entry[1]), code: entry[2]! });
    }
    for (const m of text.matchAll(/new ApiError\((?!\s*\d{3},\s*")\s*([^,]+),\s*([^,]+),/g)) dynamic.push(`${at(m.index)} ${m[1]}, ${m[2]}`);
    for (const m of text.matchAll(/ApiError\.conflict\((?!\s*")\s*([^,]+),/g)) dynamic.push(`${at(m.index)} conflict ${m[1]}`);
  }
  return { raised, dynamic };
}

describe("the catalogue of error codes", () => {
  it("has every code the code base raises, with the status it is raised with", () => {
    const { raised, dynamic } = raisedInSource();
    expect(raised.length).toBeGreaterThan(80);
    expect(raised.filter((r) => !isErrorCode(r.code)).map((r) => `${r.at} ${r.code}`)).toEqual([]);
    expect(raised.filter((r) => isErrorCode(r.code) && r.status !== null && PROBLEM_TYPES[r.code].status !== r.status).map((r) => `${r.at} ${r.status} ${r.code}`)).toEqual([]);
    // Codes passed through a variable (typed ErrorCode, so from the catalogue): these sites only.
    expect(dynamic.map((d) => d.replace(/:\d+/, ""))).toEqual(["http/problem.ts clientStatus, CLIENT_ERROR_CODES[clientStatus] ?? \"invalid_parameter\"", "lib/errors.ts 409, code"]);
  });

  it("has no code that nothing raises", () => {
    const seen = new Set(raisedInSource().raised.map((r) => r.code));
    expect(ERROR_CODES.filter((code) => !seen.has(code))).toEqual([]);
  });

  it("says for each code its title, when it happens and what to do", () => {
    for (const code of ERROR_CODES) {
      const type = PROBLEM_TYPES[code];
      expect(type.status, code).toBeGreaterThanOrEqual(400);
      for (const text of [type.title, type.when, type.whatToDo, type.detail]) expect(text.length, code).toBeGreaterThan(3);
    }
  });

  it("is what docs/errors.md says (`npm run openapi` writes it)", () => {
    const committed = readFileSync(new URL("../../docs/errors.md", import.meta.url), "utf8");
    expect(committed === errorsMarkdown(), "docs/errors.md is stale: run `npm run openapi`").toBe(true);
  });
});

const BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/** The page a problem's `type` names, resolved as RFC 9457 says: against the URL of the request that got it. */
function typePage(problem: TestResponse, accept: string): Promise<TestResponse> {
  return api.request("GET", new URL(problem.body.type, api.url).pathname, { headers: { accept } });
}

describe("the problem pages", () => {
  it("answer each `type` of real error responses with that code's page, HTML for a browser and JSON otherwise", async () => {
    const collector = await createUser(api, { role: "collector", scope: ["users:read"] });
    const problems: [ErrorCode, TestResponse][] = [
      ["not_found", await api.request("GET", "/v1/no-such-route")],
      ["unauthenticated", await api.request("GET", "/v1/users/me")],
      ["token_invalid", await api.request("GET", "/v1/users/me", { token: "not-a-token" })],
      ["invalid_parameter", await api.request("GET", "/v1/artworks?limit=100000")],
      ["invalid_json", await api.request("POST", "/v1/auth/token", { rawBody: "{", headers: { "content-type": "application/json" } })],
      ["validation_failed", await api.request("POST", "/v1/auth/token", { body: { api_key: 1 } })],
      ["unsupported_media_type", await api.request("POST", "/v1/auth/token", { rawBody: "api_key=x", headers: { "content-type": "text/plain" } })],
      ["insufficient_scope", await api.request("POST", "/v1/artworks", { token: collector.token, body: {} })],
    ];
    for (const [code, problem] of problems) {
      expect(problem.body?.code, problem.text).toBe(code);
      expect(problem.body.type).toBe(`/problems/${code}`);

      const json = await typePage(problem, "application/json");
      expect(json.status, `${code}: ${json.text}`).toBe(200);
      expect(json.headers.get("content-type")).toMatch(/^application\/json/);
      expect(json.body).toMatchObject({ code, type: problem.body.type, status: problem.body.status, title: problem.body.title, when: PROBLEM_TYPES[code].when, what_to_do: PROBLEM_TYPES[code].whatToDo });

      const html = await typePage(problem, BROWSER);
      expect(html.status).toBe(200);
      expect(html.headers.get("content-type")).toMatch(/^text\/html/);
      expect(html.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(html.text).toContain(`id="${code}"`);
      expect(html.text).toContain(`HTTP ${problem.body.status} `);
      expect(html.text).toContain("What to do");

      // Without an Accept header (curl, most clients): JSON.
      expect((await typePage(problem, "*/*")).body.code).toBe(code);
    }
  });

  it("answer every code of the catalogue, and list them all under one page with an anchor each", async () => {
    for (const code of ERROR_CODES) {
      const page = await api.request("GET", `/problems/${code}`);
      expect(page.status, code).toBe(200);
      expect(page.body).toMatchObject({ code, status: PROBLEM_TYPES[code].status, title: PROBLEM_TYPES[code].title });
      expect(page.body.example).toMatchObject({ type: `/problems/${code}`, code, status: PROBLEM_TYPES[code].status });
    }
    const index = await api.request("GET", "/problems", { headers: { accept: BROWSER } });
    expect(index.status).toBe(200);
    for (const code of ERROR_CODES) expect(index.text).toContain(`id="${code}"`);
    const list = await api.request("GET", "/problems");
    expect(list.body.data.map((t: { code: string }) => t.code)).toEqual(ERROR_CODES);
  });

  it("answer an unknown code with a 404 problem whose own type answers", async () => {
    const missing = await api.request("GET", "/problems/no_such_code");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(missing.body.code).toBe("not_found");
    expect((await typePage(missing, "application/json")).status).toBe(200);
  });
});
