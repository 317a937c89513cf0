import type { Request } from "express";
import type { ZodType } from "zod";
import { ApiError, type FieldError } from "../lib/errors.ts";
import { parseMultipart, type UploadedFile } from "./multipart.ts";
import type { RequestInput, RouteDefBase } from "./route-definition.ts";

/** What a request carries, validated by its route's schemas: path, query, body (JSON or multipart) and files. */
export async function parseInput<B, Q, P>(def: RouteDefBase<B, Q, P>, req: Request): Promise<RequestInput<B, Q, P>> {
  const params = parse(def.params, req.params, "path") as P;
  const query = parse(def.query, req.query, "query") as Q;
  let rawBody: unknown = req.body;
  let file: UploadedFile | undefined;
  let files: UploadedFile[] = [];
  const multipart = Boolean(req.is("multipart/form-data"));
  if (multipart) {
    if (!def.multipart) throw new ApiError(415, "unsupported_media_type", "Send the body as application/json");
    const form = await parseMultipart(req, def.multipart);
    rawBody = def.multipart.toBody(form.fields);
    file = form.file;
    files = form.files;
  }
  const schema = multipart ? (def.multipart?.body ?? def.body) : def.body;
  const body = schema ? (parse(schema, rawBody ?? {}, "body") as B) : (undefined as B);
  return { params, query, body, file, files, multipart, rawBody };
}

/** The member of `value` at `path`, undefined where any step is missing. */
function getPath(value: unknown, path: readonly PropertyKey[]): unknown {
  let at = value;
  for (const key of path) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<PropertyKey, unknown>)[key];
  }
  return at;
}

/** `value` by `schema` (none: undefined); refused as 400 naming each field: `validation_failed` for the body, `invalid_parameter` elsewhere. */
export function parse(schema: ZodType | undefined, value: unknown, where: "path" | "query" | "header" | "body"): unknown {
  if (!schema) return undefined;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors: FieldError[] = result.error.issues.map((issue) => {
    const path = issue.path.map(String).join(".");
    const unknownKeys = issue.code === "unrecognized_keys" ? (issue as { keys: string[] }).keys : null;
    // A member left out reads "expected array, received undefined": said as what it is.
    const missing = issue.code === "invalid_type" && path !== "" && getPath(value, issue.path) === undefined;
    return {
      field: unknownKeys ? [path, unknownKeys[0]].filter(Boolean).join(".") : path || where,
      code: unknownKeys ? "unknown_field" : missing ? "required" : issue.code,
      message: unknownKeys ? `unknown field${unknownKeys.length > 1 ? "s" : ""} ${unknownKeys.join(", ")}` : missing ? `${path} is required` : issue.message,
    };
  });
  if (where === "body") throw ApiError.validation(errors);
  throw ApiError.invalidParameter(errors);
}
