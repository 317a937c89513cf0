import type { RequestHandler } from "express";
import { originMatcher } from "../lib/origins.ts";
import { RESPONSE_HEADER_NAMES } from "./response-headers.ts";

/** What a browser page may send (preflight's Access-Control-Allow-*): the methods of the routes and the request headers the API reads. */
export const CORS_ALLOWED_METHODS = ["GET", "POST", "PATCH", "PUT", "DELETE"] as const;
export const CORS_ALLOWED_HEADERS = ["Authorization", "Content-Type", "Idempotency-Key", "If-None-Match", "X-Request-Id"] as const;
/** The response headers the API sends beyond the CORS-safelisted ones, which a page may read: those the document declares. */
export const CORS_EXPOSED_HEADERS = RESPONSE_HEADER_NAMES;
/** How long a browser may reuse a preflight's answer: Chromium's cap (Firefox's is a day). */
export const CORS_MAX_AGE_SECONDS = 7200;

/**
 * CORS for the browser origins of `allowedOrigins` (CORS_ORIGINS, see lib/origins.ts), ahead of
 * every route: a preflight is answered here (204), before authentication and rate limits, which it
 * carries nothing for; a request from an allowed origin gets its origin back and the exposed
 * headers, and goes on. An origin not allowed gets no CORS header at all (its preflight too, still
 * 204): the browser then refuses the page the answer, as it does for any server that does not opt
 * in. No credentials mode: the API's credentials are bearer headers, never cookies. Every answer
 * varies on Origin (shared caches and the browser's own keep one answer per origin).
 */
export function cors(allowedOrigins: readonly string[]): RequestHandler {
  if (allowedOrigins.length === 0) return (_req, _res, next) => next();
  const allowed = originMatcher(allowedOrigins);
  return (req, res, next) => {
    res.vary("Origin");
    const origin = req.get("Origin");
    const ok = origin !== undefined && allowed(origin);
    if (req.method === "OPTIONS" && origin !== undefined && req.get("Access-Control-Request-Method") !== undefined) {
      if (ok) {
        res.setHeader("Access-Control-Allow-Origin", origin);
        res.setHeader("Access-Control-Allow-Methods", CORS_ALLOWED_METHODS.join(", "));
        res.setHeader("Access-Control-Allow-Headers", CORS_ALLOWED_HEADERS.join(", "));
        res.setHeader("Access-Control-Max-Age", String(CORS_MAX_AGE_SECONDS));
      }
      res.status(204).end();
      return;
    }
    if (ok) {
      res.setHeader("Access-Control-Allow-Origin", origin);
      res.setHeader("Access-Control-Expose-Headers", CORS_EXPOSED_HEADERS.join(", "));
    }
    next();
  };
}
