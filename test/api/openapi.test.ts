import { readFileSync } from "node:fs";
import type { ZodType } from "zod";
import { describe, expect, it } from "vitest";
import { declareRoutes } from "../../api/src/app.ts";
import { ERROR_CODES, type ErrorCode, PROBLEM_TYPES, problemTypeUrl } from "../../api/src/lib/problem-types.ts";
import { modules } from "../../api/src/modules/index.ts";
import { documentationConfig, documentText } from "../../tools/openapi.ts";
import { createUser, useTestApi } from "../support/api.ts";

const api = useTestApi();

type Schema = { $ref?: string; example?: unknown; examples?: unknown[] };
type Example = { $ref?: string; value?: { type: string; status: number; code: string } };
type Operation = {
  operationId: string;
  parameters?: { in: string; name: string; description?: string }[];
  requestBody?: { content: Record<string, { schema: Schema; example?: unknown; examples?: unknown }> };
  responses: Record<string, { content?: Record<string, { examples?: Record<string, Example> }> }>;
};
type Document = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; examples: Record<string, Example> };
  servers: { url: string }[];
};

async function servedDocument(): Promise<Document> {
  const res = await api.request("GET", "/v1/openapi.json");
  expect(res.status).toBe(200);
  return res.body;
}

function operationsOf(doc: Document): Operation[] {
  return Object.values(doc.paths).flatMap((item) => Object.values(item));
}

/** The example of one media type of a body: on the media type, else on its (referenced) schema. */
function exampleOf(doc: Document, media: { schema: Schema; example?: unknown; examples?: unknown }): unknown {
  if (media.example !== undefined) return media.example;
  const schema = media.schema.$ref ? doc.components.schemas[media.schema.$ref.replace("#/components/schemas/", "")]! : media.schema;
  return schema.example ?? schema.examples?.[0];
}

