import { createHash } from "node:crypto";
import busboy from "busboy";
import type { Request } from "express";
import { ApiError } from "../lib/errors.ts";

/** What a route accepts as `multipart/form-data` beside its JSON body (see RouteDef.multipart). */
export interface MultipartSpec<B = unknown> {
  /** The file parts' field name (`image`); any other file part is refused. */
  fileField: string;
  /** Bytes of each file; more is 413 payload_too_large. */
  maxFileBytes: number;
  /** How many file parts (all named `fileField`) may come; more is 400. Default 1. */
  maxFiles?: number;
  /**
   * Text fields that are arrays: each part of the name is an item, in the order sent (`tags=a`,
   * `tags=b`: what OpenAPI's default form encoding and an HTML form send for an array). Such a field
   * given once reaches `toBody` as its text, twice or more as the list. Any other field given twice
   * is 400 duplicate_field.
   */
  repeatable?: readonly string[];
  /** Turns the text parts (bracket names already nested: `dimensions[width]`) into the JSON body shape. */
  toBody(fields: Record<string, unknown>): unknown;
  /** The form as documented in OpenAPI (the file as `format: binary`). */
  schema: import("zod").ZodType;
  /**
   * What `toBody`'s result is validated against when the file stands in for a field the JSON body
   * requires (an artwork's `image_url`); the route's `body` otherwise.
   */
  body?: import("zod").ZodType<B>;
}

export interface UploadedFile {
  field: string;
  /** As the client named it; informative only, never trusted for the type. */
  filename: string;
  /** The part's declared Content-Type; informative only. */
  declaredType: string;
  bytes: Buffer;
  sha256: string;
}

export interface ParsedMultipart {
  fields: Record<string, unknown>;
  /** The first (with `maxFiles` 1, the only) file. */
  file: UploadedFile | undefined;
  /** Every file, in the order sent. */
  files: UploadedFile[];
}

const MAX_FIELDS = 50;
const MAX_FIELD_BYTES = 64 * 1024;
/** Room for the text parts and the multipart framing around the file. */
const FORM_OVERHEAD_BYTES = 1024 * 1024;

/**
 * Reads a multipart/form-data request: at most `spec.maxFiles` files (default one, in `spec.fileField`,
 * each held in memory up to `spec.maxFileBytes`) and up to 50 short text parts. A declared Content-Length over the limit is
 * refused before reading; a body that turns out larger is read to its end (so the client sees the
 * answer, not a reset) and refused.
 */
