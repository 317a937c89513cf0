/**
 * Requests generated from the served OpenAPI document, for the fuzz suite (test/api/fuzz.test.ts).
 * For one operation, `requestsFor` builds a fast-check arbitrary from its path, query and body
 * schemas: a valid-shaped request with bad or boundary values put in, or a body sent the wrong way
 * (malformed JSON, another content type or charset, multipart where JSON is expected and the
 * reverse). Each request names its `defects`: what makes it invalid under the document, so that
 * it must be refused. Values that are only unusual (`-0`, a page size of ` 5 `, unknown query
 * parameters) are mixed in without counting as defects.
 */
import fc from "fast-check";
import type { FuzzContext, JsonSchema, Operation, Parameter } from "./openapi-document.ts";
import {
  asText,
  bytes,
  CONTROLS,
  filler,
  ID,
  idPrefix,
  invalidValue,
  jsonText,
  MarkedString,
  NOT_UTF8,
  typedProperties,
  typesOf,
  validValue,
} from "./openapi-fuzz-values.ts";

/** One request as sent. Strings may hold `filler` and `bytes` markers, expanded by `expand`. */
export interface FuzzRequest {
  method: string;
  /** Path and query string, percent-escapes and all. */
  target: string;
  headers: Record<string, string>;
  body: string | null;
  /** What makes the request invalid under the document (it must be refused); empty when nothing does. */
  defects: string[];
}

interface Part {
  /** Path segments, query pairs or the body and its headers, as sent. */
  text: string;
  defects: string[];
}

/** A value of a path parameter: an existing resource's id, an unknown one, or one that is malformed. */
function pathValues(ctx: FuzzContext, op: Operation, p: Parameter): fc.Arbitrary<Part> {
  const s = ctx.resolve(p.schema);
  const write = op.method !== "GET";
  const where = `path ${p.name}`;
  const malformed = fc
    .constantFrom(
      ["%", "a lone %"],
      ["%zz", "the escape %zz"],
      ["%00", "an encoded NUL"],
      ["%1b", "an encoded ESC"],
      ["%7F", "an encoded DEL"],
      ["%C2%85", "an encoded NEL (U+0085)"],
      ["%ff", "an escape that is not UTF-8"],
      ["%E0%A4%A", "a truncated escape"],
      ["%ed%a0%80", "an encoded lone surrogate"],
      ["%c0%af", "an overlong escape"],
      [filler(65), "65 characters (max 64)"],
      [filler(4000), "4,000 characters"],
      [filler(20_000), "20,000 characters (a request line over Node's 16 KiB header limit)"],
    )
    .map(([text, what]) => ({ text, defects: [`${where}: ${what}`] }));
  if (s.type === "integer") {
    const valid = fc.integer({ min: s.minimum ?? 0, max: s.maximum ?? 10 }).map((n) => ({ text: String(n), defects: [] }));
    const invalid = fc
      .constantFrom("abc", "1.5", "-1", "1e309", "NaN", "Infinity", "99999999999999999999", "0x1", String((s.maximum ?? 10) + 1), String((s.minimum ?? 0) - 1))
      .map((text) => ({ text, defects: [`${where}: ${text} is not an integer in ${s.minimum}..${s.maximum}`] }));
    return fc.oneof(valid, invalid, malformed);
  }
  const example = String(s.example);
  const prefix = idPrefix(example);
  const real = prefix ? ctx.ids(prefix) : [];
  // An id of no resource: a read answers 404, and a write must refuse it too.
  const unknown = fc
    .constantFrom(example, `${prefix ?? "x"}_${"Z".repeat(26)}`, "-1", "0", "NaN", "1e309", "-0", "99999999999999999999999", "..", "%2F", "%27%20OR%20%271%27%3D%271", "%F0%9F%8E%A8", filler(64))
    .map((text) => ({ text, defects: write ? [`${where}: no such resource`] : [] }));
  return fc.oneof(...(real.length ? [{ arbitrary: fc.constantFrom(...real).map((text) => ({ text, defects: [] })), weight: 4 }] : []), { arbitrary: unknown, weight: 2 }, { arbitrary: malformed, weight: 3 });
}

