/**
 * Values for the fuzz suite's requests (test/support/openapi-fuzz.ts), drawn from a schema: values
 * it accepts, boundaries included, and values it refuses, each with what is wrong (`Broken`); and
 * the markers that keep large or binary values short in a printed counterexample.
 */
import fc from "fast-check";
import type { FuzzContext, JsonSchema } from "./openapi-document.ts";

// Markers keep large or binary values short in a printed counterexample.
const MARKER = /\u0000(?:(\d+)\*(.)|hex:([0-9a-f]+))\u0000/gs;
/** `unit` (one ASCII character) `n` times. */
export const filler = (n: number, unit = "x") => `\u0000${n}*${unit}\u0000`;
/** Raw bytes (`hex`), e.g. a sequence that is not UTF-8. */
export const bytes = (hex: string) => `\u0000hex:${hex}\u0000`;

/** The bytes a marked string stands for (the rest as UTF-8). */
export function expand(marked: string): Buffer {
  const parts: Buffer[] = [];
  let last = 0;
  for (const m of marked.matchAll(MARKER)) {
    parts.push(Buffer.from(marked.slice(last, m.index), "utf8"));
    parts.push(m[1] !== undefined ? Buffer.alloc(Number(m[1]), m[2]!) : Buffer.from(m[3]!, "hex"));
    last = m.index + m[0].length;
  }
  parts.push(Buffer.from(marked.slice(last), "utf8"));
  return Buffer.concat(parts);
}

/** A JSON token JSON.stringify cannot write: `1e309`, `-0`, a 30-digit integer. */
class RawJson {
  constructor(readonly text: string) {}
  [fc.toStringMethod]() {
    return `RawJson(${this.text})`;
  }
}

/** A JSON string holding a marker (`filler`, `bytes`), written into the text as it is. */
export class MarkedString {
  constructor(readonly marked: string) {}
  [fc.toStringMethod]() {
    return `MarkedString(${JSON.stringify(this.marked)})`;
  }
}