export function parseMultipart(req: Request, spec: MultipartSpec): Promise<ParsedMultipart> {
  const tooLarge = () =>
    new ApiError(413, "payload_too_large", `The ${spec.fileField} file exceeds the ${formatBytes(spec.maxFileBytes)} limit`, {
      headers: { Connection: "close" },
    });
  const maxFiles = spec.maxFiles ?? 1;
  const declared = Number(req.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > spec.maxFileBytes * maxFiles + FORM_OVERHEAD_BYTES) {
    req.resume();
    return Promise.reject(tooLarge());
  }

  return new Promise<ParsedMultipart>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        limits: { fileSize: spec.maxFileBytes, files: maxFiles, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, parts: MAX_FIELDS + maxFiles },
      });
    } catch (err) {
      req.resume();
      reject(malformed((err as Error).message));
      return;
    }
    const raw = new Map<string, string>();
    const repeated = new Map<string, string[]>();
    const repeatable = new Set(spec.repeatable ?? []);
    const files: UploadedFile[] = [];
    let failure: ApiError | undefined;
    const fail = (err: ApiError) => {
      failure ??= err;
    };

    parser.on("field", (name, value, info) => {
      if (info.nameTruncated || info.valueTruncated) return fail(new ApiError(413, "payload_too_large", `The form field ${name} exceeds ${formatBytes(MAX_FIELD_BYTES)}`));
      if (raw.has(name) && !repeatable.has(name)) return fail(ApiError.validation([{ field: name, code: "duplicate_field", message: "given more than once" }]));
      // busboy decodes a part as UTF-8, turning bytes that are not into U+FFFD: refused rather than stored so.
      if (value.includes("\ufffd")) return fail(ApiError.validation([{ field: name, code: "invalid_encoding", message: "must be UTF-8 text (U+FFFD is taken for bytes that were not)" }]));
      if (repeatable.has(name)) repeated.set(name, [...(repeated.get(name) ?? []), value]);
      raw.set(name, value);
    });
    parser.on("file", (name, stream, info) => {
      // A form that ends inside a file destroys the file's stream with the parser's error (which the
      // parser's own "error" handler answers): without a listener here it would crash the process.
      stream.on("error", (err: Error) => fail(malformed(err.message)));
      if (name !== spec.fileField) {
        stream.resume();
        return fail(ApiError.validation([{ field: name, code: "unknown_field", message: `unexpected file; send the file as ${spec.fileField}` }]));
      }
      const chunks: Buffer[] = [];
      const hash = createHash("sha256");
      stream.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        hash.update(chunk);
      });
      stream.on("limit", () => fail(tooLarge()));
      stream.on("end", () => {
        files.push({ field: name, filename: info.filename ?? "", declaredType: info.mimeType, bytes: Buffer.concat(chunks), sha256: hash.digest("hex") });
      });
    });
    parser.on("filesLimit", () => fail(ApiError.validation([{ field: spec.fileField, code: "too_many_files", message: maxFiles === 1 ? "send one file" : `at most ${maxFiles} files` }])));
    parser.on("fieldsLimit", () => fail(ApiError.validation([{ field: "body", code: "too_many_fields", message: `at most ${MAX_FIELDS} form fields` }])));
    parser.on("partsLimit", () => fail(ApiError.validation([{ field: "body", code: "too_many_fields", message: `at most ${MAX_FIELDS + maxFiles} form parts` }])));
    parser.on("error", (err: Error) => {
      req.unpipe(parser);
      req.resume();
      reject(failure ?? malformed(err.message));
    });
    parser.on("close", () => {
      if (failure) return reject(failure);
      try {
        const fields = nestFields(raw);
        for (const [name, items] of repeated) if (items.length > 1) fields[name] = items;
        resolve({ fields, file: files[0], files });
      } catch (err) {
        reject(err);
      }
    });
    req.pipe(parser);
  });
}

function malformed(reason: string): ApiError {
  return ApiError.validation([{ field: "body", code: "invalid_multipart", message: `malformed multipart/form-data body: ${reason}` }]);
}

const RESERVED = new Set(["__proto__", "constructor", "prototype"]);

/** `a[b][c]=v` -> `{a: {b: {c: v}}}`; plain names stay as they are. */
export function nestFields(raw: Map<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of raw) {
    const match = /^([^[\]]+)((?:\[[^[\]]+\])+)$/.exec(name);
    const path = match ? [match[1]!, ...[...match[2]!.matchAll(/\[([^[\]]+)\]/g)].map((m) => m[1]!)] : [name];
    // Names become object keys: never let one reach a prototype.
    if (path.some((key) => RESERVED.has(key))) {
      throw ApiError.validation([{ field: name, code: "unknown_field", message: "unknown field" }]);
    }
    const conflict = () => ApiError.validation([{ field: name, code: "duplicate_field", message: `${path[0]} is given both as a whole and by parts` }]);
    let node = out;
    for (const key of path.slice(0, -1)) {
      if (node[key] === undefined) node[key] = {};
      if (typeof node[key] !== "object") throw conflict();
      node = node[key] as Record<string, unknown>;
    }
    if (node[path.at(-1)!] !== undefined) throw conflict();
    node[path.at(-1)!] = value;
  }
  return out;
}

function formatBytes(n: number): string {
  return n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`;
}
