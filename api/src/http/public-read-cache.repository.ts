import { type Kysely, sql } from "kysely";

/** What the public read cache asks the database: its catalogue (which tables notify, which views read which tables), and a notification of its own. */

/** The tables with the `public_data_changed` trigger. */
export async function notifyingTables(db: Kysely<any>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select distinct c.relname as name from pg_trigger t
    join pg_class c on c.oid = t.tgrelid join pg_proc p on p.oid = t.tgfoid
    where p.proname = 'notify_public_data_changed' and not t.tgisinternal`.execute(db);
  return rows.map((r) => r.name);
}

/** Every table and view of the public schema. */
export async function relationNames(db: Kysely<any>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select relname as name from pg_class where relnamespace = 'public'::regnamespace and relkind in ('r', 'v', 'm', 'p')`.execute(db);
  return rows.map((r) => r.name);
}

/** Each view of the public schema with a table (or view) of it that it reads. */
export async function viewUses(db: Kysely<any>): Promise<{ view: string; used: string }[]> {
  const { rows } = await sql<{ view: string; used: string }>`select view_name as view, table_name as used from information_schema.view_table_usage where view_schema = 'public' and table_schema = 'public'`.execute(db);
  return rows;
}

export async function notify(db: Kysely<any>, channel: string, payload: string): Promise<void> {
  await sql`select pg_notify(${channel}, ${payload})`.execute(db);
}