/** A query parameter: left out, valid, unusual, invalid or repeated. */
function queryValues(ctx: FuzzContext, p: Parameter): fc.Arbitrary<Part> {
  const s = ctx.resolve(p.schema);
  const types = typesOf(s);
  const where = `query ${p.name}`;
  const name = encodeURIComponent(p.name);
  const pair = (value: string, defects: string[] = []) => ({ text: `${name}=${value}`, defects });
  const valid = validValue(ctx, s).map((v) => pair(v instanceof MarkedString ? v.marked : encodeURIComponent(asText(v))));
  const unusual: string[] = ["%zz", "%", "%ff", "+", "%20"];
  const invalid: [string, string][] = [];
  if (types.includes("integer") || types.includes("number")) {
    unusual.push("%205%20", "0x10", "1e1", "-0", "5.");
    invalid.push(["abc", "not a number"], ["NaN", "NaN"], ["Infinity", "Infinity"], ["1e309", "1e309"], ["-1e309", "-1e309"]);
    if (types.includes("integer")) invalid.push(["1.5", "not an integer"], ["99999999999999999999999", "a 23-digit integer"]);
    if (s.minimum !== undefined && s.minimum > 0) invalid.push(["0", `below ${s.minimum}`], ["-1", `below ${s.minimum}`], ["", `empty (min ${s.minimum})`]);
    if (s.minimum === 0) invalid.push(["-1", "below 0"], ["-0.01", "below 0"]);
    if (s.maximum !== undefined) invalid.push([String(s.maximum + 1), `above ${s.maximum}`], [String(s.maximum * 1000), `above ${s.maximum}`]);
  } else if (types.includes("boolean")) {
    invalid.push(["yes", "not true or false"], ["1", "not true or false"], ["TRUE", "not true or false"], ["", "empty"], ["true,false", "not true or false"]);
  } else if (s.enum) {
    invalid.push(["bogus", "not one of the enum"], ["", "empty"], [encodeURIComponent(String(s.enum[0]).toUpperCase()), "not one of the enum (case)"]);
  } else {
    invalid.push(["a%00b", "an encoded NUL"], ["a%1bb", "an encoded ESC"], ["%C2%85", "an encoded NEL"], ["a%0Db", "a lone CR"]);
    if (s.maxLength !== undefined) invalid.push([filler(s.maxLength + 1), `${s.maxLength + 1} characters (max ${s.maxLength})`]);
    if ((s.minLength ?? 0) > 0) invalid.push(["", `empty (min ${s.minLength})`]);
    if (s.pattern) invalid.push(["!!", `does not match ${s.pattern}`]);
    if (s.format === "date") invalid.push(["2026-13-01", "not a date"], ["someday", "not a date"]);
  }
  const omitted = fc.constant({ text: "", defects: p.required ? [`${where}: missing (required)`] : [] });
  return fc.oneof(
    { arbitrary: omitted, weight: 3 },
    { arbitrary: valid, weight: 3 },
    { arbitrary: fc.constantFrom(...unusual).map((v) => pair(v)), weight: 1 },
    ...(invalid.length ? [{ arbitrary: fc.constantFrom(...invalid).map(([v, what]) => pair(v, [`${where}: ${what}`])), weight: 2 }] : []),
    { arbitrary: fc.tuple(valid, valid).map(([a, b]) => ({ text: `${a.text}&${b.text}`, defects: [`${where}: given twice`] })), weight: 1 },
  );
}

/** Query parameters no operation declares: ignored. */
const UNKNOWN_QUERY = ["foo=bar", "__proto__=1", "constructor=x", "page%5B%5D=2", "%zz=1", "=", "&&", "hasOwnProperty=1"];

const PNG = "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63606060f80f0004020180f2d1e4220000000049454e44ae426082";
const BOUNDARY = "fuzzBoundary7MA4YWxkTrZu0gW";

interface FormPart {
  name: string;
  value: string;
  file?: { filename: string; type: string };
}

function multipartText(parts: FormPart[], opts: { boundary?: string; close?: boolean } = {}): string {
  const boundary = opts.boundary ?? BOUNDARY;
  const lines = parts.map((p) =>
    p.file
      ? `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.file.filename}"\r\nContent-Type: ${p.file.type}\r\n\r\n${p.value}\r\n`
      : `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}\r\n`,
  );
  return `${lines.join("")}${opts.close === false ? "" : `--${boundary}--\r\n`}`;
}

interface Envelope {
  headers: Record<string, string>;
  body: string | null;
  defects: string[];
}

const JSON_TYPE = { "content-type": "application/json" };

