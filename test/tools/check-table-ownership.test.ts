/**
 * tools/check-table-ownership.ts on a small tree of its own: two modules, one of which names the
 * other's table; views a module publishes, migrations and its own tables are not violations. And
 * Kysely outside the places queries live: a service's query is flagged, a repository's, a
 * migration's and the database layer's are not.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findViolations, queriesIn, queriesOutsideRepositories, tableOwners, tablesNamed } from "../../tools/check-table-ownership.ts";

const TREE: Record<string, string> = {
  "api/src/modules/people/people.tables.ts": `
    export interface PeopleTable { id: string; name: string }
    export interface PeopleTables { people: PeopleTable }
    export interface PeopleViews { people_names: { id: string; name: string } }`,
  "api/src/modules/people/people.repository.ts": `
    export const person = (db: any, id: string) => db.selectFrom("people").selectAll().where("id", "=", id).executeTakeFirst();
    export const counted = (db: any) => db.selectFrom("people").select((eb: any) => eb.selectFrom("painting_counts").select("n").as("n")).execute();`,
  "api/src/modules/people/migrations/2026_01_01_0001_people.ts": `
    import { sql } from "kysely";
    export const up = (db: any) => sql\`update paintings set title = title\`.execute(db);`,
  "api/src/modules/gallery/gallery.tables.ts": `
    export interface GalleryTables { paintings: { id: string; artist_id: string; title: string } }
    export interface GalleryViews { painting_counts: { artist_id: string; n: number } }`,
  "api/src/modules/gallery/gallery.repository.ts": `
    import { sql } from "kysely";
    // Names from people's view are fine; from people's table they are not.
    export const named = (db: any) => db.selectFrom("paintings as p").innerJoin("people_names as n", "n.id", "p.artist_id").selectAll().execute();
    export const leaked = (db: any) =>
      db.selectFrom("paintings")
        .innerJoin("people as o", "o.id", "paintings.artist_id")
        .selectAll()
        .execute();`,
  "api/src/modules/gallery/gallery.service.ts": `
    import { sql } from "kysely";
    import * as repo from "./gallery.repository.ts";
    export const named = (db: any) => db.transaction().execute((trx: any) => repo.named(trx));
    export const touched = (db: any, id: string) =>
      db.updateTable("paintings").set({ title: sql\`upper(title)\` }).where("id", "=", id).execute();`,
  "api/src/db/locks.ts": `
    import { sql } from "kysely";
    export const lock = (db: any, key: number) => sql\`select pg_advisory_xact_lock(\${key})\`.execute(db);`,
};
const VIOLATING_LINE = 7;
const SERVICE = "api/src/modules/gallery/gallery.service.ts";

let root: string;

beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "table-ownership-"));
  for (const [file, text] of Object.entries(TREE)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the table ownership check", () => {
  it("learns each module's tables from its <Feature>Tables interface, not its views", () => {
    expect(Object.fromEntries(tableOwners(root))).toEqual({ people: "people", paintings: "gallery" });
  });

  it("reports exactly the query that names another module's table, with its module, file and line", () => {
    expect(findViolations(root, [])).toEqual({
      violations: [{ module: "gallery", file: "api/src/modules/gallery/gallery.repository.ts", line: VIOLATING_LINE, owner: "people", table: "people" }],
      stale: [],
    });
  });

  it("tolerates an allowed file and table, and reports an allowance that no query needs", () => {
    const allowed = { file: "api/src/modules/gallery/gallery.repository.ts", table: "people", reason: "moving" };
    const unused = { file: "api/src/modules/people/people.repository.ts", table: "paintings", reason: "moved" };
    expect(findViolations(root, [allowed, unused])).toEqual({ violations: [], stale: [unused] });
  });

  it("flags Kysely in a service, not in a repository, a migration or the database layer, with its calls and lines", () => {
    expect(queriesOutsideRepositories(root, [])).toEqual({
      violations: [
        { file: SERVICE, line: 6, call: "updateTable" },
        { file: SERVICE, line: 6, call: "sql" },
      ],
      stale: [],
    });
  });

  it("tolerates an allowed file, and reports an allowance for a file that no longer calls Kysely", () => {
    const allowed = { file: SERVICE, reason: "moving" };
    const unused = { file: "api/src/modules/people/people.service.ts", reason: "moved" };
    expect(queriesOutsideRepositories(root, [allowed, unused])).toEqual({ violations: [], stale: [unused] });
  });

  it("finds every query form: builders, raw statements, sql templates and helpers, not transactions", () => {
    const source = ts.createSourceFile(
      "service.ts",
      [
        `db.selectFrom("a"); db.insertInto("b"); db.deleteFrom("c"); db.mergeInto("d");`,
        "await sql`select 1`.execute(db);",
        `sql.raw("x"); db.executeQuery(compiled);`,
        `await db.transaction().execute(async (trx) => repo.find(trx, id)); other.select("x"); run.execute();`,
      ].join("\n"),
      ts.ScriptTarget.Latest,
      true,
    );
    expect(queriesIn(source)).toEqual([
      { call: "selectFrom", line: 1 },
      { call: "insertInto", line: 1 },
      { call: "deleteFrom", line: 1 },
      { call: "mergeInto", line: 1 },
      { call: "sql", line: 2 },
      { call: "sql.raw", line: 3 },
      { call: "executeQuery", line: 3 },
    ]);
  });

  it("finds tables in every query form: from, joins, writes, lists, sql text and sql.table, with their lines", () => {
    const source = ts.createSourceFile(
      "queries.ts",
      [
        `db.selectFrom("a").innerJoin("b as x", "x.id", "a.id").leftJoin("c", "c.id", "a.id").rightJoin("public.d", "d.id", "a.id");`,
        `db.updateTable("e"); db.insertInto("f"); db.deleteFrom(["g", "h as y"]); db.mergeInto("i");`,
        "// from comment_words_are_not_sql",
        "sql`select 1 from j",
        `  join "k" on true ${"${sql`delete from l`}"} where ${"${x}"} in (select id from only m)`,
        "  for update`; sql.table(\"n\");",
        "sql<number>`insert into o values (1)`.execute(db); db.selectFrom(tableName);",
      ].join("\n"),
      ts.ScriptTarget.Latest,
      true,
    );
    const found = tablesNamed(source).sort((p, q) => p.table.localeCompare(q.table));
    expect(found).toEqual([
      { table: "a", line: 1 },
      { table: "b", line: 1 },
      { table: "c", line: 1 },
      { table: "d", line: 1 },
      { table: "e", line: 2 },
      { table: "f", line: 2 },
      { table: "g", line: 2 },
      { table: "h", line: 2 },
      { table: "i", line: 2 },
      { table: "j", line: 4 },
      { table: "k", line: 5 },
      { table: "l", line: 5 },
      { table: "m", line: 5 },
      { table: "n", line: 6 },
      { table: "o", line: 7 },
    ]);
  });
});
