import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import type { Database } from "./database.ts";

// numeric(78,0) (Ponder's bigints) and int8 arrive as strings by default: parse them as bigint.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => BigInt(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => (/^-?\d+$/.test(v) ? BigInt(v) : Number(v)));

export interface DbHandle {
  db: Kysely<Database>;
  pool: pg.Pool;
}

export function createPool(databaseUrl: string, max = 20): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max, application_name: "art-platform-api" });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on("error", () => {});
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  return pool;
}

export function createDb(databaseUrl: string, max = 20): Kysely<Database> {
  return createDbHandle(databaseUrl, max).db;
}

export function createDbHandle(databaseUrl: string, max = 20): DbHandle {
  const pool = createPool(databaseUrl, max);
  return { pool, db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }) };
}
