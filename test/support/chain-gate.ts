import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll } from "vitest";
import { standIn } from "./api.ts";
import { type ArtworkPlatform, useArtworkPlatform } from "./artworks.ts";
import { testEnvironment } from "./environment.ts";
import { readBody } from "./rpc-proxy.ts";

/** One JSON-RPC call as the platform sent it. */
export interface RpcCall {
  method: string;
  params: unknown[];
}

/**
 * A JSON-RPC proxy between a platform and the chain that decides when the platform's chain effects
 * happen: while held, the transactions it sends wait here (its reads pass), so a test can have a
 * move's chain effect mined before, between or after other moves. A call's answer can also be held
 * (the call reaches the node at once; the platform sees what the node said only later).
 */
export interface ChainGate {
  /** The platform's CHAIN_RPC_URL. */
  url: string;
  /** From now on the platform's transactions wait at the gate. */
  hold(): void;
  /** Sends the waiting transactions to the node in the order they came (each answered once the node took it); later ones pass. */
  release(): Promise<void>;
  /** Resolves once at least `n` transactions wait at the gate. */
  waiting(n: number): Promise<void>;
  /** How many transactions wait now. */
  held(): number;
  /**
   * Holds the node's answer to the next call that `match`es until `until` resolves; resolves with
   * the call once it came (its answer then waits).
   */
  holdAnswer(match: (call: RpcCall) => boolean, until: Promise<unknown>): Promise<RpcCall>;
  close(): Promise<void>;
}

const SENDS = new Set(["eth_sendRawTransaction", "eth_sendTransaction"]);

export async function startChainGate(upstreamUrl: string): Promise<ChainGate> {
  let holding = false;
  const queue: { forward: () => Promise<void> }[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const answerHolds: { match: (call: RpcCall) => boolean; until: Promise<unknown>; seen: (call: RpcCall) => void }[] = [];
  const wake = () => {
    for (const w of [...waiters]) {
      if (queue.length >= w.n) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  const forwardTo = async (body: string) => {
    const upstream = await fetch(upstreamUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
    return { status: upstream.status, text: await upstream.text() };
  };

  const server = createServer(async (req, res) => {
    try {
      const body = await readBody(req);
      const parsed = JSON.parse(body) as RpcCall | RpcCall[];
      const calls = Array.isArray(parsed) ? parsed : [parsed];
      const reply = (answer: { status: number; text: string }): void => {
        res.writeHead(answer.status, { "content-type": "application/json" }).end(answer.text);
      };
      if (holding && calls.some((c) => SENDS.has(c.method))) {
        await new Promise<void>((resolve, reject) => {
          queue.push({ forward: () => forwardTo(body).then(reply).then(resolve, reject) });
          wake();
        });
        return;
      }
      const hold = answerHolds.find((h) => calls.some(h.match));
      if (hold) answerHolds.splice(answerHolds.indexOf(hold), 1);
      const answer = await forwardTo(body);
      if (hold) {
        hold.seen(calls.find(hold.match)!);
        await hold.until;
      }
      reply(answer);
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hold: () => {
      holding = true;
    },
    async release() {
      holding = false;
      while (queue.length > 0) await queue.shift()!.forward();
    },
    waiting: (n) =>
      new Promise<void>((resolve) => {
        waiters.push({ n, resolve });
        wake();
      }),
    held: () => queue.length,
    holdAnswer: (match, until) => new Promise<RpcCall>((seen) => answerHolds.push({ match, until, seen })),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A test file's platform whose chain writes pass a gate of its own (started before it, closed after
 * it, released after each test so that a test that failed holding it does not hold the next one).
 */
export function useGatedPlatform(overrides: Record<string, string> = {}): { platform: ArtworkPlatform; gate: ChainGate } {
  let gate: ChainGate | undefined;
  beforeAll(async () => {
    gate = await startChainGate(testEnvironment().rpcUrl);
  });
  afterEach(() => gate?.release());
  afterAll(async () => {
    await gate?.close();
  });
  const platform = useArtworkPlatform(() => ({ CHAIN_RPC_URL: gate!.url, ...overrides }));
  return { platform, gate: standIn(() => gate, "The chain gate") };
}
