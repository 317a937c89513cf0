import { type SelectQueryBuilder, sql } from "kysely";
import { z } from "../openapi/zod.ts";

/** `?page=` and `?limit=` (docs/decisions.md#pagination); lists answer `{data, pagination}`. */
export function paginationQuery(defaultLimit = 20, maxLimit = 100) {
  return {
    page: z.coerce.number().int().min(1).max(1_000_000).default(1).openapi({ description: "Page number, from 1" }),
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(maxLimit)
      .default(defaultLimit)
      .openapi({ description: `Page size, 1..${maxLimit} (default ${defaultLimit})` }),
  };
}

export interface Page {
  page: number;
  limit: number;
}

export interface Pagination extends Page {
  total: number;
  has_more: boolean;
}

export function offsetOf(p: Page): number {
  return (p.page - 1) * p.limit;
}

export function paginated<T>(data: T[], p: Page, total: number): { data: T[]; pagination: Pagination } {
  return { data, pagination: { page: p.page, limit: p.limit, total, has_more: offsetOf(p) + data.length < total } };
}

export const paginationSchema = z
  .object({
    page: z.number().int(),
    limit: z.number().int(),
    total: z.number().int(),
    has_more: z.boolean(),
  })
  .openapi("Pagination");

/** Counts at least this large are reused for COUNT_TTL_MS (per process and filter); smaller ones are always exact. */
const COUNT_CACHE_MIN = 1_000;
const COUNT_TTL_MS = 2_000;
const COUNT_CACHE_ENTRIES = 500;

/**
 * Counts of large lists kept COUNT_TTL_MS per filter, and one count query per filter at a time.
 * `now` is its clock: a test gives one that it moves forward rather than wait.
 */
export class CountCache {
  private readonly counts = new Map<string, { n: number; until: number }>();
  private readonly counting = new Map<string, Promise<number>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The kept count of `key` while it lasts, else `run`'s (shared by the callers meanwhile); a large result is kept. */
  count(key: string, run: () => Promise<number>): Promise<number> {
    const cached = this.counts.get(key);
    if (cached && cached.until > this.now()) return Promise.resolve(cached.n);
    const running = this.counting.get(key);
    if (running) return running;
    const promise = run()
      .then((n) => {
        if (n >= COUNT_CACHE_MIN) {
          this.counts.delete(key);
          this.counts.set(key, { n, until: this.now() + COUNT_TTL_MS });
          if (this.counts.size > COUNT_CACHE_ENTRIES) this.counts.delete(this.counts.keys().next().value!);
        }
        return n;
      })
      .finally(() => this.counting.delete(key));
    this.counting.set(key, promise);
    return promise;
  }
}

const processCounts = new CountCache();

/**
 * One page of a list and the count of the whole list. `rows` adds the selection and order
 * (`q.selectAll().orderBy(...)`); the page's limit (plus one row, to know whether more follow) and
 * offset are added here.
 *
 * The count is the costly part of a page at scale (a scan of every matching row, on every page):
 * it runs only when the page itself does not show where the list ends, and a count of 1,000 or more is
 * reused for 2 s by the requests with the same filter (one query counts for all of them), so a
 * large `total` may lag the newest writes by that much. `has_more` is always exact: the extra row
 * decides it, and `total` is kept consistent with it.
 */
export async function paginate<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, {}>,
  page: Page,
  rows: (q: SelectQueryBuilder<DB, TB, {}>) => SelectQueryBuilder<DB, TB, O>,
  counts: CountCache = processCounts,
): Promise<{ rows: O[]; total: number }> {
  const offset = offsetOf(page);
  const countQuery = query.select(sql<string>`count(*)`.as("n"));
  const compiled = countQuery.compile();
  const key = `${compiled.sql}\u0000${JSON.stringify(compiled.parameters, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}`;
  const found = (await rows(query).limit(page.limit + 1).offset(offset).execute()) as O[];
  const more = found.length > page.limit;
  const data = more ? found.slice(0, page.limit) : found;
  if (!more && (data.length > 0 || offset === 0)) return { rows: data, total: offset + data.length };
  const total = await counts.count(key, () => countQuery.executeTakeFirstOrThrow().then((r) => Number((r as { n: string }).n)));
  // A reused count may be behind the rows just read: never below what the page shows.
  return { rows: data, total: more ? Math.max(total, offset + data.length + 1) : Math.min(total, offset) };
}

/** An ILIKE/LIKE pattern matching `text` anywhere, its `%`, `_` and `\` taken literally. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
