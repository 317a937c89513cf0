import { ID_PREFIXES, type IdKind } from "./ids.ts";
import { z } from "../openapi/zod.ts";

/**
 * The string pieces every request schema is built from (body, query, path and multipart fields
 * alike): no control characters, which Postgres refuses (NUL) or readers misread, and no lone
 * UTF-16 surrogates (JSON's `\ud800`), which would be stored as U+FFFD. Newline and tab are
 * allowed in multiline text only (CRLF too, as browsers send textareas).
 */
const SINGLE_LINE = /^\P{Cc}*$/u;
const MULTILINE = /^(?:\P{Cc}|[\t\n]|\r\n)*$/u;
// In a `u` regex a paired surrogate is one code point: \p{Cs} matches only the lone ones.
const WELL_FORMED = /^\P{Cs}*$/u;

type StringSchema = z.ZodString | z.ZodURL | z.ZodEmail;

/**
 * Adds the control-character and surrogate checks to a string schema. A refinement rather than
 * `.regex()`: OpenAPI patterns have no `u` flag, so the rule is documented in words instead.
 */
export function clean<S extends StringSchema>(schema: S, opts: { multiline?: boolean } = {}): S {
  const allowed = opts.multiline ? MULTILINE : SINGLE_LINE;
  return schema.superRefine((value, ctx) => {
    if (!allowed.test(value)) {
      ctx.addIssue({
        code: "invalid_format",
        format: "no_control_characters",
        input: value,
        message: opts.multiline ? "must not contain control characters other than newline and tab" : "must not contain control characters",
      });
    }
    if (!WELL_FORMED.test(value)) {
      ctx.addIssue({ code: "invalid_format", format: "well_formed_unicode", input: value, message: "must be well-formed Unicode (no lone surrogates)" });
    }
  }) as S;
}

/** A string kept exactly as given (ids, keys, signed messages): `min`..`max` characters. */
export function plainString(opts: { min?: number; max: number; multiline?: boolean }) {
  return clean(z.string().min(opts.min ?? 0).max(opts.max), opts);
}

/**
 * Text a person typed (titles, names, descriptions, search terms): checked, then in Unicode NFC
 * (so that equal-looking text compares and hashes equal) and trimmed; `min`..`max` characters after
 * that (`min` defaults to 1).
 */
export function text(opts: { min?: number; max: number; multiline?: boolean }) {
  return clean(z.string(), opts)
    .transform((v) => v.normalize("NFC").trim())
    .pipe(z.string().min(opts.min ?? 1).max(opts.max))
    .openapi({ minLength: opts.min ?? 1, maxLength: opts.max });
}

/** An http(s) URL of at most `max` characters (`hostname`: zod's hostname pattern, e.g. domains only). */
export function httpUrl(opts: { max: number; hostname?: RegExp; message?: string }) {
  const message = opts.message ?? "must be an http(s) URL";
  return clean(
    z
      .url({ protocol: /^https?$/, ...(opts.hostname ? { hostname: opts.hostname } : {}), error: (issue) => (issue.code === "invalid_format" ? message : undefined) })
      .max(opts.max, `must be at most ${opts.max.toLocaleString("en-US")} characters`),
  );
}

/** A path parameter naming a resource (`:id`): 1..64 characters. */
export function pathId(name: string, example: string, description: string) {
  return plainString({ min: 1, max: 64 }).openapi({ param: { name, in: "path", description }, example });
}

const DECIMAL = /^-?\d+(?:\.\d+)?$/;

/**
 * A number sent as text (multipart form fields): plain decimal only, so `0x7e4`, `1e3`, ` 12 ` or
 * `Infinity` stay text and fail validation as such.
 */
export function decimalText(value: unknown): unknown {
  return typeof value === "string" && DECIMAL.test(value) ? Number(value) : value;
}

/** A point in time as answered: ISO 8601 in UTC (`iso()` of lib/time.ts). */
export const timestamp = z.string().openapi({ format: "date-time", example: "2026-11-22T10:00:00.000Z" });

/** A boolean query parameter: `true` or `false` as text, read as a boolean and documented as one (typed clients send booleans). */
export const queryBoolean = z
  .enum(["true", "false"])
  .transform((v) => v === "true")
  .openapi({ type: "boolean" });

/** A point in time in a request: ISO 8601 with an offset (`Z` or `+02:00`), read as a Date. */
export const instant = z.iso.datetime({ offset: true }).transform((v) => new Date(v)).openapi({ format: "date-time", example: "2026-12-01T00:00:00Z" });

/** The id of `kind` the documentation's examples show (`art_01JD3Y5V0Q3G7W7J6T4N4C2X1M`). */
export function exampleId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_01JD3Y5V0Q3G7W7J6T4N4C2X1M`;
}

/** An id of `kind` in an answer (`usr_…`, `art_…`). */
export function idOf(kind: IdKind) {
  return z.string().openapi({ example: exampleId(kind) });
}

/** What each kind of id names, as the documentation says it ("The artwork's id"). */
const ID_NOUNS: Record<IdKind, string> = {
  user: "user",
  apiKey: "API key",
  accessToken: "access token",
  artwork: "artwork",
  listing: "listing",
  offer: "offer",
  transaction: "transaction",
  fractionalPurchase: "share purchase",
  post: "post",
  discussion: "discussion",
  challenge: "challenge",
  event: "event",
  submission: "challenge submission",
  rewardEvent: "reward event",
  redemption: "redemption",
  reward: "reward",
  paymentMethod: "payment method",
  charge: "charge",
  refund: "refund",
  order: "ticket order",
  adminAction: "admin action",
  webhookSubscription: "webhook subscription",
  webhookDelivery: "webhook delivery",
  webhookEvent: "webhook event",
  request: "request",
  comment: "comment",
  reply: "reply",
  ticket: "ticket",
  speaker: "speaker",
  ledgerEntry: "ledger entry",
  dispute: "dispute",
  withdrawal: "withdrawal",
};

/**
 * A path parameter (`:id` unless named) holding an id of `kind`, described with its prefix (not a
 * pattern: any 1..64 characters pass validation, and an id that is not of `kind` finds nothing, 404).
 */
export function idParam(kind: IdKind, name = "id") {
  const prefix = ID_PREFIXES[kind];
  return pathId(name, exampleId(kind), `The ${ID_NOUNS[kind]}'s id: \`${prefix}_\` followed by a 26-character ULID`);
}

/** An Ethereum address in a request (any case; answers use the EIP-55 checksummed form). */
export const walletAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address").openapi({ example: "0x8ba1f109551bD432803012645Ac136ddd64DBA72" });
