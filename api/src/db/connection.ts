import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import type { Database } from "./database.ts";
import { prepareRepeatedStatements, StatementNames } from "./prepared.ts";
import { observeStatement } from "./statements.ts";

/**
 * The application's connections read int8 and numeric(78,0) (Ponder's bigints) as bigint rather than
 * strings. Per pool, not pg's global parsers: the job queue's own connections keep pg's defaults,
 * since graphile-worker serialises job ids with JSON.stringify, which refuses a bigint (a job whose
 * task threw could then never be failed and stayed locked).
 */
const appTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (format !== "binary") {
      if (oid === pg.types.builtins.INT8) return (v: string) => BigInt(v);
      if (oid === pg.types.builtins.NUMERIC) return (v: string) => (/^-?\d+$/.test(v) ? BigInt(v) : Number(v));
    }
    return pg.types.getTypeParser(oid, format);
  }) as pg.CustomTypesConfig["getTypeParser"],
};

export interface DbHandle {
  db: Kysely<Database>;
  pool: pg.Pool;
}

/**
 * `queue`: connections for graphile-worker's own bookkeeping, with pg's default type parsers.
 * The application's connections send what they repeat as prepared statements unless `prepare` is
 * false (api/src/db/prepared.ts).
 */
export function createPool(databaseUrl: string, max = 20, use: "app" | "queue" = "app", options: { prepare?: boolean } = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    application_name: use === "queue" ? "art-platform-jobs" : "art-platform-api",
    ...(use === "app" ? { types: appTypes } : {}),
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on("error", () => {});
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  if (use === "app" && options.prepare !== false) prepareRepeatedStatements(pool, new StatementNames());
  return pool;
}

export function createDb(databaseUrl: string, max = 20): Kysely<Database> {
  return createDbHandle(databaseUrl, max).db;
}

export function createDbHandle(databaseUrl: string, max = 20): DbHandle {
  const pool = createPool(databaseUrl, max);
  return { pool, db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: observeStatement }) };
}

/** Postgres refused, ended or could not take a connection (a restart, a failover, a full server): worth retrying shortly. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return (
    code === "ECONNREFUSED" ||
    code === "ECONNRESET" ||
    code === "57P01" || // admin_shutdown
    code === "57P02" || // crash_shutdown
    code === "57P03" || // cannot_connect_now
    code === "53300" || // too_many_connections
    (typeof code === "string" && code.startsWith("08")) || // connection_exception
    (err instanceof Error && /Connection terminated|timeout exceeded when trying to connect|Stream isn't writeable|Client has encountered a connection error/i.test(err.message))
  );
}

/** Answers once the database runs a statement; throws as the connection fails (the readiness check). */
export async function databaseReachable(db: Kysely<any>): Promise<void> {
  await sql`select 1`.execute(db);
}
