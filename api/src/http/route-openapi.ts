import type { OpenAPIRegistry, RouteConfig } from "@asteasolutions/zod-to-openapi";
import { idempotencyHeaders } from "./idempotency.ts";
import { problemResponses } from "./problem.ts";
import { responseHeaders } from "./response-headers.ts";
import type { RouteAuth } from "./route-auth.ts";
import type { RouteDef } from "./route-definition.ts";

/**
 * A route's entry in the OpenAPI document, from its declaration alone: its schemas, its auth rule in
 * words and as `x-auth`, its answers and the problems every route of its kind may answer.
 */
export function documentRoute<A extends RouteAuth, B, Q, P>(registry: OpenAPIRegistry, def: RouteDef<A, B, Q, P>): void {
  const openapiPath = def.path.replace(/:([A-Za-z_]+)/g, "{$1}");
  const request: RouteConfig["request"] = {};
  if (def.params) request.params = def.params as never;
  if (def.query) request.query = def.query as never;
  if (def.method === "post") request.headers = idempotencyHeaders as never;
  if (def.body) {
    request.body = {
      // A DELETE's body is an optional note (a removal's reason): none is read as {}.
      required: def.method !== "delete",
      content: {
        "application/json": { schema: def.body },
        ...(def.multipart ? { "multipart/form-data": { schema: def.multipart.schema as never } } : {}),
      },
    };
  }
  const status = def.status ?? 200;
  const needsAuth = !("public" in def.auth);
  // 403 on public routes too: a suspended user's credential is refused everywhere; 503 on every
  // route: the database (or a dependency the answer needs) may be down.
  // 408 and 431: the server's answers to a request too slow or with headers too large, before any route.
  const extraErrors = new Set<number>([400, 401, 403, 408, 429, 431, 500, 503, ...(def.errors ?? [])]);
  if (def.method === "post") extraErrors.add(409).add(422);
  // A body on any writing method must be JSON (requireJsonBody) and at most 1 MiB, uploads their own limits.
  if (["post", "put", "patch", "delete"].includes(def.method)) extraErrors.add(413).add(415);
  registry.registerPath({
    method: def.method,
    path: openapiPath,
    operationId: def.operationId,
    summary: def.summary,
    description: [
      def.description,
      "public" in def.auth
        ? "Public: works without a token (a token, if sent, must be valid)."
        : `Requires a bearer (an access token or an API key)${def.auth.scope === null ? " of any scope" : ` with the \`${def.auth.scope}\` scope`}${def.auth.roles ? ` and the role ${def.auth.roles.join(" or ")}` : ""}.`,
    ]
      .filter(Boolean)
      .join("\n\n"),
    tags: def.tags,
    security: [...(needsAuth ? [] : [{}]), { bearerAuth: [] }, ...(def.acceptsBasic ? [{ basicAuth: [] }] : [])],
    // The same rule, machine-readable (access tests and generated clients read it).
    "x-auth": "public" in def.auth ? { public: true } : { scope: def.auth.scope, ...(def.auth.roles ? { roles: [...def.auth.roles] } : {}) },
    request,
    responses: {
      [status]: def.response
        ? {
            description: def.responseDescription ?? "Success",
            headers: responseHeaders(def.method, status, def.produces, !needsAuth),
            content: { [def.produces ?? "application/json"]: { schema: def.response }, ...def.alsoProduces },
          }
        : { description: def.responseDescription ?? "Success", headers: responseHeaders(def.method, status, def.produces) },
      ...Object.fromEntries(
        Object.entries(def.alternatives ?? {}).map(([code, alt]) => [
          code,
          alt.schema
            ? { description: alt.description, headers: responseHeaders(def.method, Number(code), alt.contentType), content: { [alt.contentType ?? "application/json"]: { schema: alt.schema } } }
            : { description: alt.description, headers: responseHeaders(def.method, Number(code), alt.contentType) },
        ]),
      ),
      // A JSON read answers 304 to an If-None-Match naming its current ETag.
      ...(def.method === "get" && def.response && !def.produces
        ? { 304: { description: "Not modified: If-None-Match named the current ETag (no body)", headers: responseHeaders(def.method, 304, undefined, !needsAuth) } }
        : {}),
      ...Object.fromEntries(Object.entries(problemResponses([...extraErrors], def.operationId)).map(([code, answer]) => [code, { ...answer, headers: responseHeaders(def.method, Number(code), undefined, !needsAuth) }])),
    },
  });
}
