/**
 * CORS in a real headless Chromium: a dApp page served from another origin (a small server on
 * loopback, another port) signs in with Sign-In with Ethereum and reads `/v1/users/me` with the
 * bearer token, every call made by the page's own fetch; a page of an origin the API does not allow
 * is blocked by the browser. The wallet stands where a browser wallet's `personal_sign` would: the
 * page builds the EIP-4361 message for its own domain and asks it to sign (a viem local account).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright-core";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../support/browser.ts";
import { waitFor } from "../support/wait.ts";
import { startTestApi, type TestApi } from "../support/api.ts";

/** The dApp: its calls to the API, each a fetch of the page's own, their outcome as plain data. */
const DAPP_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>dApp</title></head><body>
<script>
  const api = new URL(location.href).searchParams.get("api");
  async function call(method, path, { token, body, headers = {} } = {}) {
    try {
      const res = await fetch(api + path, {
        method,
        headers: { ...(token ? { Authorization: "Bearer " + token } : {}), ...(body ? { "Content-Type": "application/json" } : {}), ...headers },
        body: body ? JSON.stringify(body) : undefined,
      });
      return {
        status: res.status,
        body: await res.json().catch(() => null),
        requestId: res.headers.get("X-Request-Id"),
        rateLimitRemaining: res.headers.get("RateLimit-Remaining"),
        etag: res.headers.get("ETag"),
      };
    } catch (error) {
      return { error: String(error) };
    }
  }
  window.dapp = {
    call,
    async signIn() {
      const nonce = await call("POST", "/v1/auth/siwe/nonce");
      if (nonce.status !== 201) return { step: "nonce", ...nonce };
      const address = await window.walletAddress();
      const message = [
        location.host + " wants you to sign in with your Ethereum account:",
        address,
        "",
        "Sign in to the dApp",
        "",
        "URI: " + location.origin + "/",
        "Version: 1",
        "Chain ID: " + window.chainId,
        "Nonce: " + nonce.body.nonce,
        "Issued At: " + new Date().toISOString(),
      ].join("\\n");
      const signature = await window.walletSign(message);
      return call("POST", "/v1/auth/siwe/verify", { body: { message, signature }, headers: { "Idempotency-Key": "sign-in-" + nonce.body.nonce } });
    },
  };
</script>
</body></html>`;

/** A site on loopback serving the dApp page at `/`. */
async function startSite(): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    if (new URL(req.url ?? "/", "http://x").pathname !== "/") {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" }).end(DAPP_PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

type CallOutcome = { status: number; body: any; requestId: string | null; rateLimitRemaining: string | null; etag: string | null } | { error: string };

let dapp: Awaited<ReturnType<typeof startSite>>;
let elsewhere: Awaited<ReturnType<typeof startSite>>;
let api: TestApi;
let browser: Browser;
const wallet = privateKeyToAccount(generatePrivateKey());

beforeAll(async () => {
  [dapp, elsewhere] = await Promise.all([startSite(), startSite()]);
  const host = new URL(dapp.origin).host;
  // The dApp's origin is allowed, and a sign-in message for its own domain accepted (SIWE_DOMAINS).
  [api, browser] = await Promise.all([startTestApi({ CORS_ORIGINS: dapp.origin, SIWE_DOMAINS: host }), launchChromium()]);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await api?.close();
  for (const site of [dapp, elsewhere]) await new Promise((resolve) => site?.server.close(resolve));
});

/**
 * A page of `site` whose dApp calls the test API, with the wallet injected; in a context of its own
 * (no shared cache), left open: the packaged Chromium runs as one process, which closing its last
 * page would end.
 */
async function open(site: { origin: string }): Promise<{ page: Page; console: string[] }> {
  const page = await (await browser.newContext()).newPage();
  const console: string[] = [];
  page.on("console", (m) => console.push(m.text()));
  await page.exposeFunction("walletAddress", () => wallet.address);
  await page.exposeFunction("walletSign", (message: string) => wallet.signMessage({ message }));
  await page.addInitScript((chainId) => Object.assign(globalThis, { chainId }), api.config.chain.id);
  await page.goto(`${site.origin}/?api=${encodeURIComponent(api.url)}`);
  return { page, console };
}

const call = (page: Page, method: string, path: string, opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
  page.evaluate(([m, p, o]) => (globalThis as any).dapp.call(m, p, o), [method, path, opts] as const) as Promise<CallOutcome>;

function answered(outcome: CallOutcome): Exclude<CallOutcome, { error: string }> {
  if ("error" in outcome) throw new Error(`the page's fetch failed: ${outcome.error}`);
  return outcome;
}

describe("a browser dApp on another origin", () => {
  let token: string;

  it("signs in with SIWE and reads /v1/users/me with the bearer token, reading the API's headers", async () => {
    const { page } = await open(dapp);
    const signedIn = answered((await page.evaluate(() => (globalThis as any).dapp.signIn())) as CallOutcome);
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(201);
    expect(signedIn.body).toMatchObject({ token_type: "Bearer", scope: ["write"] });
    token = signedIn.body.token;

    const me = answered(await call(page, "GET", "/v1/users/me", { token }));
    expect(me.status).toBe(200);
    expect(me.body.wallet_address).toBe(wallet.address);
    // Exposed to the page's script: without Access-Control-Expose-Headers these read null.
    expect(me.requestId).toMatch(/^req_/);
    expect(Number(me.rateLimitRemaining)).toBeGreaterThan(0);
    expect(me.etag).toMatch(/^W\//);

    // A write: a preflight for PATCH with its headers, then the change, stored.
    const bio = `from ${dapp.origin}`;
    const patched = answered(await call(page, "PATCH", `/v1/users/${me.body.id}/profile`, { token, body: { bio }, headers: { "Idempotency-Key": "dapp-profile" } }));
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect((await api.db.selectFrom("users").select("bio").where("id", "=", me.body.id).executeTakeFirstOrThrow()).bio).toBe(bio);

    // A refusal is readable too: the problem's code, not an opaque network error.
    const refused = answered(await call(page, "GET", "/v1/users/me", { token: "at_not_a_token" }));
    expect([refused.status, refused.body.code]).toEqual([401, "token_invalid"]);
  });

  it("is blocked from an origin the API does not allow: no answer reaches the page, and a write behind a preflight is never sent", async () => {
    expect(token).toBeDefined();
    const { page, console } = await open(elsewhere);
    const before = await api.db.selectFrom("users").select(["id", "bio"]).where("wallet_address", "=", wallet.address).executeTakeFirstOrThrow();
    // A simple request reaches the API, but the browser keeps its answer from the page.
    const read = await call(page, "GET", "/v1/artworks?limit=1");
    expect(read).toEqual({ error: expect.stringContaining("Failed to fetch") });
    // With a stolen token: the preflight is refused, so the PATCH itself never leaves the browser.
    const write = await call(page, "PATCH", `/v1/users/${before.id}/profile`, { token, body: { bio: "from elsewhere" } });
    expect(write).toEqual({ error: expect.stringContaining("Failed to fetch") });
    expect((await api.db.selectFrom("users").select("bio").where("id", "=", before.id).executeTakeFirstOrThrow()).bio).toBe(before.bio);
    // Chromium says why, once for each call.
    await waitFor(async () => console.filter((line) => line.includes("blocked by CORS policy")).length === 2, { timeoutMs: 5_000, what: "the two CORS refusals in the console" });
  });
});
