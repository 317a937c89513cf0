import { OpenApiGeneratorV31, type OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";
import { registerProblemExamples } from "../http/problem.ts";
import { registerResponseHeaders } from "../http/response-headers.ts";

export function buildOpenApiDocument(registry: OpenAPIRegistry, serverUrl: string) {
  registry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description:
      "An access token from POST /v1/auth/token or /v1/auth/siwe/verify (24 h, the scopes it was asked for), or an API key itself (`sk_…`), which acts as its user with the key's scopes (its cap, else everything its user's role may hold) until it is revoked. One rule on every endpoint: whatever a token with those scopes may call, the key may call; outside them 403 `insufficient_scope`; a revoked key is 401 `token_revoked`.",
  });
  registry.registerComponent("securitySchemes", "basicAuth", {
    type: "http",
    scheme: "basic",
    description: "On the pages made for browsers only (the admin report page): any user name, and as the password what the bearer would be (an admin's API key or token).",
  });
  registerProblemExamples(registry);
  registerResponseHeaders(registry);
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Art Platform Developer API",
      version: "1.0.0-preview",
      description: [
        "Artworks certified on a blockchain, a marketplace, fractional ownership, a community, platform events and rewards.",
        "",
        "Errors are RFC 9457 problem+json with a stable `code`; their `type`, `/problems/<code>`, is that code's page (when it happens, what to do), and `GET /problems` lists every code (HTML for a browser, JSON otherwise). Every POST accepts an `Idempotency-Key` header (Stripe semantics: a retry replays the stored response; the same key with a different body is 422; while the first is running, 409).",
        "Idempotency keys belong to the user, whichever of its tokens sends them; a token with other scopes gets 422, not a replay (anonymous requests: keys per IP).",
        "Responses carry `X-Request-Id` and `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`; a 429 carries `Retry-After`. Rate limits are per user: one budget shared by all of a user's tokens and keys; anonymous calls and refused credentials count against the caller's IP.",
        "Browser pages of the origins a deployment allows (`CORS_ORIGINS`; outside production `http://localhost:*` and `http://127.0.0.1:*` by default) may call the API across origins: preflights answer 204 without a credential, and the response headers this description names are exposed to the page (docs/cors-and-keys.md).",
        "Reads answering JSON carry a weak `ETag` and answer 304 to `If-None-Match`. A public read made without a credential may be served from the answering process's cache (`X-Cache: hit`): kept at most `PUBLIC_READ_CACHE_TTL_MS` (default 1 s) and forgotten on any change to the data it shows; a write never leaves its own process serving the old state.",
        "Lists take `page` (from 1) and `limit` and answer `{data, pagination: {page, limit, total, has_more}}`.",
        "String fields (body, query, path, form) refuse control characters (newline and tab are allowed in multiline text: descriptions, bio, reasons) and lone UTF-16 surrogates.",
      ].join("\n"),
      // The repository's licence (LICENSE), which covers this description as it covers the SDK.
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [{ url: serverUrl }],
  });
}

/**
 * The Content-Security-Policy of /docs: Swagger UI's bundle, styles and init script from the API
 * itself (no inline script), its inline style attributes and data: icons, and "Try it out" calls
 * to the API (`apiOrigin`, the documented server, may differ from the origin the page came from).
 */
export function swaggerPageCsp(apiOrigin: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    `connect-src 'self' ${apiOrigin}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

export function swaggerPage(specUrl: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>Art Platform API reference</title>
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>`;
}

/**
 * A public operation declares `security: [{}, {bearerAuth: []}]` (no credential, or a token that
 * sees more). Swagger UI takes the empty requirement as met and draws such an operation's padlock
 * closed before any token is entered, while it draws the protected ones open: backwards for a
 * reader. This plugin judges the padlock on the requirements that name a scheme only, so every
 * padlock is open until a token is entered, and closed once that token is sent with the call.
 */
const PADLOCK_PLUGIN = `function padlockPlugin() {
  return { statePlugins: { auth: { wrapSelectors: { isAuthorized: (original) => (state, security) => {
    if (!security || typeof security.filter !== "function") return original(security);
    const named = security.filter((requirement) => !requirement.isEmpty());
    return original(named.size > 0 ? named : security);
  } } } } };
}`;

export function swaggerInit(specUrl: string): string {
  // validatorUrl null: the default sends the spec's URL to validator.swagger.io for a badge.
  return `${PADLOCK_PLUGIN}\nwindow.ui = SwaggerUIBundle({ url: ${JSON.stringify(specUrl)}, dom_id: "#swagger-ui", deepLinking: true, persistAuthorization: true, validatorUrl: null, plugins: [padlockPlugin] });\n`;
}
