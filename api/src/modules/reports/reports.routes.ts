import type { Express, Request, RequestHandler } from "express";
import { type ApiRouter, Reply } from "../../http/route.ts";
import { ApiError } from "../../lib/errors.ts";
import { z } from "../../openapi/zod.ts";
import { VERIFY_PAGE_CSP } from "../certificates/certificates.service.ts";
import { toCsv } from "./report-csv.ts";
import { renderReportPage } from "./report-page.ts";
import * as s from "./reports.schemas.ts";
import { FIGURE_NOTES } from "./report-figures.ts";
import { type ReportsService, toReportView } from "./reports.service.ts";

const PAGE_PATH = "/admin/reports";
/** Browsers ask for credentials of this realm when the page answers 401. */
export const PAGE_REALM = "Admin reports";
/** Quarters in the page's charts. */
const PAGE_QUARTERS = 4;
const admin = { scope: "admin:read", roles: ["admin"] } as const;

const FIGURES_DOC = Object.entries(FIGURE_NOTES)
  .map(([field, note]) => `- \`${field}\`: ${note}`)
  .join("\n");

export function registerReportsRoutes({ api, app }: { api: ApiRouter; app: Express }, reports: ReportsService): void {
  api.route({
    method: "get",
    path: "/v1/admin/reports",
    operationId: "getReport",
    summary: "A quarter's figures (JSON or CSV)",
    description: [
      "Figures of a calendar quarter in UTC (`period`, default the current one; a quarter in progress counts up to `generated_at`). A malformed `period` (`2026-Q5`, `2026Q3`, `26-Q1`), a year before 1970 or a quarter that has not begun is 400 `validation_failed`.",
      FIGURES_DOC,
      "**CSV** for spreadsheets: `?format=csv`, or `Accept: text/csv` without `format`, answers `text/csv` (RFC 4180: a header line with the field names above, in that order, then one data line; CRLF line ends), as an attachment named `report-<period>.csv`. The same figures as an HTML page with charts: `GET /admin/reports`.",
    ].join("\n\n"),
    tags: ["Admin"],
    auth: admin,
    query: s.reportQuery,
    response: s.reportSchema,
    alsoProduces: { "text/csv": { schema: z.string().openapi({ description: "RFC 4180 CSV: a header line of the field names, then one data line", example: "period,generated_at,...\r\n2026-Q3,2026-09-30T12:00:00.000Z,...\r\n" }) } },
    // Its format follows the Accept header, and it says so (Vary): computed per request.
    perRequest: true,
    handler: async ({ req, res, query }) => {
      const format = formatOf(req, query.format);
      const report = toReportView(await reports.report(reports.period(query.period)));
      res.vary("Accept");
      if (format === "json") return report;
      return new Reply(200, toCsv([report]), {
        contentType: "text/csv; charset=utf-8; header=present",
        headers: { "Content-Disposition": `attachment; filename="report-${report.period}.csv"`, "Cache-Control": "no-store" },
      });
    },
  });

  // Before the API's pipeline (the router is mounted after every module's routes): HTTP Basic,
  // which a browser can send, stands for the bearer the pipeline knows.
  app.get(PAGE_PATH, basicAsBearer(PAGE_REALM));
  api.route({
    method: "get",
    path: PAGE_PATH,
    operationId: "getReportPage",
    summary: "The quarter's figures as an HTML page, with charts of the last four quarters",
    description: [
      `The figures of \`GET /v1/admin/reports\` for \`period\` (same rules), a link to the quarters before and after, and inline SVG bar charts of total volume and new users over the ${PAGE_QUARTERS} quarters ending with it. No scripts; served under a Content-Security-Policy without any script source.`,
      `For people with a browser: besides \`Authorization: Bearer <token or API key>\`, HTTP Basic authentication with any user name and an admin's API key (or an admin token) as the password. A refusal is 401 with \`WWW-Authenticate: Basic realm="${PAGE_REALM}"\`, so the browser asks for them.`,
    ].join("\n\n"),
    tags: ["Admin"],
    auth: admin,
    query: s.reportPageQuery,
    acceptsBasic: true,
    produces: "text/html",
    response: z.string().openapi({ description: "An HTML page" }),
    handler: async ({ query }) => {
      const facts = await reports.page(reports.period(query.period), PAGE_QUARTERS);
      return new Reply(200, renderReportPage(facts), {
        contentType: "text/html; charset=utf-8",
        headers: { "Content-Security-Policy": VERIFY_PAGE_CSP, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store" },
      });
    },
  });
}

/** `?format=` when given (else 400), otherwise the Accept header: CSV only when it prefers text/csv. */
function formatOf(req: Request, format: string | undefined): (typeof s.REPORT_FORMATS)[number] {
  if (format === undefined) return req.accepts(["application/json", "text/csv"]) === "text/csv" ? "csv" : "json";
  if (format === "json" || format === "csv") return format;
  throw ApiError.validation([{ field: "format", code: "invalid_value", message: "must be json or csv" }]);
}

/**
 * HTTP Basic credentials (any user name, an API key or a token as the password) become the bearer
 * the API's pipeline checks, and every refusal asks for Basic credentials of `realm`.
 */
function basicAsBearer(realm: string): RequestHandler {
  const challenge = `Basic realm="${realm}"`;
  return (req, res, next) => {
    // The pipeline's refusals challenge for Bearer, which browsers do not prompt for.
    const setHeader = res.setHeader.bind(res);
    res.setHeader = ((name: string, value: number | string | readonly string[]) =>
      setHeader(name, name.toLowerCase() === "www-authenticate" ? challenge : value)) as typeof res.setHeader;
    const basic = /^Basic[ ]+(\S+)\s*$/i.exec(req.get("Authorization") ?? "");
    if (basic) {
      const decoded = Buffer.from(basic[1]!, "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      const password = colon >= 0 ? decoded.slice(colon + 1) : "";
      if (!/^\S+$/.test(password)) {
        throw new ApiError(401, "token_invalid", "Send an admin's API key (or an admin token) as the Basic password, with any user name", {
          headers: { "WWW-Authenticate": challenge },
        });
      }
      req.headers.authorization = `Bearer ${password}`;
    }
    next();
  };
}
