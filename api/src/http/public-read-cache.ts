import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import { NotificationListener } from "../db/notifications.ts";
import { indexerNotifyChannel } from "../chain/indexer-schema.ts";
import * as repo from "./public-read-cache.repository.ts";

/** The channel the `public_data_changed` triggers NOTIFY on (payload: the table's name). */
export const PUBLIC_DATA_CHANNEL = "public_data_changed";

export interface CachedRead {
  /** The answer's JSON, as sent. */
  json: string;
  etag: string;
  storedAt: number;
  /** The tables it showed (`chain`: the indexer's views); null: unknown, so every change makes it stale. */
  reads: ReadonlySet<string> | null;
}

/** The dependency of a read on the indexer's views, changed by every block the indexer projects. */
export const CHAIN_DEPENDENCY = "chain";
/** How long a write's answer waits for this process to hear its changes before forgetting every kept read instead. */
const SETTLE_TIMEOUT_MS = 2_000;

/**
 * Which of the tables that notify changes a read's statements show: each statement's words that
 * name a table or view of the database (a view stands for the tables it reads, as Postgres records
 * them), kept to those with the `public_data_changed` trigger, and `chain` for the indexer's schema.
 * A word that names a table by chance (an alias, a column) only adds a dependency: a read may be
 * forgotten more often than it needs, never less. A read that sent no statement is unknown.
 */
export class ReadDependencies {
  private readonly byStatement = new Map<string, ReadonlySet<string>>();

  constructor(
    /** Each table or view of the database, with the notifying tables it stands for. */
    private readonly relations: ReadonlyMap<string, readonly string[]>,
    private readonly viewsSchema: string,
  ) {}

  static async load(db: Kysely<any>, viewsSchema: string): Promise<ReadDependencies> {
    const notifying = new Set(await repo.notifyingTables(db));
    const names = await repo.relationNames(db);
    const uses = new Map<string, string[]>();
    for (const r of await repo.viewUses(db)) uses.set(r.view, [...(uses.get(r.view) ?? []), r.used]);
    const expand = (name: string, seen: Set<string>): string[] => {
      if (seen.has(name)) return [];
      seen.add(name);
      return [...(notifying.has(name) ? [name] : []), ...(uses.get(name) ?? []).flatMap((used) => expand(used, seen))];
    };
    return new ReadDependencies(new Map(names.map((name) => [name, [...new Set(expand(name, new Set()))]])), viewsSchema);
  }

  /** The notifying tables `statements` show; null for none sent (unknown). */
  of(statements: readonly string[]): ReadonlySet<string> | null {
    if (statements.length === 0) return null;
    const all = new Set<string>();
    for (const text of statements) for (const table of this.ofStatement(text)) all.add(table);
    return all;
  }

  private ofStatement(text: string): ReadonlySet<string> {
    let found = this.byStatement.get(text);
    if (!found) {
      const tables = new Set<string>();
      for (const [word] of text.matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)) {
        if (word === this.viewsSchema) tables.add(CHAIN_DEPENDENCY);
        for (const table of this.relations.get(word) ?? []) tables.add(table);
      }
      found = tables;
      // Statements are the application's own texts (values travel as parameters): few and repeated.
      if (this.byStatement.size < 10_000) this.byStatement.set(text, found);
    }
    return found;
  }
}

/**
 * Anonymous public reads (GET of a public route, no credential), kept for `ttlMs` per URL with the
 * tables each showed (the statements its computation sent: ReadDependencies), and forgotten when one
 * of those changes:
 *
 * - a committed write to a table public reads show (triggers NOTIFY `public_data_changed` with the
 *   table's name, migration `2026_11_26_0001`), from any process or statement, forgets the reads
 *   that showed that table (a post leaves the kept artworks alone);
 * - a block the indexer projected (its own NOTIFY) forgets the reads of the indexer's views;
 * - a write request answered by this process waits, before its answer is sent, until this process
 *   has heard its changes (`settleWrites`: a notification of its own after the write's commit, which
 *   Postgres delivers after the write's, in commit order), so a client never reads its own write's
 *   old state from the process that made it.
 *
 * While the notification connection is down, nothing is kept or served (what was kept can no longer
 * be known to be current); once it is back, everything kept before is forgotten. An answer computed
 * while a change to what it shows arrived is not kept (`generation`): it may predate the change.
 * What remains: a read through another process may see the state before a write for the moment its
 * notification takes (about a millisecond), and a state that changes with time alone (a listing that
 * expires) is seen at most `ttlMs` late. Reads with a credential are never kept: they may depend on
 * the caller.
 */
export class PublicReadCache {
  private readonly entries = new Map<string, CachedRead>();
  private bytes = 0;
  /** Bumped by every invalidation: an answer begun under an older generation is not kept if what it showed changed since. */
  private current = 0;
  /** The generation at which each table last changed, and at which everything last did. */
  private readonly changedAt = new Map<string, number>();
  private allChangedAt = 0;
  private dependencies: ReadDependencies | null = null;
  private db: Kysely<any> | null = null;
  /** Writes of this process waiting to hear their changes: their notification's payload, resolved true when heard. */
  private readonly settling = new Map<string, (heard: boolean) => void>();
  private readonly instance = randomBytes(6).toString("hex");
  private settles = 0;
  /** Listening on both channels: only then is a kept answer known to be current. */
  private listening = { data: false, indexer: false };
  private listeners: NotificationListener[] = [];
  /** Hits, misses and invalidations since the start, for logs and tests. */
  readonly stats = { hits: 0, misses: 0, invalidations: 0 };

