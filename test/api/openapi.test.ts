import { readFileSync } from "node:fs";
import type { ZodType } from "zod";
import { describe, expect, it } from "vitest";
import { declareRoutes } from "../../api/src/app.ts";
import { modules } from "../../api/src/modules/index.ts";
import { documentationConfig, documentText } from "../../tools/openapi.ts";
import { useTestApi } from "./helpers.ts";

const api = useTestApi();

type Schema = { $ref?: string; example?: unknown; examples?: unknown[] };
type Operation = { operationId: string; requestBody?: { content: Record<string, { schema: Schema; example?: unknown; examples?: unknown }> } };
type Document = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> }; servers: { url: string }[] };

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

  it("is committed as served: docs/openapi.json is `npm run openapi`'s output for this code", async () => {
    const committed = readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8");
    const served = await servedDocument();
    // Only the server differs: the committed document names `npm start`'s.
    const expected = documentText({ ...served, servers: JSON.parse(committed).servers });
    expect(committed === expected, "docs/openapi.json is stale: run `npm run sdk:generate`").toBe(true);
  });
});
