/**
 * The documentation's links resolve (tools/docs-links.ts): every relative link of README.md,
 * CHANGELOG.md and docs/ reaches its file and heading, and every `docs/….md#anchor` the code cites
 * names a heading that exists. Reads files only.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { anchorsOf, checkDocs, githubSlug, linksOf } from "../../tools/docs-links.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

describe("the documentation's links", () => {
  it("all resolve, in the docs and in the code's citations", () => {
    expect(checkDocs(root)).toEqual([]);
  });
});

describe("anchors and links as GitHub renders them", () => {
  it("slugs a heading: lower case, punctuation and markup dropped, spaces as dashes", () => {
    expect(githubSlug("4. Verify the sources")).toBe("4-verify-the-sources");
    expect(githubSlug("Artworks & certification")).toBe("artworks--certification");
    expect(githubSlug("`npm start`'s own")).toBe("npm-starts-own");
    expect(githubSlug("The [chain](x.md) is the source_of_truth")).toBe("the-chain-is-the-source_of_truth");
  });

  it("numbers repeated headings and ignores those in code blocks", () => {
    const anchors = anchorsOf("# Title\n## Errors\n```sh\n# not a heading\n```\n## Errors\n<a id=\"custom\"></a>\n");
    expect([...anchors].sort()).toEqual(["custom", "errors", "errors-1", "title"]);
  });

  it("finds links outside code only", () => {
    const links = linksOf("See [a](a.md#x) and `[b](b.md)`.\n```\n[c](c.md)\n```\n[d]: d.md\n");
    expect(links).toEqual([
      { target: "a.md#x", line: 1 },
      { target: "d.md", line: 5 },
    ]);
  });
});