/** The body and the headers that describe it. */
function envelopes(ctx: FuzzContext, op: Operation): fc.Arbitrary<Envelope> {
  const hasBody = op.body !== undefined;
  const checksType = ["POST", "PUT", "PATCH"].includes(op.method) || hasBody;
  const json = (value: unknown, defects: string[] = [], headers: Record<string, string> = JSON_TYPE): Envelope => ({ headers, body: jsonText(value), defects });
  const base = hasBody ? validValue(ctx, op.body!) : fc.constantFrom<unknown>({}, { note: "x" });
  const baseText = base.map(jsonText);
  const options: fc.WeightedArbitrary<Envelope>[] = [];
  // Transport defects every operation meets: the JSON parser runs before any route.
  options.push(
    {
      weight: 20,
      arbitrary: fc
        .tuple(baseText, fc.constantFrom<[string, (t: string) => string]>(
          ["truncated", (t) => t.slice(0, -1)],
          ["a trailing comma", (t) => (t === "{}" ? "{," : `${t.slice(0, -1)},}`)],
          ["single quotes", () => "{'a': 1}"],
          ["a missing value", () => '{"a":}'],
          ["NaN", () => '{"a": NaN}'],
          ["a trailing brace", (t) => `${t}}`],
          ["a top-level null", () => "null"],
          ["a top-level string", () => '"text"'],
          ["a top-level number", () => "42"],
          ["a comment", (t) => `/* c */${t}`],
          ["a NUL byte", (t) => `${t}${bytes("00")}`],
          ["an unclosed deep nesting", () => `${filler(5000, "[")}${filler(4999, "]")}`],
        ))
        .map(([text, [what, mangle]]) => ({ headers: JSON_TYPE, body: mangle(text), defects: [`body: malformed JSON (${what})`] })),
    },
    {
      weight: 10,
      arbitrary: fc
        .tuple(baseText, fc.constantFrom("latin1", "iso-8859-1", "utf-16", "bogus", "utf-32"))
        .map(([text, charset]) => ({ headers: { "content-type": `application/json; charset=${charset}` }, body: text, defects: [`content-type: charset ${charset}`] })),
    },
    {
      weight: 10,
      arbitrary: fc
        .tuple(baseText, fc.constantFrom("gzip", "deflate", "br", "x-bogus", "gzip, identity"))
        .map(([text, encoding]) => ({ headers: { ...JSON_TYPE, "content-encoding": encoding }, body: text, defects: [`content-encoding ${encoding} over plain JSON`] })),
    },
    { weight: 2, arbitrary: fc.constant({ headers: JSON_TYPE, body: `{"a":"${filler(1024 * 1024 + 16)}"}`, defects: ["body: over 1 MiB"] }) },
    // Well-formed, 20,000 arrays deep, under a field no body schema has.
    { weight: 3, arbitrary: fc.constant({ headers: JSON_TYPE, body: `{"deep":${filler(20_000, "[")}${filler(20_000, "]")}}`, defects: hasBody ? ["body: unknown field \"deep\""] : [] }) },
  );
  // A body sent as another media type: POST, PUT and PATCH must be JSON, and so must a body a route declares.
  options.push({
    weight: 20,
    arbitrary: fc
      .tuple(baseText, fc.constantFrom<[string | null, (t: string) => string]>(
        ["text/plain", (t) => t],
        ["application/x-www-form-urlencoded", () => "a=1&b=%00"],
        ["application/xml", () => "<a>1</a>"],
        ["applicaton/json", (t) => t],
        ["application/octet-stream", (t) => t],
        [null, (t) => t],
      ))
      .map(([text, [type, reshape]]): Envelope => ({ headers: type ? { "content-type": type } : {}, body: reshape(text), defects: checksType ? [`content-type: ${type ?? "none"}`] : [] })),
  });
  if (!op.form) {
    options.push({
      weight: 10,
      arbitrary: base.map((value) => {
        const fields = value !== null && typeof value === "object" && !Array.isArray(value) ? Object.entries(value) : [];
        const parts = fields.length ? fields.map(([name, v]) => ({ name, value: asText(v) })) : [{ name: "note", value: "x" }];
        return { headers: { "content-type": `multipart/form-data; boundary=${BOUNDARY}` }, body: multipartText(parts), defects: ["content-type: multipart/form-data (the route takes JSON)"] };
      }),
    });
  }
  if (hasBody) {
    options.push(
      { weight: 20, arbitrary: base.map((v) => json(v)) },
      { weight: 80, arbitrary: invalidValue(ctx, op.body!, "body").map((b) => json(b.value, [b.defect])) },
      { weight: 10, arbitrary: fc.constantFrom<unknown>([], [{}], "text", 0).map((v) => json(v, [`body: ${Array.isArray(v) ? "an array" : typeof v} instead of an object`])) },
      {
        weight: 10,
        arbitrary: fc.constantFrom("application/vnd.api+json", "application/json; charset=utf-8", "Application/JSON", "application/merge-patch+json").chain((type) =>
          base.map((v) => json(v, [], { "content-type": type })),
        ),
      },
    );
    const required = ctx.resolve(op.body!).required ?? [];
    options.push({ weight: 5, arbitrary: fc.constant({ headers: JSON_TYPE, body: null, defects: required.length ? ["body: none (fields are required)"] : [] }) });
  } else {
    options.push({ weight: 60, arbitrary: fc.constant({ headers: {}, body: null, defects: [] }) }, { weight: 10, arbitrary: base.map((v) => json(v)) });
  }
  if (op.form) options.push({ weight: 60, arbitrary: forms(ctx, op) });
  return fc.oneof(...options);
}

