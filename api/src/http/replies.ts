import { createHash } from "node:crypto";
import type { Request, Response } from "express";
import { Reply, type RouteDefBase } from "./route-definition.ts";
import type { Answer } from "./unit-of-work.ts";

/** What a route answers: a handler's result as status and body, and how each kind of answer is sent. */

/** A handler's (or unit of work's) result as status and body, checked against its schema when `checkResponses` (tests). */
export function answerOf<B, Q, P>(def: RouteDefBase<B, Q, P>, result: unknown, checkResponses: boolean): Answer {
  if (result instanceof Reply && result.raw) throw new Error(`${def.method.toUpperCase()} ${def.path}: a unit of work answers JSON, not bytes`);
  const status = result instanceof Reply ? result.status : (def.statusOf?.(result) ?? def.status ?? 200);
  const body = result instanceof Reply ? result.body : result;
  const schema = status === (def.status ?? 200) ? def.response : def.alternatives?.[status]?.schema;
  if (checkResponses && schema) {
    const checked = schema.safeParse(body);
    if (!checked.success) {
      throw new Error(`Response of ${def.method.toUpperCase()} ${def.path} does not match its schema: ${checked.error.message}`);
    }
  }
  return { status, body };
}

/**
 * A read's answer with a validator: a weak ETag of its JSON, and 304 without a body when the client's
 * `If-None-Match` names it. Public reads made without a token may be stored by shared caches, which
 * must revalidate each time (`max-age=0`: the data changes with every write); anything read with a
 * token is private to the client.
 */
export function sendJson(req: Request, res: Response, json: string, tag: string, isPublic: boolean): void {
  res.setHeader("ETag", tag);
  res.setHeader("Cache-Control", isPublic && !req.headers.authorization ? "public, max-age=0, must-revalidate" : "private, no-cache");
  if (isPublic) res.vary("Authorization");
  const wanted = req.get("If-None-Match");
  if (wanted && (wanted.trim() === "*" || wanted.split(",").some((t) => t.trim().replace(/^W\//, "") === tag.slice(2)))) {
    res.status(304).end();
    return;
  }
  writeJson(res, 200, json);
}

/** What Express's send would do with a JSON string, less its content negotiation and conversions. */
function writeJson(res: Response, status: number, json: string): void {
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(json));
  res.end(json);
}

/** A weak ETag of a JSON answer. */
export function etagOf(json: string): string {
  return `W/"${createHash("sha1").update(json).digest("base64url")}"`;
}

/** A handler's bytes (`produces`), with their media type and headers. */
export function sendBytes(res: Response, reply: Reply): void {
  for (const [name, value] of Object.entries(reply.raw?.headers ?? {})) res.setHeader(name, value);
  res.status(reply.status).type(reply.raw!.contentType).send(reply.body);
}

/** The answer stored under an Idempotency-Key, sent again. */
export function sendReplay(res: Response, stored: { status: number; body: unknown }): void {
  res.setHeader("Idempotent-Replayed", "true");
  sendResult(res, stored.status, stored.body);
}

/** A status and body: none for 204, problem+json for an error, JSON otherwise. */
export function sendResult(res: Response, status: number, body: unknown): void {
  if (status === 204 || body === undefined) {
    res.status(status).end();
    return;
  }
  if (status >= 400) {
    res.status(status).type("application/problem+json").send(JSON.stringify(body));
    return;
  }
  writeJson(res, status, JSON.stringify(body));
}
