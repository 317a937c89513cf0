import { type SelectQueryBuilder, sql } from "kysely";
import { z } from "../openapi/zod.ts";

/** `?page=` and `?limit=` (CONTRACT §3); lists answer `{data, pagination}`. */
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

/**
 * One page of a list and the count of the whole list, from one filtered query: `rows` adds the
 * selection and order (`q.selectAll().orderBy(...)`), the page's limit and offset are added here.
 */
export async function paginate<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, {}>,
  page: Page,
  rows: (q: SelectQueryBuilder<DB, TB, {}>) => SelectQueryBuilder<DB, TB, O>,
): Promise<{ rows: O[]; total: number }> {
  const [found, total] = await Promise.all([
    rows(query).limit(page.limit).offset(offsetOf(page)).execute(),
    query.select(sql<string>`count(*)`.as("n")).executeTakeFirstOrThrow(),
  ]);
  return { rows: found as O[], total: Number((total as { n: string }).n) };
}

/** An ILIKE/LIKE pattern matching `text` anywhere, its `%`, `_` and `\` taken literally. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
