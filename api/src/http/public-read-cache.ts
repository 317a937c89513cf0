import type { Logger } from "pino";
import { NotificationListener } from "../db/notifications.ts";
import { indexerNotifyChannel } from "../chain/indexer-schema.ts";

/** The channel the `public_data_changed` triggers NOTIFY on (payload: the table's name). */
export const PUBLIC_DATA_CHANNEL = "public_data_changed";

export interface CachedRead {
  /** The answer's JSON, as sent. */
  json: string;
  etag: string;
  storedAt: number;
}

/**
 * Anonymous public reads (GET of a public route, no credential), kept for `ttlMs` per URL and
 * forgotten all at once on any change to the data they show:
 *
 * - a committed write to a table public reads show (triggers NOTIFY `public_data_changed`, migration
 *   `2026_11_26_0001`), from any process or statement;
 * - a block the indexer projected (its own NOTIFY), since reads show chain facts;
 * - a write request answered by this process, before its answer is sent (`invalidate()` from the
 *   router), so a client never reads its own write's old state from the process that made it.
 *
 * While the notification connection is down, nothing is kept or served (what was kept can no longer
 * be known to be current); once it is back, everything kept before is forgotten. An answer computed
 * while a change arrived is not kept (`generation`): it may predate the change. What remains: a read
 * through another process may see the state before a write for the moment its notification takes
 * (about a millisecond), and a state that changes with time alone (a listing that expires) is seen
 * at most `ttlMs` late. Reads with a credential are never kept: they may depend on the caller.
 */
export class PublicReadCache {
  private readonly entries = new Map<string, CachedRead>();
  private bytes = 0;
  /** Bumped by every invalidation: an answer begun under an older generation is not kept. */
  private current = 0;
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

  /** Keeps an answer computed under `generation`, unless a change arrived meanwhile; the oldest entries make room. */
  store(key: string, generation: number, json: string, etag: string): void {
    if (!this.active || generation !== this.current) return;
    const size = json.length + key.length;
    if (size > this.options.maxBytes / 16) return; // one answer never takes much of the room
    const previous = this.entries.get(key);
    if (previous) this.remove(key, previous);
    this.entries.set(key, { json, etag, storedAt: this.now() });
    this.bytes += size;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.options.maxBytes) break;
      this.remove(oldest, entry);
    }
  }

  /** Forgets every kept answer, and makes answers under way not to be kept. */
  invalidate(): void {
    this.current++;
    this.stats.invalidations++;
    if (this.entries.size === 0) return;
    this.entries.clear();
    this.bytes = 0;
  }

  /** Listens for changes (the tables' triggers and the indexer's blocks); the cache is active once both listen. */
  start(options: { databaseUrl: string; viewsSchema: string; logger: Logger }): void {
    const listen = (which: keyof PublicReadCache["listening"], channel: string) =>
      new NotificationListener({
        databaseUrl: options.databaseUrl,
        channel,
        name: `public-read-cache ${which}`,
        onNotify: () => this.invalidate(),
        onReady: () => {
          this.invalidate();
          this.listening[which] = true;
        },
        onLost: () => {
          this.listening[which] = false;
          this.invalidate();
        },
        logger: options.logger,
      });
    this.listeners = [listen("data", PUBLIC_DATA_CHANNEL), listen("indexer", indexerNotifyChannel(options.viewsSchema))];
    for (const listener of this.listeners) listener.start();
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
