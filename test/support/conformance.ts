/**
 * Every answer a test gets from the API, checked against the published OpenAPI document
 * (docs/openapi.json, which openapi.test.ts proves is the served one) by an independent validator,
 * Ajv 2020 over the document's own schemas: the status is one the operation declares, the content
 * type one its answer declares, the body valid against that schema with no field the schema does
 * not name, and the headers declared with their schemas. Every test file's fetch is wrapped
 * (`checkEveryAnswer`, from setup-file.ts), so the answers `send`, the SDK and plain fetches get are
 * all checked as they arrive: a test that gets an undocumented answer fails where it got it (a path
 * the document does not list, a page or a webhook receiver, is not checked).
 *
 * Each answer is also counted per operation and status class in a file of the worker's under the
 * run's temp dir; the run's teardown (global-setup.ts) then requires a documented success and a
 * documented refusal (4xx) for every operation (`coverageReport`): the suite drives every operation
 * both ways.
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { testEnvironment } from "./environment.ts";
import { type OpenApiDocument, operationsOf } from "./openapi-document.ts";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const DOC_ID = "https://art-platform.local/openapi.json";

interface Json {
  [key: string]: unknown;
}
interface ResponseObject {
  headers?: Record<string, Json>;
  content?: Record<string, { schema?: Json }>;
}
interface OperationEntry {
  method: string;
  operationId: string;
  pattern: RegExp;
  params: number;
  responses: Record<string, ResponseObject>;
  pointer: string;
}

let loaded: { operations: OperationEntry[]; ajv: Ajv2020; headers: Record<string, Json>; validators: Map<string, ValidateFunction> } | undefined;

/** The committed document, as read once per worker. */
function publishedDocument(): Json {
  return JSON.parse(readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8")) as Json;
}

function load() {
  if (loaded) return loaded;
  const document = strict(publishedDocument());
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addFormat("binary", true);
  ajv.addSchema(document, DOC_ID);
  // The operations as the fuzz suite enumerates them (openapi-document.ts), with their answers as documented.
  const paths = document.paths as Record<string, Record<string, { responses: Record<string, ResponseObject> }>>;
  const operations: OperationEntry[] = operationsOf(document as unknown as OpenApiDocument).map((op) => {
    const method = op.method.toLowerCase();
    const source = op.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+");
    return {
      method: op.method,
      operationId: op.operationId,
      pattern: new RegExp(`^${source}$`),
      params: (op.path.match(/\{/g) ?? []).length,
      responses: paths[op.path]![method]!.responses,
      pointer: `#/paths/${escapePointer(op.path)}/${method}`,
    };
  });
  // A literal segment wins over a parameter (/v1/users/me before /v1/users/{id}).
  operations.sort((a, b) => a.params - b.params);
  loaded = { operations, ajv, headers: ((document.components as Json).headers ?? {}) as Record<string, Json>, validators: new Map() };
  return loaded;
}

/**
 * The document made strict about fields: every object schema that names its properties and says
 * nothing of others refuses others (`unevaluatedProperties: false`), except one that is a part of
 * an `allOf` (its siblings name the rest: the whole is made strict instead) or is referenced from one.
 */
function strict(document: Json): Json {
  const copy = structuredClone(document);
  const partsOfAllOf = new Set<unknown>();
  const referencedFromAllOf = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== "object" || node === null) return;
    const n = node as Json;
    if (Array.isArray(n.allOf)) {
      for (const part of n.allOf as Json[]) {
        partsOfAllOf.add(part);
        if (typeof part.$ref === "string") referencedFromAllOf.add(part.$ref);
      }
    }
    for (const value of Object.values(n)) visit(value);
  };
  visit(copy);
  const schemas = ((copy.components as Json).schemas ?? {}) as Record<string, Json>;
  const tighten = (node: unknown, ref: string | null): void => {
    if (Array.isArray(node)) return node.forEach((n) => tighten(n, null));
    if (typeof node !== "object" || node === null) return;
    const n = node as Json;
    const named = typeof n.properties === "object" || Array.isArray(n.allOf);
    const excused = partsOfAllOf.has(n) || (ref !== null && referencedFromAllOf.has(ref));
    if (named && !excused && n.additionalProperties === undefined && n.unevaluatedProperties === undefined) n.unevaluatedProperties = false;
    for (const [key, value] of Object.entries(n)) if (key !== "example" && key !== "examples") tighten(value, null);
  };
  for (const [name, schema] of Object.entries(schemas)) tighten(schema, `#/components/schemas/${name}`);
  for (const [key, value] of Object.entries(copy)) if (key !== "components") tighten(value, null);
  return copy;
}

