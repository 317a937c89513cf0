import { createServer, type Socket, connect } from "node:net";

export interface FreezableProxy {
  port: number;
  /** Connections accepted so far (a websocket client opens one and keeps it). */
  connections(): number;
  /**
   * Stops delivering what the upstream sends (its bytes are held back); the connections stay open
   * and nothing errors: a websocket feed that goes silent.
   */
  freeze(): void;
  /** Delivers what was held back, and everything after. */
  thaw(): void;
  /**
   * The upstream unreachable: open connections are reset and every new one is reset at once, until
   * restore(). The port stays bound, so nothing else can take it meanwhile.
   */
  cut(): void;
  /** Connections reach the upstream again. */
  restore(): void;
  /** Connections reset while cut. */
  refused(): number;
  /** Resolves once `count` connections have been reset while cut. */
  refusedAtLeast(count: number): Promise<void>;
  close(): Promise<void>;
}

/** A TCP proxy to 127.0.0.1:`upstreamPort` (e.g. a Hardhat node's websocket or JSON-RPC) that a test can freeze or cut. */
export async function startFreezableProxy(upstreamPort: number): Promise<FreezableProxy> {
  let frozen = false;
  let severed = false;
  let accepted = 0;
  let refused = 0;
  const refusalWaiters: { count: number; resolve: () => void }[] = [];
  const pipes = new Set<{ client: Socket; upstream: Socket; held: Buffer[] }>();
  const server = createServer((client) => {
    accepted++;
    if (severed) {
      refused++;
      for (const w of refusalWaiters.filter((w) => refused >= w.count)) {
        refusalWaiters.splice(refusalWaiters.indexOf(w), 1);
        w.resolve();
      }
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(upstreamPort, "127.0.0.1");
    const pipe = { client, upstream, held: [] as Buffer[] };
    pipes.add(pipe);
    client.on("data", (chunk) => upstream.write(chunk));
    upstream.on("data", (chunk: Buffer) => {
      if (frozen) pipe.held.push(chunk);
      else client.write(chunk);
    });
    const close = () => {
      pipes.delete(pipe);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", close);
    upstream.on("close", close);
    client.on("error", close);
    upstream.on("error", close);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    connections: () => accepted,
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      for (const pipe of pipes) for (const chunk of pipe.held.splice(0)) pipe.client.write(chunk);
    },
    cut() {
      severed = true;
      for (const pipe of pipes) {
        pipe.client.resetAndDestroy();
        pipe.upstream.destroy();
      }
    },
    restore() {
      severed = false;
    },
    refused: () => refused,
    refusedAtLeast: (count) => (refused >= count ? Promise.resolve() : new Promise<void>((resolve) => refusalWaiters.push({ count, resolve }))),
    close: () =>
      new Promise<void>((resolve) => {
        for (const pipe of pipes) {
          pipe.client.destroy();
          pipe.upstream.destroy();
        }
        server.close(() => resolve());
      }),
  };
}
