import { createHash } from "node:crypto";
import type pg from "pg";

/**
 * Statements the application sends again and again go as named prepared statements, each
 * connection parsing one once and Postgres then keeping its plan (a generic plan after five
 * executions, when it costs no more than the custom ones): a detail's statement executes in about
 * 0.3 ms and was planned anew, in 1–3 ms, on every request (docs/contributors/benchmarks.md).
 *
 * Only what repeats: a text is named at its `after`-th sending, and at most `limit` texts a process
 * (each connection keeps the statements it used, Postgres their plans); the rest stay unnamed, as
 * one-off statements (a multi-row insert's, a list of ids') should. Only plain statements
 * (select, insert, update, delete, with): `begin`, `set`, `lock` and the like are never named. A
 * statement that matches a pattern (`like`, `ilike`) stays unnamed too: how many rows a word matches
 * decides its best plan, which a generic plan cannot know (the catalogue's random medium: 220
 * requests a second named against 346 unnamed, 6.5 against 3.8 ms of Postgres CPU a request).
 * Behind a pooler that shares server connections between clients per transaction (PgBouncer's
 * transaction mode before 1.21), turn this off: DATABASE_PREPARED_STATEMENTS=false
 * (docs/operators/production.md#the-database).
 */
export class StatementNames {
  private readonly counts = new Map<string, number>();
  private readonly names = new Map<string, string>();
  private generation = 0;

  constructor(private readonly options: { after: number; limit: number } = { after: 2, limit: 256 }) {}

  /** The name `text` goes under, if it has earned one. */
  nameOf(text: string): string | undefined {
    const name = this.names.get(text);
    if (name !== undefined || this.names.size >= this.options.limit) return name;
    if (!PREPARABLE.test(text) || PATTERN_MATCH.test(text)) return undefined;
    const seen = (this.counts.get(text) ?? 0) + 1;
    if (seen < this.options.after) {
      // Counting is bounded too: one-off texts beyond what a process ever repeats are forgotten.
      if (this.counts.size >= COUNTED_TEXTS) this.counts.clear();
      this.counts.set(text, seen);
      return undefined;
    }
    this.counts.delete(text);
    const named = `s${this.generation}_${createHash("sha1").update(text).digest("hex").slice(0, 20)}`;
    this.names.set(text, named);
    return named;
  }

  /**
   * A table's columns changed under a prepared statement (a migration of the next release, while
   * this one runs): Postgres refuses to run the statement, whose `*` now stands for other columns.
   * Every text gets a new name, parsed afresh on each connection.
   */
  renew(): void {
    this.generation++;
    this.names.clear();
  }

  get size(): number {
    return this.names.size;
  }
}

const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i;
const PATTERN_MATCH = /\b(i?like)\b/i;
const COUNTED_TEXTS = 10_000;

/** Postgres's refusal of a prepared statement whose result's columns changed since it was parsed. */
function isStaleResultType(err: unknown): boolean {
  return (err as { code?: string })?.code === "0A000" && /cached plan must not change result type/.test((err as Error).message);
}

/**
 * Has each connection of `pool` send the texts `names` names as named statements. A query given as
 * text and values (Kysely's form) is the only one changed; pg keeps, per connection, which names it
 * has parsed. A statement refused as stale renews the names and, outside a transaction (which the
 * refusal has aborted), runs again under its new name.
 */
export function prepareRepeatedStatements(pool: pg.Pool, names: StatementNames): void {
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
    let inTransaction = false;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      const [text, values] = args;
      if (args.length !== 2 || typeof text !== "string" || !Array.isArray(values)) return query(...args);
      if (/^\s*(begin|start transaction)\b/i.test(text)) inTransaction = true;
      else if (/^\s*(commit|rollback|end)\b/i.test(text)) inTransaction = false;
      const name = names.nameOf(text);
      if (name === undefined) return query(text, values);
      return query({ name, text, values }).catch((err: unknown) => {
        if (!isStaleResultType(err)) throw err;
        names.renew();
        if (inTransaction) throw err;
        return query({ name: names.nameOf(text) ?? undefined, text, values });
      });
    };
  });
}