  constructor(
    private readonly options: {
      ttlMs: number;
      maxBytes: number;
      now?: () => number;
    },
  ) {}

  get generation(): number {
    return this.current;
  }

  /** Whether answers are kept and served now (false until both listeners are ready, and while one is lost). */
  get active(): boolean {
    return this.listening.data && this.listening.indexer;
  }

  /** The kept answer for `key`, unless it is older than the TTL or the cache is not active. */
  lookup(key: string): CachedRead | undefined {
    if (!this.active) return undefined;
    const entry = this.entries.get(key);
    if (!entry) {
      this.stats.misses++;
      return undefined;
    }
    if (this.now() - entry.storedAt >= this.options.ttlMs) {
      this.remove(key, entry);
      this.stats.misses++;
      return undefined;
    }
    this.stats.hits++;
    return entry;
  }

  /**
   * Keeps an answer computed under `generation` by `statements` (null: unknown), unless a change to
   * what it showed arrived meanwhile; the oldest entries make room.
   */
  store(key: string, generation: number, json: string, etag: string, statements: readonly string[] | null = null): void {
    if (!this.active || this.allChangedAt > generation) return;
    const reads = statements && this.dependencies ? this.dependencies.of(statements) : null;
    if (reads === null ? this.current !== generation : [...reads].some((table) => (this.changedAt.get(table) ?? 0) > generation)) return;
    const size = json.length + key.length;
    if (size > this.options.maxBytes / 16) return; // one answer never takes much of the room
    const previous = this.entries.get(key);
    if (previous) this.remove(key, previous);
    this.entries.set(key, { json, etag, storedAt: this.now(), reads });
    this.bytes += size;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.options.maxBytes) break;
      this.remove(oldest, entry);
    }
  }

  /**
   * Forgets the kept answers that showed one of `tables` (and those whose tables are unknown), and
   * makes such answers under way not to be kept; without `tables`, every answer.
   */
  invalidate(tables?: readonly string[]): void {
    this.current++;
    this.stats.invalidations++;
    if (!tables) {
      this.allChangedAt = this.current;
      this.entries.clear();
      this.bytes = 0;
      return;
    }
    for (const table of tables) this.changedAt.set(table, this.current);
    for (const [key, entry] of this.entries) {
      if (entry.reads === null || tables.some((table) => entry.reads!.has(table))) this.remove(key, entry);
    }
  }

  /**
   * After a write request's changes are committed, before its answer: resolves once this process
   * has heard them (its own notification, sent now, arrives after theirs), so that what it kept of
   * the tables they changed is forgotten. Not heard within SETTLE_TIMEOUT_MS (or not sent): every
   * kept answer is forgotten instead.
   */
  async settleWrites(): Promise<void> {
    const db = this.db;
    if (!this.active || !db) return;
    const payload = `sync:${this.instance}:${++this.settles}`;
    let timer: NodeJS.Timeout | undefined;
    const heard = new Promise<boolean>((resolve) => {
      this.settling.set(payload, resolve);
      timer = setTimeout(() => resolve(false), SETTLE_TIMEOUT_MS);
    });
    try {
      await repo.notify(db, PUBLIC_DATA_CHANNEL, payload);
      if (!(await heard)) this.invalidate();
    } catch {
      this.invalidate();
    } finally {
      clearTimeout(timer);
      this.settling.delete(payload);
    }
  }

  /** A notification on the data channel: a table's change, or a write's settling (this process's, or another's to ignore). */
  private heard(payload: string): void {
    if (payload.startsWith("sync:")) {
      this.settling.get(payload)?.(true);
      return;
    }
    this.invalidate([payload]);
  }

  /**
   * Listens for changes (the tables' triggers and the indexer's blocks); the cache is active once both
   * listen. With `db`, it learns the tables of the database (ReadDependencies; until then, and without
   * it, every read depends on every change) and settles writes through it.
   */
  start(options: { databaseUrl: string; viewsSchema: string; logger: Logger; db?: Kysely<any> }): void {
    const listen = (which: keyof PublicReadCache["listening"], channel: string, onNotify: (payload: string) => void) =>
      new NotificationListener({
        databaseUrl: options.databaseUrl,
        channel,
        name: `public-read-cache ${which}`,
        onNotify,
        onReady: () => {
          this.invalidate();
          this.listening[which] = true;
        },
        onLost: () => {
          this.listening[which] = false;
          this.invalidate();
          for (const resolve of this.settling.values()) resolve(false);
        },
        logger: options.logger,
      });
    this.listeners = [listen("data", PUBLIC_DATA_CHANNEL, (payload) => this.heard(payload)), listen("indexer", indexerNotifyChannel(options.viewsSchema), () => this.invalidate([CHAIN_DEPENDENCY]))];
    for (const listener of this.listeners) listener.start();
    if (options.db) {
      this.db = options.db;
      ReadDependencies.load(options.db, options.viewsSchema).then(
        (dependencies) => {
          this.dependencies = dependencies;
        },
        (err: Error) => options.logger.warn({ err: err.message }, "public read cache: the tables' dependencies could not be read; every change forgets every kept read"),
      );
    }
  }

  async stop(): Promise<void> {
    this.listening = { data: false, indexer: false };
    await Promise.all(this.listeners.map((listener) => listener.stop()));
    this.listeners = [];
    this.invalidate();
  }

  private remove(key: string, entry: CachedRead): void {
    this.entries.delete(key);
    this.bytes -= entry.json.length + key.length;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}
