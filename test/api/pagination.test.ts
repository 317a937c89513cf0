/**
 * Pages and their counts (api/src/lib/pagination.ts) on a real table: `has_more` always exact,
 * `total` exact below 1,000 rows and on the list's last page, a larger count reused for 2 s by
 * requests with the same filter and never inconsistent with the rows of the page. The count cache
 * runs on a clock of the test's, moved forward instead of waited for.
 */
import { Kysely, PostgresDialect, sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createPool } from "../../api/src/db/connection.ts";
import { CountCache, paginate, paginated, type Page } from "../../api/src/lib/pagination.ts";
import { createPlatformDatabase } from "../support/artworks.ts";

let database: { databaseUrl: string; drop(): Promise<void> };
let db: Kysely<any>;
/** The count statements the database has been sent. */
let countsRun = 0;
let now = Date.now();
const counts = new CountCache(() => now);

beforeAll(async () => {
  database = await createPlatformDatabase();
  db = new Kysely<any>({
    dialect: new PostgresDialect({ pool: createPool(database.databaseUrl, 4) }),
    log: (event) => {
      if (event.level === "query" && event.query.sql.includes("count(*)")) countsRun++;
    },
  });
  await sql`create table items (id int primary key, grp text not null)`.execute(db);
  await sql`insert into items select g, case when g <= 1500 then 'big' else 'small' end from generate_series(1, 1550) g`.execute(db);
});

afterAll(async () => {
  await db?.destroy();
  await database?.drop();
});

const list = async (grp: string, page: Page) => {
  const { rows, total } = await paginate(db.selectFrom("items").where("grp", "=", grp), page, (q) => q.select("id").orderBy("id"), counts);
  return paginated(rows, page, total);
};
const insert = (from: number, to: number, grp: string) => sql`insert into items select g, ${grp} from generate_series(${from}::int, ${to}::int) g`.execute(db);

it("answers exact pages: has_more from one extra row, total exact on a small list and after every write", async () => {
  const first = await list("small", { page: 1, limit: 20 });
  expect(first.data.map((r) => r.id)).toEqual(Array.from({ length: 20 }, (_, i) => 1501 + i));
  expect(first.pagination).toEqual({ page: 1, limit: 20, total: 50, has_more: true });
  const last = await list("small", { page: 3, limit: 20 });
  expect(last.data).toHaveLength(10);
  expect(last.pagination).toEqual({ page: 3, limit: 20, total: 50, has_more: false });
  const beyond = await list("small", { page: 9, limit: 20 });
  expect(beyond.pagination).toEqual({ page: 9, limit: 20, total: 50, has_more: false });
  await insert(2001, 2005, "small");
  expect((await list("small", { page: 1, limit: 20 })).pagination.total).toBe(55);
  expect((await list("small", { page: 2, limit: 50 })).pagination).toEqual({ page: 2, limit: 50, total: 55, has_more: false });
  const exactly = await list("small", { page: 1, limit: 55 });
  expect(exactly.pagination).toEqual({ page: 1, limit: 55, total: 55, has_more: false });
});

it("reuses a large count for 2 s, keeps it consistent with the page, and counts again afterwards", async () => {
  expect((await list("big", { page: 1, limit: 20 })).pagination).toEqual({ page: 1, limit: 20, total: 1500, has_more: true });
  await insert(3001, 3010, "big");
  // Within 2 s the count of 1,500 is reused for the same filter...
  expect((await list("big", { page: 1, limit: 20 })).pagination.total).toBe(1500);
  // ...but never contradicts the rows: the last page shows the exact end, a full page one more row.
  expect((await list("big", { page: 76, limit: 20 })).pagination).toEqual({ page: 76, limit: 20, total: 1510, has_more: false });
  expect((await list("big", { page: 75, limit: 20 })).pagination).toEqual({ page: 75, limit: 20, total: 1501, has_more: true });
  // 2 s on the cache's clock: kept to the last millisecond, counted again from then on.
  now += 1_999;
  expect((await list("big", { page: 1, limit: 20 })).pagination.total).toBe(1500);
  now += 1;
  expect((await list("big", { page: 1, limit: 20 })).pagination).toEqual({ page: 1, limit: 20, total: 1510, has_more: true });
});

it("counts once for concurrent requests with the same filter", async () => {
  await insert(4001, 4010, "big");
  now += 2_000;
  const before = countsRun;
  const pages = await Promise.all(Array.from({ length: 10 }, () => list("big", { page: 1, limit: 5 })));
  expect(new Set(pages.map((p) => p.pagination.total))).toEqual(new Set([1520]));
  expect(countsRun - before).toBe(1);
  // Small lists never count when the page shows their end.
  const small = countsRun;
  await list("small", { page: 1, limit: 100 });
  expect(countsRun).toBe(small);
});

