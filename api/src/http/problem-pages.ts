import { STATUS_CODES } from "node:http";
import { type Request, type Response, Router } from "express";
import { ApiError } from "../lib/errors.ts";
import { escapeHtml } from "../lib/html.ts";
import { ERROR_CODES, type ErrorCode, isErrorCode, PROBLEM_TYPES, type ProblemType, problemTypeUrl } from "../lib/problem-types.ts";
import { exampleProblem } from "./problem.ts";

/** No scripts, no outside resources: the pages are text and one inline style sheet. */
const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * What every problem's `type` URL answers: `GET /problems/<code>` (the code's page) and
 * `GET /problems` (every code, each under its anchor `#<code>`), public, as HTML for a browser
 * and as JSON otherwise. Unknown codes are a 404 problem like any other.
 */
export function problemPages(): Router {
  const router = Router();
  router.get("/problems", (req, res) => {
    answer(req, res, () => indexPage(), () => ({ data: ERROR_CODES.map(describe) }));
  });
  router.get("/problems/:code", (req, res) => {
    const code = req.params.code;
    if (!isErrorCode(code)) throw new ApiError(404, "not_found", `No problem type ${code}: GET /problems lists them`);
    answer(req, res, () => codePage(code), () => describe(code));
  });
  return router;
}

/** A problem type as JSON: the catalogue's entry with its URL and an example body. */
export function describe(code: ErrorCode) {
  const type: ProblemType = PROBLEM_TYPES[code];
  return { code, type: problemTypeUrl(code), status: type.status, title: type.title, when: type.when, what_to_do: type.whatToDo, members: type.members ?? {}, example: exampleProblem(code) };
}

function answer(req: Request, res: Response, html: () => string, json: () => unknown): void {
  res.setHeader("Vary", "Accept");
  // The pages change only with the code that serves them.
  res.setHeader("Cache-Control", "public, max-age=300");
  const wanted = req.accepts(["application/json", "application/problem+json", "text/html"]);
  if (wanted === "text/html") {
    res.setHeader("Content-Security-Policy", PAGE_CSP);
    res.type("text/html; charset=utf-8").send(html());
    return;
  }
  res.type(`${wanted === "application/problem+json" ? wanted : "application/json"}; charset=utf-8`).send(JSON.stringify(json()));
}

/** Catalogue text to HTML: escaped, with `code` spans. */
function prose(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, "<code>$1</code>");
}

function statusLine(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? ""}`.trim();
}

function section(code: ErrorCode, heading: "h1" | "h2"): string {
  const type: ProblemType = PROBLEM_TYPES[code];
  const sub = heading === "h1" ? "h2" : "h3";
  const members = Object.entries(type.members ?? {});
  return [
    `<${heading} id="${code}">${escapeHtml(type.title)} <code>${code}</code></${heading}>`,
    `<p class="status">HTTP ${escapeHtml(statusLine(type.status))} · <code>type: "${problemTypeUrl(code)}"</code></p>`,
    `<${sub}>When it happens</${sub}><p>${prose(type.when)}</p>`,
    `<${sub}>What to do</${sub}><p>${prose(type.whatToDo)}</p>`,
    members.length > 0 ? `<${sub}>Members besides the common ones</${sub}><dl>${members.map(([name, meaning]) => `<dt><code>${escapeHtml(name)}</code></dt><dd>${prose(meaning)}</dd>`).join("")}</dl>` : "",
    `<${sub}>Example</${sub}><pre>${escapeHtml(JSON.stringify(exampleProblem(code), null, 2))}</pre>`,
  ].join("\n");
}

function codePage(code: ErrorCode): string {
  return page(`${PROBLEM_TYPES[code].title} (${code})`, `${section(code, "h1")}\n<p><a href="/problems#${code}">Every problem type</a> · <a href="/docs">API reference</a></p>`);
}

function indexPage(): string {
  const rows = ERROR_CODES.map((code) => `<tr><td>${PROBLEM_TYPES[code].status}</td><td><a href="#${code}"><code>${code}</code></a></td><td>${escapeHtml(PROBLEM_TYPES[code].title)}</td></tr>`).join("\n");
  return page(
    "Problem types",
    [
      "<h1>Problem types</h1>",
      `<p>Every error the API answers is <code>application/problem+json</code> (RFC 9457) with a stable <code>code</code>; its <code>type</code>, <code>/problems/&lt;code&gt;</code>, is that code's page. <a href="/docs">API reference</a></p>`,
      `<table><thead><tr><th>Status</th><th>Code</th><th>Title</th></tr></thead><tbody>\n${rows}\n</tbody></table>`,
      ...ERROR_CODES.map((code) => `<section>\n${section(code, "h2")}\n<p><a href="/problems/${code}">This problem's page</a></p>\n</section>`),
    ].join("\n"),
  );
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<title>${escapeHtml(title)} · Art Platform API</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 50rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f; }
code, pre { font-family: ui-monospace, monospace; font-size: 0.9em; }
pre { background: #f4f4f6; padding: 0.75rem; overflow-x: auto; }
table { border-collapse: collapse; } td, th { text-align: left; padding: 0.2rem 0.8rem 0.2rem 0; }
.status { color: #555; } section { border-top: 1px solid #ddd; margin-top: 2rem; }
</style>
</head>
<body>
${body}
</body>
</html>
`;
}