/** multipart/form-data bodies of a route that takes files: the JSON body's fields as text parts, with files. */
function forms(ctx: FuzzContext, op: Operation): fc.Arbitrary<Envelope> {
  const form = ctx.resolve(op.form!);
  const body = ctx.resolve(op.body!);
  const formFields = Object.keys(form.properties ?? {});
  const fileFields = Object.entries(form.properties ?? {}).filter(([, p]) => p.format === "binary" || p.items?.format === "binary");
  const [fileField, fileSchema] = fileFields[0]!;
  const maxFiles = fileSchema.maxItems ?? 1;
  const textFields = typedProperties(ctx, body).filter(([name]) => formFields.includes(name));
  const values = fc.record(Object.fromEntries(textFields.map(([name, p]) => [name, validValue(ctx, p)])), {
    requiredKeys: textFields.map(([name]) => name).filter((name) => (body.required ?? []).includes(name)),
  });
  const image = (n: number): FormPart => ({ name: fileField, value: bytes(PNG + n.toString(16).padStart(2, "0")), file: { filename: `art${n}.png`, type: "image/png" } });
  const partsOf = (fields: Record<string, unknown>): FormPart[] => Object.entries(fields).map(([name, v]) => ({ name, value: asText(v) }));
  const envelope = (parts: FormPart[], defects: string[], opts: { boundary?: string; close?: boolean; header?: string } = {}): Envelope => ({
    headers: { "content-type": opts.header ?? `multipart/form-data; boundary=${BOUNDARY}` },
    body: multipartText(parts, opts),
    defects,
  });
  const textDefect = (name: string, p: JsonSchema): fc.Arbitrary<{ value: string; defect: string }> => {
    const s = ctx.resolve(p);
    const where = `form ${name}`;
    const types = typesOf(s);
    if (types.includes("number") || types.includes("integer")) {
      return fc.constantFrom("0x7e4", "1e3", " 12 ", "+5", "Infinity", "abc", "", "12.", "1_000").map((value) => ({ value, defect: `${where}: ${JSON.stringify(value)} is not plain decimal text` }));
    }
    if (types.includes("string") && !s.enum && s.format === undefined && !ID.test(String(s.example ?? ""))) {
      return fc.oneof(
        fc.constantFrom(...CONTROLS).map((c) => ({ value: `a${c}b`, defect: `${where}: control character U+${c.codePointAt(0)!.toString(16).padStart(4, "0")}` })),
        fc.constantFrom(...NOT_UTF8).map((hex) => ({ value: `a${bytes(hex)}b`, defect: `${where}: bytes ${hex} (not UTF-8)` })),
        ...(s.maxLength !== undefined ? [fc.constant({ value: filler(s.maxLength + 1), defect: `${where}: ${s.maxLength + 1} characters (max ${s.maxLength})` })] : []),
      );
    }
    return fc.constant({ value: "a\u0000b", defect: `${where}: control character U+0000` });
  };
  const fieldDefects = textFields.map(([name, p]) =>
    fc.tuple(values, textDefect(name, p)).map(([fields, bad]) => envelope([...partsOf({ ...fields, [name]: bad.value }), image(1)], [bad.defect])),
  );
  const requiredText = textFields.map(([name]) => name).filter((name) => (body.required ?? []).includes(name));
  return fc.oneof(
    { weight: 2, arbitrary: values.map((fields) => envelope([...partsOf(fields), image(1)], [])) },
    ...fieldDefects.map((arbitrary) => ({ weight: Math.max(1, Math.round(12 / fieldDefects.length)), arbitrary })),
    ...(requiredText.length ? [{ weight: 1, arbitrary: fc.tuple(values, fc.constantFrom(...requiredText)).map(([fields, name]) => envelope([...partsOf(Object.fromEntries(Object.entries(fields).filter(([k]) => k !== name))), image(1)], [`form ${name}: missing (required)`])) }] : []),
    ...((form.required ?? []).includes(fileField) ? [{ weight: 1, arbitrary: values.map((fields) => envelope(partsOf(fields), [`form ${fileField}: missing (required)`])) }] : []),
    {
      weight: 4,
      arbitrary: fc.tuple(values, fc.constantFrom<[string, (parts: FormPart[]) => FormPart[], { boundary?: string; close?: boolean; header?: string }?]>(
        ["an unknown text field", (parts) => [...parts, { name: "unknown_field", value: "x" }]],
        ["a __proto__ field", (parts) => [...parts, { name: "__proto__[polluted]", value: "yes" }]],
        ["a field given twice", (parts) => [...parts, parts[0] ?? { name: "x", value: "1" }, parts[0] ?? { name: "x", value: "1" }]],
        ["a file under another name", (parts) => [...parts, { ...image(2), name: "other" }]],
        [`${maxFiles + 1} files`, (parts) => [...parts, ...Array.from({ length: maxFiles }, (_, i) => image(i + 2))]],
        ["a file that is not an image", (parts) => [...parts.filter((p) => !p.file), { name: fileField, value: "plain text, not an image", file: { filename: "a.png", type: "image/png" } }]],
        ["no closing boundary", (parts) => parts, { close: false }],
        ["another boundary in the body", (parts) => parts, { boundary: "otherBoundary" }],
        ["no boundary parameter", (parts) => parts, { header: "multipart/form-data" }],
        ["a multipart/mixed body", (parts) => parts, { header: `multipart/mixed; boundary=${BOUNDARY}` }],
      )).map(([fields, [what, change, opts]]) => envelope(change([...partsOf(fields), image(1)]), [`form: ${what}`], opts)),
    },
  );
}