/** JSON text of a value that may hold RawJson and MarkedString leaves (`__proto__` keys kept as own keys). */
export function jsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof MarkedString) return `"${value.marked}"`;
  if (Array.isArray(value)) return `[${value.map(jsonText).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** A value's text as a form field or query value (objects and arrays as JSON). */
export function asText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof MarkedString) return value.marked;
  return typeof value === "string" ? value : typeof value === "object" && value !== null ? jsonText(value) : String(value);
}

export interface Broken {
  value: unknown;
  defect: string;
}

const broken = (value: unknown, defect: string): Broken => ({ value, defect });

const DAY = 86_400_000;
/** A well-formed id (`art_01JD…`): the documented examples of ids are such ids, of no resource. */
export const ID = /^([a-z]+)_[0-9A-Z]{26}$/;

/** The prefix of a well-formed id (`art`), else undefined. */
export function idPrefix(value: unknown): string | undefined {
  return typeof value === "string" ? ID.exec(value)?.[1] : undefined;
}
// Text of every script a person might type, in NFC and without spaces to trim.
const TEXT_UNITS = [..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:'!?éüßçøœ€漢字ﬁ"];
export const CONTROLS = ["\u0000", "\u0001", "\u0008", "\u001b", "\u007f", "\u0085", "\u009f", "\r"];
const LONE_SURROGATES = ["\ud800", "\udfff", "a\udbffb", "\udc00\ud800"];
/** Byte sequences that are not UTF-8: a lone continuation, an overlong `/`, an encoded surrogate, a truncated sequence, 0xff. */
export const NOT_UTF8 = ["80", "c0af", "eda080", "edbfbf", "e0a4", "ff", "f4908080"];
/** Values of every JSON type, for a wrong-type field. */
const ANY_JSON: { type: string; value: unknown }[] = [
  { type: "string", value: "12" },
  { type: "integer", value: 7 },
  { type: "number", value: 1.5 },
  { type: "boolean", value: true },
  { type: "null", value: null },
  { type: "array", value: [] },
  { type: "object", value: {} },
];

export function typesOf(s: JsonSchema): string[] {
  if (s.anyOf) return [...new Set(s.anyOf.flatMap(typesOf))];
  return s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
}

/** Values the schema accepts, including boundaries (max length, min and max, `-0`); ids of existing resources where the example is an id. */
export function validValue(ctx: FuzzContext, schema: JsonSchema): fc.Arbitrary<unknown> {
  const s = ctx.resolve(schema);
  if (s.enum) return fc.constantFrom(...s.enum);
  if (s.anyOf) return fc.oneof(...s.anyOf.map((branch) => validValue(ctx, branch)));
  const types = typesOf(s);
  if (types.length === 0) return fc.constant(undefined);
  return fc.oneof(...types.map((type) => validOfType(ctx, s, type)));
}

function validOfType(ctx: FuzzContext, s: JsonSchema, type: string): fc.Arbitrary<unknown> {
  switch (type) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "integer": {
      const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 0);
      return fc.integer({ min, max: s.maximum ?? min + 1000 });
    }
    case "number": {
      const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 0.01 : 0);
      const max = Math.min(s.maximum ?? 1e6, 1e9);
      const cents = fc.integer({ min: Math.ceil(min * 100), max: Math.floor(max * 100) }).map((c) => c / 100);
      return min <= 0 && s.exclusiveMinimum === undefined ? fc.oneof({ arbitrary: cents, weight: 9 }, fc.constant(new RawJson("-0"))) : cents;
    }
    case "string":
      return validString(ctx, s);
    case "array": {
      const minLength = s.minItems ?? 0;
      return fc.array(validValue(ctx, s.items ?? {}), { minLength, maxLength: Math.min(s.maxItems ?? minLength + 3, minLength + 3) });
    }
    case "object":
      return validObject(ctx, s);
    default:
      throw new Error(`no generator for type ${type}`);
  }
}

function validString(ctx: FuzzContext, s: JsonSchema): fc.Arbitrary<unknown> {
  const id = typeof s.example === "string" ? ID.exec(s.example) : null;
  if (id) return fc.constantFrom(...ctx.ids(id[1]!), s.example as string);
  const fits = (v: string) => v.length >= (s.minLength ?? 0) && v.length <= (s.maxLength ?? Infinity);
  switch (s.format) {
    case "email":
      return fc.stringMatching(/^[a-z][a-z0-9]{2,12}$/).map((name) => `${name}@example.test`);
    case "uri":
      // A public literal: never fetched or called, since every write the fuzzer sends is refused.
      return fc.constantFrom("https://93.184.216.34/fuzz", "https://93.184.216.34/art.png?size=2");
    case "date-time":
      return fc.integer({ min: 1, max: 3650 }).map((days) => new Date(Date.UTC(2031, 0, 1) + days * DAY).toISOString());
    case "date":
      return fc.integer({ min: 1, max: 3650 }).map((days) => new Date(Date.UTC(2031, 0, 1) + days * DAY).toISOString().slice(0, 10));
  }
  if (s.pattern) return fc.stringMatching(new RegExp(s.pattern)).filter(fits);
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? 10_000;
  const typed = fc.string({ unit: fc.constantFrom(...TEXT_UNITS), minLength: min, maxLength: Math.min(max, min + 40) });
  return fc.oneof(
    { arbitrary: typed, weight: 8 },
    { arbitrary: fc.constant(max > 200 ? new MarkedString(filler(max)) : "x".repeat(max)), weight: 1 },
    ...(typeof s.example === "string" && fits(s.example) ? [{ arbitrary: fc.constant(s.example), weight: 2 }] : []),
  );
}

/** Typed properties only: an untyped one (PATCH /v1/artworks/{id}'s certified fields) takes no value the schema describes. */
export function typedProperties(ctx: FuzzContext, s: JsonSchema): [string, JsonSchema][] {
  return Object.entries(s.properties ?? {}).filter(([, p]) => { const r = ctx.resolve(p); return r.enum !== undefined || typesOf(r).length > 0; });
}

function validObject(ctx: FuzzContext, s: JsonSchema, omit?: string): fc.Arbitrary<Record<string, unknown>> {
  const props = typedProperties(ctx, s).filter(([name]) => name !== omit);
  const required = (s.required ?? []).filter((name) => name !== omit);
  return fc.record(Object.fromEntries(props.map(([name, p]) => [name, validValue(ctx, p)])), { requiredKeys: props.map(([name]) => name).filter((name) => required.includes(name)) });
}

/** Values the schema refuses, each with what is wrong; `where` names the field in the defect. */
export function invalidValue(ctx: FuzzContext, schema: JsonSchema, where: string): fc.Arbitrary<Broken> {
  const s = ctx.resolve(schema);
  const types = typesOf(s);
  const options: fc.Arbitrary<Broken>[] = [];
  const wrongTypes = ANY_JSON.filter(({ type }) => !types.includes(type) && !(type === "integer" && types.includes("number")) && !(s.enum?.includes(null) && type === "null"));
  if (types.length > 0 && wrongTypes.length > 0) options.push(fc.constantFrom(...wrongTypes).map(({ type, value }) => broken(value, `${where}: ${type} instead of ${types.join(" or ")}`)));
  if (s.anyOf) {
    // A branch's own bad values (a string too long) are refused only when no other branch takes their type.
    const branches = s.anyOf.map((branch) => ctx.resolve(branch));
    for (const [i, branch] of branches.entries()) {
      const others = branches.filter((_, j) => j !== i).flatMap(typesOf);
      if (!typesOf(branch).some((type) => others.includes(type) || (type === "integer" && others.includes("number")))) options.push(...sameTypeDefects(ctx, branch, where));
    }
  } else {
    options.push(...sameTypeDefects(ctx, s, where));
  }
  if (options.length === 0) throw new Error(`no invalid value for ${where}`);
  return fc.oneof(...options);
}

/** Bad values of the schema's own type: a string too long, a number out of range, an object missing a field. */
function sameTypeDefects(ctx: FuzzContext, s: JsonSchema, where: string): fc.Arbitrary<Broken>[] {
  const types = typesOf(s);
  const out: fc.Arbitrary<Broken>[] = [];
  if (s.enum) {
    const members = s.enum.filter((v): v is string => typeof v === "string");
    out.push(fc.constantFrom("bogus", "", ...members.map((m) => m.toUpperCase()).filter((m) => !s.enum!.includes(m))).map((v) => broken(v, `${where}: not one of the enum`)));
  }
  if (types.includes("string")) out.push(...invalidStrings(s, where));
  if (types.includes("integer") || types.includes("number")) out.push(invalidNumbers(s, where, types.includes("integer") && !types.includes("number")));
  if (types.includes("array")) out.push(...invalidArrays(ctx, s, where));
  if (types.includes("object")) out.push(...invalidObjects(ctx, s, where));
  return out;
}

function invalidStrings(s: JsonSchema, where: string): fc.Arbitrary<Broken>[] {
  const out: fc.Arbitrary<Broken>[] = [
    fc.constantFrom(...CONTROLS).map((c) => broken(`a${c}b`, `${where}: control character U+${c.codePointAt(0)!.toString(16).padStart(4, "0")}`)),
    fc.constantFrom(...LONE_SURROGATES).map((v) => broken(v, `${where}: lone surrogate (a \\u escape)`)),
    fc.constantFrom(...NOT_UTF8).map((hex) => broken(new MarkedString(`a${bytes(hex)}b`), `${where}: bytes ${hex} (not UTF-8)`)),
  ];
  if (s.maxLength !== undefined) {
    out.push(fc.constantFrom(s.maxLength + 1, s.maxLength + 1000, 200_000).map((n) => broken(new MarkedString(filler(n)), `${where}: ${n} characters (max ${s.maxLength})`)));
  }
  if ((s.minLength ?? 0) > 0) out.push(fc.constant(broken("", `${where}: empty (min ${s.minLength})`)));
  if (s.pattern) {
    const pattern = new RegExp(s.pattern);
    const candidates = ["!!", "0x", "zz-top", "0xZZ", "2026-Q5"].filter((v) => !pattern.test(v));
    out.push(fc.constantFrom(...candidates).map((v) => broken(v, `${where}: does not match ${s.pattern}`)));
  }
  const badFormats: Record<string, string[]> = {
    email: ["not-an-email", "a@", "@example.test", "a b@example.test"],
    uri: ["not a url", "https://", "//93.184.216.34/x", "https://exa mple.com/"],
    "date-time": ["2026-13-45T25:61:00Z", "tomorrow", "2026-12-01", "2026-12-01T10:00:00"],
    date: ["2026-13-01", "someday", "2026-12-01T00:00:00Z", "20261201"],
  };
  if (s.format && badFormats[s.format]) out.push(fc.constantFrom(...badFormats[s.format]!).map((v) => broken(v, `${where}: not a ${s.format}`)));
  return out;
}

function invalidNumbers(s: JsonSchema, where: string, integer: boolean): fc.Arbitrary<Broken> {
  const values: [unknown, string][] = [
    [new RawJson("1e309"), "1e309 (Infinity)"],
    [new RawJson("-1e309"), "-1e309 (-Infinity)"],
  ];
  if (s.minimum !== undefined) values.push([s.minimum - 1, `below the minimum ${s.minimum}`]);
  if (s.exclusiveMinimum !== undefined) values.push([s.exclusiveMinimum, `not above ${s.exclusiveMinimum}`], [s.exclusiveMinimum - 1, `below ${s.exclusiveMinimum}`]);
  if (s.maximum !== undefined) values.push([s.maximum + 1, `above the maximum ${s.maximum}`], [new RawJson("1e300"), `1e300 (max ${s.maximum})`]);
  if (integer) {
    values.push([2.5, "not an integer"], [new RawJson("123456789012345678901234567890"), "a 30-digit integer"], [new RawJson("9007199254740993"), "2^53 + 1"]);
    if (s.maximum === undefined) values.push([new RawJson("1e20"), "1e20 (not a safe integer)"]);
  }
  return fc.constantFrom(...values).map(([value, what]) => broken(value, `${where}: ${what}`));
}

function invalidArrays(ctx: FuzzContext, s: JsonSchema, where: string): fc.Arbitrary<Broken>[] {
  const item = validValue(ctx, s.items ?? {});
  const out: fc.Arbitrary<Broken>[] = [
    fc
      .tuple(fc.array(item, { maxLength: 2 }), invalidValue(ctx, s.items ?? {}, `${where}[]`), fc.array(item, { maxLength: 2 }))
      .map(([before, bad, after]) => broken([...before, bad.value, ...after], bad.defect)),
  ];
  if (s.maxItems !== undefined) out.push(fc.array(item, { minLength: s.maxItems + 1, maxLength: s.maxItems + 3 }).map((v) => broken(v, `${where}: ${v.length} items (max ${s.maxItems})`)));
  if ((s.minItems ?? 0) > 0) out.push(fc.constant(broken([], `${where}: no items (min ${s.minItems})`)));
  return out;
}

function invalidObjects(ctx: FuzzContext, s: JsonSchema, where: string): fc.Arbitrary<Broken>[] {
  const props = typedProperties(ctx, s);
  const out: fc.Arbitrary<Broken>[] = [];
  // One property broken, the others valid: the refusal must come from that one.
  for (const [name, p] of props) {
    out.push(fc.tuple(validObject(ctx, s, name), invalidValue(ctx, p, `${where}.${name}`)).map(([rest, bad]) => broken({ ...rest, [name]: bad.value }, bad.defect)));
  }
  for (const name of s.required ?? []) out.push(validObject(ctx, s, name).map((rest) => broken(rest, `${where}.${name}: missing (required)`)));
  if (s.additionalProperties === false) {
    const names = ["unknown_field", "__proto__", "constructor", "", ...props.map(([name]) => name.toUpperCase())].filter((n) => !(s.properties ?? {})[n]);
    out.push(
      fc
        .tuple(validObject(ctx, s), fc.constantFrom(...names), fc.constantFrom<unknown>("x", 1, null, { polluted: true }))
        .map(([rest, name, value]) => broken(Object.fromEntries([...Object.entries(rest), [name, value]]), `${where}: unknown field ${JSON.stringify(name)}`)),
    );
  }
  return out;
}