describe("the OpenAPI document", () => {
  it("shows an example of every request body, in each of its media types", async () => {
    const doc = await servedDocument();
    const bodies = operationsOf(doc).flatMap((op) => Object.entries(op.requestBody?.content ?? {}).map(([type, media]) => ({ op: op.operationId, type, media })));
    expect(bodies.length).toBeGreaterThan(40);
    expect(bodies.filter((b) => exampleOf(doc, b.media) === undefined).map((b) => `${b.op} ${b.type}`)).toEqual([]);
  });

  it("shows JSON body examples that the route's own validation accepts", async () => {
    const doc = await servedDocument();
    const examples = new Map(
      operationsOf(doc).flatMap((op) => {
        const json = op.requestBody?.content["application/json"];
        return json ? [[op.operationId, exampleOf(doc, json)] as const] : [];
      }),
    );
    const refused: string[] = [];
    for (const definition of declareRoutes(documentationConfig(), modules).definitions) {
      if (definition.type !== "route") continue;
      const json = definition.route.request?.body?.content["application/json"];
      const schema = json && "schema" in json ? (json.schema as ZodType) : undefined;
      if (!schema) continue;
      const checked = schema.safeParse(examples.get(definition.route.operationId!));
      if (!checked.success) refused.push(`${definition.route.operationId}: ${checked.error.message}`);
    }
    expect(examples.size).toBeGreaterThan(35);
    expect(refused).toEqual([]);
  });

  it("says which JSON bodies may be empty or left out, as the route's own validation decides", async () => {
    const doc = await servedDocument();
    const schemaOf = (s: Schema & { required?: string[]; minProperties?: number }) =>
      (s.$ref ? doc.components.schemas[s.$ref.replace("#/components/schemas/", "")]! : s) as Schema & { required?: string[]; minProperties?: number };
    const documented = new Map(
      Object.values(doc.paths).flatMap((item) =>
        Object.values(item).flatMap((op) => {
          const body = op.requestBody as (Operation["requestBody"] & { required?: boolean }) | undefined;
          const json = body?.content["application/json"];
          return json ? [[op.operationId, { required: body!.required === true, schema: schemaOf(json.schema) }] as const] : [];
        }),
      ),
    );
    const wrong: string[] = [];
    let emptyRefused = 0;
    for (const definition of declareRoutes(documentationConfig(), modules).definitions) {
      if (definition.type !== "route") continue;
      const json = definition.route.request?.body?.content["application/json"];
      const schema = json && "schema" in json ? (json.schema as ZodType) : undefined;
      const entry = documented.get(definition.route.operationId!);
      if (!schema || !entry) continue;
      // `{}` refused: the document must say so (a required member, or at least one member).
      if (!schema.safeParse({}).success) {
        emptyRefused += 1;
        if (!(entry.schema.required?.length || (entry.schema.minProperties ?? 0) >= 1)) wrong.push(`${definition.route.operationId}: refuses {} but its schema allows it`);
      }
      // A DELETE reads a missing body as {}: its body is optional, and {} must then be accepted.
      if (definition.route.method === "delete" && (entry.required || !schema.safeParse({}).success)) wrong.push(`${definition.route.operationId}: a DELETE whose body is required`);
    }
    expect(emptyRefused).toBeGreaterThan(20);
    expect(wrong).toEqual([]);
  });

  it("declares every header an answer carries, beyond HTTP's own, on that operation and status", async () => {
    const doc = (await servedDocument()) as Document & { paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>> };
    // HTTP's and the browser's own: not the API's to declare.
    const generic = /^(content-|date$|connection$|keep-alive$|transfer-encoding$|vary$|cache-control$|x-content-type-options$|access-control-)/;
    const user = await createUser(api);
    const key = `hdr-${user.id}`;
    const first = await api.request("GET", "/v1/artworks");
    const answers: [string, string, { status: number; headers: Headers }][] = [
      ["get", "/v1/artworks", first],
      ["get", "/v1/artworks", await api.request("GET", "/v1/artworks", { headers: { "if-none-match": first.headers.get("etag")! } })],
      ["get", "/v1/users/me", await api.request("GET", "/v1/users/me")],
      ["get", "/v1/users/me", await api.request("GET", "/v1/users/me", { token: user.token })],
      ["post", "/v1/auth/token", await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["read"] }, headers: { "idempotency-key": key } })],
      ["post", "/v1/auth/token", await api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["read"] }, headers: { "idempotency-key": key } })],
      ["get", "/v1/artworks/{id}", await api.request("GET", "/v1/artworks/art_00000000000000000000000000")],
    ];
    const undeclared: string[] = [];
    const statuses = new Set<number>();
    for (const [method, path, res] of answers) {
      statuses.add(res.status);
      const declared = Object.keys(doc.paths[path]![method]!.responses[String(res.status)]?.headers ?? {}).map((h) => h.toLowerCase());
      for (const [name] of res.headers) if (!generic.test(name) && !declared.includes(name)) undeclared.push(`${method.toUpperCase()} ${path} ${res.status}: ${name}`);
    }
    expect([...statuses].sort()).toEqual([200, 201, 304, 401, 404]);
    expect(answers[5]![2].headers.get("idempotent-replayed")).toBe("true");
    expect(undeclared).toEqual([]);
  });

  it("describes every path parameter", async () => {
    const doc = await servedDocument();
    const parameters = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([method, op]) =>
        [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({ at: `${method.toUpperCase()} ${path} {${name}}`, declared: op.parameters?.find((p) => p.in === "path" && p.name === name) })),
      ),
    );
    expect(parameters.length).toBeGreaterThan(70);
    expect(parameters.filter((p) => !p.declared?.description).map((p) => p.at)).toEqual([]);
    const purchase = doc.paths["/v1/fractional/{id}/purchase"]!.post!.parameters!.find((p) => p.name === "id")!;
    expect(purchase.description).toMatch(/^The artwork's id: `art_`/);
  });

  it("documents the Idempotency-Key header every POST takes, as the router checks it", async () => {
    const doc = await servedDocument();
    const posts = Object.entries(doc.paths).flatMap(([path, item]) => (item.post ? [{ path, op: item.post }] : []));
    expect(posts.length).toBeGreaterThan(30);
    expect(posts.filter(({ op }) => !op.parameters?.some((p) => p.in === "header" && p.name === "Idempotency-Key" && p.description)).map((p) => p.path)).toEqual([]);
  });

  it("shows each error answer with examples of codes that its status carries, one per code", async () => {
    const doc = await servedDocument();
    const wrong: string[] = [];
    let answers = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, response] of Object.entries(op.responses)) {
          const problem = response.content?.["application/problem+json"];
          if (!problem) continue;
          answers++;
          const at = `${method.toUpperCase()} ${path} ${status}`;
          const codes = ERROR_CODES.filter((code) => PROBLEM_TYPES[code].status === Number(status));
          const examples = Object.entries(problem.examples ?? {}).map(([name, ex]) => [name, ex.$ref ? doc.components.examples[ex.$ref.replace("#/components/examples/", "")] : ex] as const);
          if (examples.length === 0) wrong.push(`${at}: no example`);
          for (const [name, ex] of examples) {
            const value = ex?.value;
            if (!value || value.code !== name || value.status !== Number(status) || !codes.includes(value.code as ErrorCode) || value.type !== problemTypeUrl(value.code as ErrorCode)) {
              wrong.push(`${at}: example ${name} is ${JSON.stringify(value)}`);
            }
          }
        }
      }
    }
    expect(answers).toBeGreaterThan(400);
    expect(wrong).toEqual([]);
    const unauthorized = doc.paths["/v1/artworks"]!.post!.responses["401"]!.content!["application/problem+json"]!.examples!;
    expect(Object.keys(unauthorized)).toEqual(["unauthenticated", "token_invalid", "token_expired", "token_revoked"]);
  });

  it("is committed as served: docs/openapi.json is `npm run openapi`'s output for this code", async () => {
    const committed = readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8");
    const served = await servedDocument();
    // Only the server differs: the committed document names `npm start`'s.
    const expected = documentText({ ...served, servers: JSON.parse(committed).servers });
    expect(committed === expected, "docs/openapi.json is stale: run `npm run sdk:generate`").toBe(true);
  });
});
