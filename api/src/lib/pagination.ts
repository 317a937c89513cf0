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
