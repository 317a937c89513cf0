/**
 * Repeated statements as named prepared statements (api/src/db/prepared.ts), on a real Postgres:
 * named at their second sending, never for transaction control, bounded per process, and a table
 * whose columns change under a prepared `select *` (a later release's migration) costs no request
 * outside a transaction and one inside.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDbHandle, type DbHandle } from "../../api/src/db/connection.ts";
import { StatementNames } from "../../api/src/db/prepared.ts";
import { dropDatabase, ensureDatabase, withDatabase } from "../../tools/stack/postgres.ts";
import { testEnvironment } from "../support/environment.ts";

describe("StatementNames", () => {
  it("names a plain statement at its second sending, the same text the same name, and never transaction control or a pattern match", () => {
    const names = new StatementNames({ after: 2, limit: 3 });
    expect(names.nameOf("select 1 where $1::int = 1")).toBeUndefined();
    const named = names.nameOf("select 1 where $1::int = 1");
    expect(named).toMatch(/^s0_[0-9a-f]{20}$/);
    expect(names.nameOf("select 1 where $1::int = 1")).toBe(named);
    // A pattern's best plan depends on the pattern: such a statement is planned each time.
    for (const text of ["select id from artworks where medium ilike $1", "select id from users where username like $1"]) {
      names.nameOf(text);
      expect(names.nameOf(text), text).toBeUndefined();
    }
    for (const text of ["begin", "commit", "set local statement_timeout = 5", "lock table t"]) {
      names.nameOf(text);
      expect(names.nameOf(text), text).toBeUndefined();
    }
    // At the limit, texts not yet named stay unnamed; those named keep their names.
    for (const text of ["select 2", "select 3", "select 4"]) {
      names.nameOf(text);
      names.nameOf(text);
    }
    expect(names.size).toBe(3);
    expect(names.nameOf("select 4")).toBeUndefined();
    expect(names.nameOf("select 1 where $1::int = 1")).toBe(named);
    // Renewed: every text named afresh, under another name.
    names.renew();
    expect(names.size).toBe(0);
    names.nameOf("select 1 where $1::int = 1");
    expect(names.nameOf("select 1 where $1::int = 1")).toMatch(/^s1_/);
  });
});

describe("prepared statements on the application's connections", () => {
  const server = () => testEnvironment().serverUrl;
  const name = `prep_${randomBytes(4).toString("hex")}`;
  let handle: DbHandle;

  beforeAll(async () => {
    await ensureDatabase(server(), name);
    handle = createDbHandle(withDatabase(server(), name), 1);
    await sql`create table things (id int primary key, label text)`.execute(handle.db);
    await sql`insert into things values (1, 'one'), (2, 'two')`.execute(handle.db);
  });
  afterAll(async () => {
    await handle?.db.destroy();
    await dropDatabase(server(), name);
  });

  const prepared = async () =>
    (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(handle.db)).rows.map((r) => r.statement);
  const read = (id: number) => handle.db.selectFrom("things" as never).selectAll().where("id" as never, "=", id as never).executeTakeFirst() as Promise<Record<string, unknown> | undefined>;

  it("prepares a read at its second sending, on the connection that sends it", async () => {
    expect(await read(1)).toEqual({ id: 1, label: "one" });
    expect((await prepared()).filter((s) => s.includes('from "things"'))).toEqual([]);
    expect(await read(2)).toEqual({ id: 2, label: "two" });
    expect((await prepared()).filter((s) => s.includes('from "things"'))).toHaveLength(1);
    expect(await read(1)).toEqual({ id: 1, label: "one" });
  });

  it("a column added under a prepared `select *` is read at once outside a transaction, and refused once inside one", async () => {
    expect(await read(1)).toEqual({ id: 1, label: "one" });
    await sql`alter table things add column colour text default 'red'`.execute(handle.db);
    // Outside a transaction: the statement is named afresh and sent again.
    expect(await read(1)).toEqual({ id: 1, label: "one", colour: "red" });

    // Sent again, it is prepared again under its new name, with the new columns.
    expect(await read(2)).toEqual({ id: 2, label: "two", colour: "red" });
    expect((await prepared()).filter((s) => s.includes('from "things"'))).toHaveLength(2);

    await sql`alter table things add column size int default 3`.execute(handle.db);
    // Inside one, the refusal has aborted it: the transaction fails, and the next one reads the new columns.
    const refused = await handle.db
      .transaction()
      .execute(async (trx) => trx.selectFrom("things" as never).selectAll().where("id" as never, "=", 2 as never).executeTakeFirst())
      .then(() => null, (err: Error) => err.message);
    expect(refused).toMatch(/cached plan must not change result type/);
    const after = await handle.db.transaction().execute(async (trx) => trx.selectFrom("things" as never).selectAll().where("id" as never, "=", 2 as never).executeTakeFirst());
    expect(after).toEqual({ id: 2, label: "two", colour: "red", size: 3 });
  });
});
