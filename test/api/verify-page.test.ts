/**
 * The auditor's verify page as rendered from facts (no platform): the artwork's image beside the
 * facts, every address, transaction and block linked to the block explorer when there is one and
 * plain text when there is none, and every value escaped, the explorer's URL included. The page as
 * served by a running API is in artworks.test.ts and e2e/public-chain.test.ts.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../api/src/config.ts";
import { renderVerifyPage, type VerifyPageFacts } from "../../api/src/modules/certificates/verify-page.ts";
import { testApiSettings } from "../support/api.ts";

const owner = "0x1111111111111111111111111111111111111111";
const sender = "0x2222222222222222222222222222222222222222";
const royaltyReceiver = "0x3333333333333333333333333333333333333333";
const contract = "0x4444444444444444444444444444444444444444";
const txHash = `0x${"ab".repeat(32)}` as const;
const hash = `0x${"cd".repeat(32)}` as const;

function certified(overrides: Partial<VerifyPageFacts> = {}): VerifyPageFacts {
  return {
    kind: "certified",
    artworkId: "art_01JD3Y5V0Q3G7W7J6T4N4C2X1M",
    title: "Harbour at Dawn",
    status: "certified",
    deleted: false,
    document: { canonical: '{"title":"Harbour at Dawn"}', hash },
    documentUrl: "https://api.example.com/v1/artworks/art_01JD3Y5V0Q3G7W7J6T4N4C2X1M/certificate/document",
    imageUrl: "https://api.example.com/v1/artworks/art_01JD3Y5V0Q3G7W7J6T4N4C2X1M/image",
    imageSha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    chainName: "base-sepolia",
    chainId: 84532,
    contractAddress: contract,
    explorerUrl: null,
    chain: {
      indexed: {
        tokenId: 7n,
        artworkKey: `0x${"ef".repeat(32)}`,
        artworkId: "art_01JD3Y5V0Q3G7W7J6T4N4C2X1M",
        certificateHash: hash,
        owner,
        tokenUri: "https://api.example.com/v1/artworks/art_01JD3Y5V0Q3G7W7J6T4N4C2X1M/metadata.json",
        royaltyReceiver,
        royaltyBps: 500,
        certifiedAt: new Date("2026-01-02T03:04:05Z"),
        blockNumber: 123456n,
        txHash,
      },
      live: { certificateHash: hash, artworkKey: `0x${"ef".repeat(32)}`, certifiedAt: new Date("2026-01-02T03:04:05Z"), owner, sender },
    },
    ...overrides,
  };
}

/** The `href`s of the page's links, decoded from their HTML escaping. */
function links(html: string): string[] {
  return [...html.matchAll(/<a href="([^"]*)"/g)].map((m) => m[1]!.replace(/&amp;/g, "&"));
}

describe("verify page", () => {
  it("links every address, the transaction and the block to the explorer when it has one", () => {
    const html = renderVerifyPage(certified({ explorerUrl: "https://sepolia.basescan.org" }));
    const explorer = links(html).filter((href) => href.startsWith("https://sepolia.basescan.org/"));
    expect(explorer.sort()).toEqual(
      [
        `https://sepolia.basescan.org/address/${contract}`,
        `https://sepolia.basescan.org/address/${owner}`,
        `https://sepolia.basescan.org/address/${sender}`,
        `https://sepolia.basescan.org/address/${royaltyReceiver}`,
        `https://sepolia.basescan.org/tx/${txHash}`,
        "https://sepolia.basescan.org/block/123456",
      ].sort(),
    );
    // The value is the link's text, inside the element a reader (or a test) looks it up by.
    expect(html).toContain(`<code id="owner"><a href="https://sepolia.basescan.org/address/${owner}">${owner}</a></code>`);
    expect(html).toContain(`<span id="block"><a href="https://sepolia.basescan.org/block/123456">123456</a></span>`);
  });

  it("shows addresses, the transaction and the block as plain text without an explorer", () => {
    const html = renderVerifyPage(certified());
    expect(links(html).filter((href) => /\/(address|tx|block)\//.test(href))).toEqual([]);
    expect(html).toContain(`<code id="owner">${owner}</code>`);
    expect(html).toContain(`<code id="tx">${txHash}</code>`);
    expect(html).toContain(`<span id="block">123456</span>`);
    expect(html).toContain(`<code id="royalty-receiver">${royaltyReceiver}</code>`);
  });

  it("shows the artwork's image beside the facts, also before certification, and none when the image is not fetched yet", () => {
    const image = `<img id="artwork-image" src="https://api.example.com/v1/artworks/art_01JD3Y5V0Q3G7W7J6T4N4C2X1M/image" alt="The image of Harbour at Dawn">`;
    const html = renderVerifyPage(certified());
    expect(html).toContain(image);
    // The image and the facts share one row: the figure first, the tables beside it.
    expect(html.indexOf('<div class="record">')).toBeLessThan(html.indexOf("<figure>"));
    expect(html.indexOf("<figure>")).toBeLessThan(html.indexOf('<div class="facts">'));
    expect(html.indexOf('<div class="facts">')).toBeLessThan(html.indexOf("On-chain facts"));

    expect(renderVerifyPage(certified({ kind: "pending", status: "pending_certification", chain: null }))).toContain(image);
    const withoutImage = renderVerifyPage(certified({ imageUrl: null, imageSha256: null, document: null }));
    expect(withoutImage).not.toContain("<img");
    expect(withoutImage).not.toContain('<div class="record">');
  });

  it("escapes every value: title, ids, the image URL and the explorer's URL", () => {
    const hostile = `"><script>alert(1)</script><a href='x`;
    const html = renderVerifyPage(
      certified({
        title: hostile,
        imageUrl: `https://api.example.com/image?x=${hostile}`,
        explorerUrl: `https://explorer.example.com/${hostile}`,
      }),
    );
    expect(html).not.toContain("<script");
    expect(html).not.toContain(`href='x`);
    expect(html).toContain("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;a href=&#39;x");
    // Every attribute stays one attribute: no quote of a value closes it early.
    for (const tag of html.match(/<(a|img) [^>]*>/g) ?? []) {
      expect(tag).toMatch(/^<(a|img)( [a-z-]+="[^"<>]*")+>$/);
    }
  });

  it("takes EXPLORER_URL from the configuration, http(s) only, without its trailing slash", () => {
    expect(loadConfig(testApiSettings()).chain.explorerUrl).toBeNull();
    expect(loadConfig(testApiSettings({ EXPLORER_URL: "https://sepolia.basescan.org/" })).chain.explorerUrl).toBe("https://sepolia.basescan.org");
    expect(() => loadConfig(testApiSettings({ EXPLORER_URL: "javascript:alert(1)" }))).toThrow(/EXPLORER_URL/);
    expect(() => loadConfig(testApiSettings({ EXPLORER_URL: "not a url" }))).toThrow(/EXPLORER_URL/);
  });
});
