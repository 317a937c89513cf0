/**
 * The API reference page (/docs, Swagger UI) in a real headless Chromium: its padlocks say whether
 * a token is sent with the call, the same way for public and protected operations (the page's
 * plugin, api/src/openapi/document.ts): open until a token is entered, closed once it is.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../support/browser.ts";
import { startTestApi, type TestApi } from "../support/api.ts";

describe("the docs page's padlocks", () => {
  let api: TestApi;
  let browser: Browser;

  beforeAll(async () => {
    [api, browser] = await Promise.all([startTestApi(), launchChromium()]);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  it("draws a public operation's padlock as a protected one's: open without a token, closed with one", async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(new URL("/docs", api.url).href);
    const lock = (operation: string) => page.locator(`[id$="-${operation}"] button.authorization__btn`).first();
    // Swagger UI names the padlock's state in the button's label: "authorization button locked|unlocked".
    const state = async (operation: string) => (await lock(operation).getAttribute("aria-label"))?.split(" ").at(-1);
    await lock("getArtwork").waitFor();
    // getArtwork is public (a token optional), createArtwork needs one.
    const document = (await (await fetch(new URL("/v1/openapi.json", api.url))).json()) as { paths: Record<string, Record<string, { security?: unknown }>> };
    expect(document.paths["/v1/artworks/{id}"]!.get!.security).toEqual([{}, { bearerAuth: [] }]);
    expect(document.paths["/v1/artworks"]!.post!.security).toEqual([{ bearerAuth: [] }]);
    expect({ public: await state("getArtwork"), protected: await state("createArtwork") }).toEqual({ public: "unlocked", protected: "unlocked" });

    await page.evaluate(() => {
      const ui = (globalThis as unknown as { ui: any }).ui;
      ui.authActions.authorize({ bearerAuth: { name: "bearerAuth", schema: ui.specSelectors.securityDefinitions().get("bearerAuth"), value: "a-token" } });
    });
    await page.locator(`[id$="-getArtwork"] button[aria-label="authorization button locked"]`).waitFor();
    expect({ public: await state("getArtwork"), protected: await state("createArtwork") }).toEqual({ public: "locked", protected: "locked" });
    expect(errors).toEqual([]);
  });
});
