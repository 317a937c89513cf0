/**
 * Checks the documentation's links: every relative link in README.md, CHANGELOG.md and docs/**.md
 * reaches a file (and a heading of it, when the link names one), and every `docs/….md#anchor` the
 * code cites (api/src, tools, test, indexer, contracts, clients/typescript) names a heading that
 * exists. Anchors are GitHub's: the heading's text in lower case, punctuation dropped, spaces as `-`.
 *
 *   npx tsx tools/docs-links.ts        (prints each broken link; exit 1 if any)
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export interface BrokenLink {
  /** Where the link is, `file:line`, relative to the root. */
  at: string;
  target: string;
  problem: string;
}

const CODE_ROOTS = ["api/src", "tools", "test", "indexer", "contracts", "clients/typescript"];
const CODE_EXTENSIONS = new Set([".ts", ".sol", ".js", ".cjs", ".mjs"]);
const SKIPPED_DIRS = new Set(["node_modules", "dist", ".git", "artifacts", "cache", "generated"]);

/** GitHub's anchor of a heading: lower case, inline markup and punctuation dropped, spaces as `-`. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // links and images: their text
    .replace(/<[^>]+>/g, "") // inline HTML
    .replace(/[`*~]/g, "")
    .replace(/(^|\s)_+|_+(\s|$)/g, "$1$2"); // _emphasis_, not snake_case
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** Lines outside fenced code blocks, with their 1-based numbers. */
function proseLines(markdown: string): { line: string; n: number }[] {
  const out: { line: string; n: number }[] = [];
  let fence: string | null = null;
  markdown.split("\n").forEach((line, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === null || marker.startsWith(fence))) {
      fence = fence === null ? marker : null;
      return;
    }
    if (fence === null) out.push({ line, n: i + 1 });
  });
  return out;
}

/** The anchors a Markdown document defines: its headings' slugs (repeats numbered as GitHub does) and explicit ids. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { line } of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = githubSlug(heading);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const id of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(id[1]!);
  }
  return anchors;
}

/** The links of a Markdown document outside code (fenced blocks and inline code spans). */
export function linksOf(markdown: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  for (const { line, n } of proseLines(markdown)) {
    const prose = line.replace(/(`+)[^`]*?\1/g, "");
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: m[1]!, line: n });
    for (const m of prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/g)) links.push({ target: m[1]!, line: n });
  }
  return links;
}

function filesUnder(root: string, dir: string, keep: (file: string) => boolean): string[] {
  const full = path.join(root, dir);
  if (!existsSync(full)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(full, { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) out.push(...filesUnder(root, rel, keep));
    } else if (keep(rel)) out.push(rel);
  }
  return out;
}

/** The Markdown documents whose links are checked. */
export function documentsOf(root: string): string[] {
  return [...["README.md", "CHANGELOG.md"].filter((f) => existsSync(path.join(root, f))), ...filesUnder(root, "docs", (f) => f.endsWith(".md"))];
}

export function checkDocs(root: string): BrokenLink[] {
  const anchorCache = new Map<string, Set<string>>();
  const anchors = (file: string) => {
    if (!anchorCache.has(file)) anchorCache.set(file, anchorsOf(readFileSync(path.join(root, file), "utf8")));
    return anchorCache.get(file)!;
  };
  const broken: BrokenLink[] = [];
  const check = (at: string, target: string, file: string, anchor: string | undefined) => {
    const full = path.join(root, file);
    if (!existsSync(full)) return broken.push({ at, target, problem: `no file ${file}` });
    if (anchor && statSync(full).isFile() && file.endsWith(".md") && !anchors(file).has(anchor)) {
      broken.push({ at, target, problem: `no heading #${anchor} in ${file}` });
    }
  };

  for (const doc of documentsOf(root)) {
    for (const { target, line } of linksOf(readFileSync(path.join(root, doc), "utf8"))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      const [file, anchor] = target.split("#", 2) as [string, string | undefined];
      const resolved = file === "" ? doc : path.normalize(path.join(path.dirname(doc), decodeURIComponent(file)));
      if (resolved.startsWith("..")) {
        broken.push({ at: `${doc}:${line}`, target, problem: "outside the repository" });
        continue;
      }
      check(`${doc}:${line}`, target, resolved, anchor);
    }
  }

  for (const dir of CODE_ROOTS) {
    for (const file of filesUnder(root, dir, (f) => CODE_EXTENSIONS.has(path.extname(f)) && !f.endsWith(".d.ts"))) {
      readFileSync(path.join(root, file), "utf8")
        .split("\n")
        .forEach((text, i) => {
          for (const m of text.matchAll(/(?<![\w./-])docs\/[\w./-]+?\.md(?:#[\w-]+)?/g)) {
            const [cited, anchor] = m[0].split("#", 2) as [string, string | undefined];
            check(`${file}:${i + 1}`, m[0], cited, anchor);
          }
        });
    }
  }
  return broken;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = path.resolve(fileURLToPath(new URL("..", import.meta.url)));
  const broken = checkDocs(root);
  for (const b of broken) console.log(`${b.at}: ${b.target}: ${b.problem}`);
  console.log(broken.length === 0 ? "every link and cited anchor resolves" : `${broken.length} broken`);
  process.exit(broken.length === 0 ? 0 : 1);
}
