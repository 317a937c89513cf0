import { OpenApiGeneratorV31, type OpenAPIRegistry } from "@asteasolutions/zod-to-openapi";

export function buildOpenApiDocument(registry: OpenAPIRegistry, serverUrl: string) {
  registry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "An access token from POST /v1/auth/token or /v1/auth/siwe/verify (24 h, scoped).",
  });
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Art Platform Developer API",
      version: "1.0.0-preview",
      description: [
        "Artworks certified on a blockchain, a marketplace, fractional ownership, a community, platform events and rewards.",
        "",
        "Errors are RFC 9457 problem+json with a stable `code`. Every POST accepts an `Idempotency-Key` header (Stripe semantics: a retry replays the stored response; the same key with a different body is 422; while the first is running, 409).",
        "Responses carry `X-Request-Id` and `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`; a 429 carries `Retry-After`.",
        "Lists take `page` (from 1) and `limit` and answer `{data, pagination: {page, limit, total, has_more}}`.",
      ].join("\n"),
    },
    servers: [{ url: serverUrl }],
  });
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

export function swaggerInit(specUrl: string): string {
  return `window.ui = SwaggerUIBundle({ url: ${JSON.stringify(specUrl)}, dom_id: "#swagger-ui", deepLinking: true, persistAuthorization: true });\n`;
}