/** Idempotency-Key on a POST: none, a good one, or one the API must refuse. */
const idempotencyKeys: fc.Arbitrary<Part> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<Part>({ text: "", defects: [] }) },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{8,40}$/).map((text): Part => ({ text, defects: [] })) },
  { weight: 1, arbitrary: fc.constantFrom("", "a b", "x".repeat(256), "é-key").map((text) => ({ text, defects: [`Idempotency-Key: ${JSON.stringify(text.length > 20 ? `${text.length} characters` : text)}`] })) },
);

/**
 * Requests of one operation. A write (anything but GET) always carries a defect, so that the
 * fuzzer stores nothing: one that is accepted anyway is a finding.
 */
export function requestsFor(ctx: FuzzContext, op: Operation): fc.Arbitrary<FuzzRequest> {
  const pathParams = op.parameters.filter((p) => p.in === "path");
  const queryParams = op.parameters.filter((p) => p.in === "query");
  const path = fc.tuple(...pathParams.map((p) => pathValues(ctx, op, p).map((part) => ({ name: p.name, ...part }))));
  const query = fc.tuple(fc.tuple(...queryParams.map((p) => queryValues(ctx, p))), fc.subarray(UNKNOWN_QUERY, { maxLength: 2 }));
  const key = op.method === "POST" ? idempotencyKeys : fc.constant({ text: "", defects: [] });
  return fc
    .tuple(path, query, envelopes(ctx, op), key)
    .map(([params, [pairs, unknown], envelope, idempotency]) => {
      let target = op.path;
      for (const p of params) target = target.replace(`{${p.name}}`, p.text);
      const queryText = [...pairs.map((q) => q.text).filter(Boolean), ...unknown].join("&");
      const headers = { ...envelope.headers, ...(op.method === "POST" && (idempotency.text || idempotency.defects.length) ? { "idempotency-key": idempotency.text } : {}) };
      return {
        method: op.method,
        target: queryText ? `${target}?${queryText}` : target,
        headers,
        body: envelope.body,
        defects: [...params.flatMap((p) => p.defects), ...pairs.flatMap((q) => q.defects), ...envelope.defects, ...idempotency.defects],
      };
    })
    .filter((r) => op.method === "GET" || r.defects.length > 0);
}
