import type { Hex, PublicClient } from "viem";
import { chainClient, untypedRequest } from "./chain.ts";
import { blockEntryOf, type ChainJournalWriter } from "./chain-journal.ts";

export interface ChainRecorderOptions {
  rpcUrl: string;
  /** The node's websocket: new heads arrive as they are mined. */
  wsUrl: string;
  writer: ChainJournalWriter;
  /** The hashes already in the journal by block number, the genesis first. */
  hashes: Hex[];
  log: (line: string) => void;
  /** The safety net under the websocket feed: a look at the head this often (default 5 s). */
  pollIntervalMs?: number;
}

/**
 * Writes each block of the local node to the journal as it is mined, whoever mined it (the API's
 * relayer, Ponder's evm_mine, a wallet): woken by the node's new heads, and by a slow poll should
 * the websocket fall silent. A chain that went back (evm_revert) is recorded as a rewind.
 */
export class ChainRecorder {
  private readonly client: PublicClient;
  private readonly hashes: Hex[];
  private queue: Promise<unknown> = Promise.resolve();
  private catchUpQueued = false;
  /** The catch-up journalSeen's callers wait for, until it begins. */
  private nextCatchUp: Promise<void> | null = null;
  private socket: WebSocket | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped: Promise<void> | null = null;
  private lastError: string | null = null;

  constructor(private readonly options: ChainRecorderOptions) {
    this.client = chainClient(options.rpcUrl);
    this.hashes = [...options.hashes];
  }

  /** The last block in the journal. */
  get recordedBlock(): number {
    return this.hashes.length - 1;
  }

  start(): void {
    this.connect();
    this.timer = setInterval(() => {
      if (this.socket === null || this.socket.readyState === WebSocket.CLOSED) this.connect();
      this.wake();
    }, this.options.pollIntervalMs ?? 5_000);
    this.wake();
  }

  /**
   * A state change of the stack's own that is no transaction (hardhat_setBalance), made and
   * recorded between the blocks around it, so that a replay makes it at the same place. Called
   * while nothing else writes to the chain (the stack's startup).
   */
  recordCall(method: string, params: unknown[] = []): Promise<unknown> {
    return this.exclusive(async () => {
      await this.catchUp();
      const result = await untypedRequest(this.client)(method, params);
      this.options.writer.append([{ type: "call", method, params }]);
      return result;
    });
  }

  /**
   * Resolves once a catch-up that began after this call has written its blocks: every block the
   * node had when this was called is then in the journal (journaled-rpc.ts waits on it before it
   * answers). Calls made before that catch-up begins share it, so a burst of requests costs one.
   */
  journalSeen(): Promise<void> {
    if (this.stopped) return Promise.reject(new Error("the chain journal is closed"));
    this.nextCatchUp ??= this.exclusive(async () => {
      this.nextCatchUp = null;
      await this.catchUp();
    });
    return this.nextCatchUp;
  }

  /** Writes every block mined so far. */
  flush(): Promise<void> {
    return this.exclusive(() => this.catchUp());
  }

  /** Writes the last blocks and closes the journal: call it before the node stops. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      if (this.timer) clearInterval(this.timer);
      this.socket?.close();
      await this.flush().catch((error: Error) => this.options.log(`Could not record the chain's last blocks: ${error.message}`));
      this.options.writer.close();
    })();
    return this.stopped;
  }

  private connect(): void {
    if (this.stopped) return;
    const socket = new WebSocket(this.options.wsUrl);
    socket.addEventListener("open", () => socket.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] })));
    socket.addEventListener("message", () => this.wake());
    // An error closes the socket; the poll opens another.
    socket.addEventListener("error", () => {});
    this.socket = socket;
  }

  /** One catch-up at a time; wake-ups while one waits its turn are served by it. */
  private wake(): void {
    if (this.catchUpQueued || this.stopped) return;
    this.catchUpQueued = true;
    void this.exclusive(async () => {
      this.catchUpQueued = false;
      await this.catchUp();
    }).then(
      () => (this.lastError = null),
      (error: Error) => {
        // Said once per kind of failure: a node that stops answers every poll the same way.
        if (error.message !== this.lastError) this.options.log(`Recording the chain: ${error.message.split("\n")[0]}`);
        this.lastError = error.message;
      },
    );
  }

  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => {});
    return run;
  }

  private async catchUp(): Promise<void> {
    const latest = await this.client.getBlock({ blockTag: "latest" });
    const head = Number(latest.number);
    if (head < this.recordedBlock || (head === this.recordedBlock && latest.hash !== this.hashes[head])) {
      this.rewindTo(await this.lastCommonBlock(head));
    }
    for (let number = this.recordedBlock + 1; number <= head; number++) {
      const block = await this.client.getBlock({ blockNumber: BigInt(number), includeTransactions: true });
      if (block.parentHash !== this.hashes[number - 1]) {
        this.rewindTo(await this.lastCommonBlock(number - 1));
        number = this.recordedBlock;
        continue;
      }
      const entry = await blockEntryOf(block);
      this.options.writer.append([entry]);
      this.hashes.push(entry.hash);
      if (entry.unreplayable) this.options.log(`Block ${number} cannot be replayed at the next start: ${entry.unreplayable}`);
    }
  }

  /** The highest block at or below `from` that the chain and the journal share (at worst the genesis). */
  private async lastCommonBlock(from: number): Promise<number> {
    for (let number = from; number > 0; number--) {
      const block = await this.client.getBlock({ blockNumber: BigInt(number) });
      if (block.hash === this.hashes[number]) return number;
    }
    return 0;
  }

  private rewindTo(number: number): void {
    this.options.writer.append([{ type: "rewind", to: number }]);
    this.hashes.length = number + 1;
  }
}
