import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { PublicClient } from "viem";
import type { Database } from "../db/database.ts";
import type { ChainOperationKind } from "./operations.kind.ts";
import type { Relayer } from "./relayer.ts";

export interface ChainOperationsDeps {
  db: Kysely<Database>;
  logger: Logger;
  relayer: Relayer;
  publicClient: PublicClient;
  databaseUrl: string;
  viewsSchema: string;
  chainId: number;
  /** The first block of the contracts: where a new cursor starts. */
  startBlock: number;
  /** How long an attempt may run before the sweep takes it for lost (sooner once its process is gone: `presence`). */
  leaseMs: number;
  /** This process's presence: the sweep of another takes up its leased operations as soon as it is gone. */
  presence?: { readonly id: number } | undefined;
  sweepIntervalMs: number;
  /** Attempts of one kind this process runs at once (they mostly wait on the chain), unless the kind says otherwise; default 32. */
  concurrency?: number | undefined;
  /** How often a worker looks for operations whose backoff ended (new ones are announced by NOTIFY); default 1 s. */
  duePollMs?: number | undefined;
  /** The indexer's last indexed block (default: its checkpoint in the views schema); null when unknown. */
  indexedBlock?: (() => Promise<bigint | null>) | undefined;
}

/** What the parts of ChainOperations share: its dependencies, its log, the kinds registered, and whether it runs. */
export interface OperationsContext {
  readonly deps: ChainOperationsDeps;
  readonly log: Logger;
  readonly kinds: ReadonlyMap<string, ChainOperationKind<any>>;
  /** Started and not stopped: passes, claims and timers run only then. */
  running(): boolean;
}

/** Operations per sweep or chain-confirmation page. */
export const PAGE = 200;

/**
 * Runs passes of `pass` one at a time while `active()`: a request during a pass runs one more after
 * it (`again` true for that one).
 */
export class CoalescedPasses {
  running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly active: () => boolean,
    private readonly pass: (again: boolean) => Promise<void>,
  ) {}

  /** Resolves once a pass begun after this request has ended (at once while inactive). */
  request(): Promise<void> {
    if (!this.active()) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      let again = false;
      do {
        this.again = false;
        await this.pass(again);
        again = true;
      } while (this.again && this.active());
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }
}