const escapePointer = (segment: string) => segment.replace(/~/g, "~0").replace(/\//g, "~1");

/** The documented operation a request is for, or undefined for a path the document does not list (a page, an asset). */
function operationFor(method: string, pathname: string): OperationEntry | undefined {
  return load().operations.find((op) => op.method === method.toUpperCase() && op.pattern.test(pathname));
}

export interface AnswerToCheck {
  method: string;
  url: URL;
  status: number;
  headers: Headers;
  /** The body as text (empty for none). */
  text: string;
}

/** What in `answer` the document does not say; empty when it conforms (or names no documented operation). */
export function violationsOf(answer: AnswerToCheck): string[] {
  const method = answer.method.toUpperCase();
  // HEAD answers a GET's headers without its body.
  const op = operationFor(method === "HEAD" ? "GET" : method, answer.url.pathname);
  if (!op) return [];
  record(op, answer.status);
  const { ajv, validators, headers: headerComponents } = load();
  const where = `${method} ${answer.url.pathname} (${op.operationId}) answered ${answer.status}`;
  const statusKey = [String(answer.status), `${String(answer.status)[0]}XX`, "default"].find((k) => op.responses[k] !== undefined);
  if (!statusKey) return [`${where}: the operation does not document ${answer.status} (it documents ${Object.keys(op.responses).join(", ")})`];
  const response = op.responses[statusKey]!;
  const problems: string[] = [];

  const declared = response.content ?? {};
  const mediaType = (answer.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  const hasBody = answer.text.length > 0 && method !== "HEAD";
  if (hasBody && Object.keys(declared).length === 0) problems.push(`${where}: a body (${mediaType || "no content type"}) where the document declares none`);
  // A declared media range (`image/*`) covers its types.
  const covered = mediaType in declared || Object.keys(declared).some((range) => range.endsWith("/*") && mediaType.startsWith(range.slice(0, -1)));
  if (hasBody && Object.keys(declared).length > 0 && !covered) problems.push(`${where}: content type ${mediaType || "(none)"}, documented ${Object.keys(declared).join(", ")}`);
  if (hasBody && mediaType in declared && /json$/.test(mediaType) && declared[mediaType]!.schema) {
    const key = `${op.pointer}/responses/${statusKey}/content/${escapePointer(mediaType)}`;
    let validate = validators.get(key);
    if (!validate) {
      validate = ajv.compile({ $ref: `${DOC_ID}${key}/schema` });
      validators.set(key, validate);
    }
    let body: unknown;
    try {
      body = JSON.parse(answer.text);
    } catch {
      problems.push(`${where}: ${mediaType} that is not JSON`);
    }
    if (body !== undefined && !validate(body)) {
      const said = (validate.errors ?? []).map((e) => `body${e.instancePath} ${e.message}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ""}`);
      problems.push(`${where}: the body does not match its schema: ${[...new Set(said)].slice(0, 8).join("; ")}`);
    }
  }
  for (const [name, declaredHeader] of Object.entries(response.headers ?? {})) {
    const header = typeof declaredHeader.$ref === "string" ? headerComponents[String(declaredHeader.$ref).split("/").pop()!]! : declaredHeader;
    const value = answer.headers.get(name);
    if (value === null) {
      if (header.required === true) problems.push(`${where}: the required header ${name} is missing`);
      continue;
    }
    const schema = header.schema as Json | undefined;
    if (schema && !headerValueMatches(value, schema)) problems.push(`${where}: header ${name}: ${JSON.stringify(value)} does not match ${JSON.stringify(schema)}`);
  }
  return problems;
}

function headerValueMatches(value: string, schema: Json): boolean {
  if (schema.type === "integer") return /^-?\d+$/.test(value);
  if (Array.isArray(schema.enum)) return schema.enum.includes(value);
  return true;
}

/** Checks an answer: throws (failing the test that got it) when it does not conform to the document. */
export function checkAnswer(answer: AnswerToCheck): void {
  if (process.env.CONFORMANCE === "off") return;
  const problems = violationsOf(answer);
  if (problems.length === 0) return;
  // CONFORMANCE=record: the violations written down (a survey of the whole suite) rather than thrown.
  const dir = coverageDir();
  if (process.env.CONFORMANCE === "record" && dir) return appendFileSync(path.join(dir, `violations-${process.pid}.txt`), `${problems.join("\n")}\n`);
  throw new Error(`The answer does not conform to docs/openapi.json:\n- ${problems.join("\n- ")}`);
}

// ---- coverage ----

/** Where the run's answers are counted: the run's temp dir (global-setup.ts), when there is a run. */
function coverageDir(): string | undefined {
  let dir: string;
  try {
    dir = conformanceDir(testEnvironment().tempDir);
  } catch {
    return undefined;
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}

export const conformanceDir = (tempDir: string) => path.join(tempDir, "conformance");

function record(op: OperationEntry, status: number): void {
  const dir = coverageDir();
  if (!dir) return;
  appendFileSync(path.join(dir, `answers-${process.pid}.txt`), `${op.operationId} ${status}\n`);
}

/** The run's coverage: operations with no 2xx answer, with no 4xx answer, out of all; the violations recorded (CONFORMANCE=record). */
export function coverageReport(dir: string): { operations: number; answered: number; answers: number; statuses: number; noSuccess: string[]; noRefusal: string[]; violations: string[] } {
  const seen = new Set<string>();
  const pairs = new Set<string>();
  let answers = 0;
  if (!existsSync(dir)) return { operations: load().operations.length, answered: 0, answers: 0, statuses: 0, noSuccess: [], noRefusal: [], violations: [] };
  const violations = [...new Set(readdirSync(dir).filter((f) => f.startsWith("violations-")).flatMap((f) => readFileSync(path.join(dir, f), "utf8").split("\n").filter(Boolean)))];
  for (const file of readdirSync(dir).filter((f) => f.startsWith("answers-"))) {
    for (const line of readFileSync(path.join(dir, file), "utf8").split("\n")) {
      if (!line) continue;
      const [id, status] = line.split(" ");
      answers++;
      pairs.add(line);
      seen.add(`${id} ${status![0]}xx`);
    }
  }
  const all = load().operations.map((op) => op.operationId);
  return {
    operations: all.length,
    answered: all.filter((id) => seen.has(`${id} 2xx`) || seen.has(`${id} 4xx`)).length,
    answers,
    statuses: pairs.size,
    noSuccess: all.filter((id) => !seen.has(`${id} 2xx`)).sort(),
    noRefusal: all.filter((id) => !seen.has(`${id} 4xx`)).sort(),
    violations,
  };
}

/** Wraps globalThis.fetch (once per worker) so that every answer is checked (`checkAnswer`) before the caller reads it. */
export function checkEveryAnswer(): void {
  const current = globalThis.fetch as typeof fetch & { conformance?: true };
  if (current.conformance) return;
  const checked = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const response = await current(request);
    // HEAD and bodiless answers have no text to read; a body is read from a clone, the caller's stays whole.
    const text = response.body ? await response.clone().text() : "";
    checkAnswer({ method: request.method, url: new URL(request.url), status: response.status, headers: response.headers, text });
    return response;
  };
  globalThis.fetch = Object.assign(checked, { conformance: true as const });
}
