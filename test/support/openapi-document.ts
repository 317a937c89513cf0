/**
 * The served OpenAPI document as the fuzz suite reads it (test/api/fuzz.test.ts): the schema and
 * operation shapes, the operations of a document, and the context values are drawn in (schemas
 * resolved, ids of existing resources).
 */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  anyOf?: JsonSchema[];
  example?: unknown;
}

export interface Parameter {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  schema: JsonSchema;
}

export interface Operation {
  method: string;
  /** As documented: `/v1/artworks/{id}`. */
  path: string;
  operationId: string;
  auth: { public?: true; scope?: string | null; roles?: string[]; api_key?: true };
  parameters: Parameter[];
  /** The application/json body. */
  body: JsonSchema | undefined;
  /** The multipart/form-data body, for routes that take files. */
  form: JsonSchema | undefined;
  /** Documented answers: status -> media types. */
  responses: Record<string, string[]>;
}

interface OpenApiOperation {
  operationId: string;
  "x-auth": Operation["auth"];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { content?: Record<string, unknown> }>;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { schemas: Record<string, JsonSchema> };
}

export function operationsOf(doc: OpenApiDocument): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => ["get", "post", "put", "patch", "delete"].includes(method))
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId,
        auth: op["x-auth"],
        parameters: op.parameters ?? [],
        body: op.requestBody?.content["application/json"]?.schema,
        form: op.requestBody?.content["multipart/form-data"]?.schema,
        responses: Object.fromEntries(Object.entries(op.responses).map(([status, r]) => [status, Object.keys(r.content ?? {})])),
      })),
  );
}

export interface FuzzContext {
  resolve(schema: JsonSchema): JsonSchema;
  /** Ids of existing resources by prefix (`art`, `lst`), for path and body ids. */
  ids(prefix: string): string[];
}

export function contextOf(doc: OpenApiDocument, ids: Map<string, string[]>): FuzzContext {
  const resolve = (s: JsonSchema): JsonSchema => (s.$ref ? resolve(doc.components.schemas[s.$ref.split("/").pop()!]!) : s);
  return { resolve, ids: (prefix) => ids.get(prefix) ?? [] };
}
