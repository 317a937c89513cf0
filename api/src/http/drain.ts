import type { Server, ServerResponse } from "node:http";

/** How long a stopping server lets the requests under way finish before it cuts their connections. */
export const DRAIN_GRACE_MS = 10_000;

/**
 * A server that stops the way a load balancer's member should: no new connections, each request
 * under way answered with `Connection: close` (its client sends the next one elsewhere), each
 * connection closed as soon as it is idle rather than when its keep-alive runs out (65 s), and
 * whatever is still open after the grace cut.
 */
export function drainable(server: Server): { drain(graceMs?: number): Promise<void> } {
  const underWay = new Set<ServerResponse>();
  let draining = false;
  server.prependListener("request", (_req, res: ServerResponse) => {
    if (draining) res.shouldKeepAlive = false;
    underWay.add(res);
    res.once("close", () => underWay.delete(res));
  });
  let drained: Promise<void> | null = null;
  return {
    drain(graceMs = DRAIN_GRACE_MS) {
      drained ??= new Promise<void>((resolve) => {
        draining = true;
        for (const res of underWay) if (!res.headersSent) res.shouldKeepAlive = false;
        // A connection whose last answer left before Connection: close could be set turns idle later.
        const idle = setInterval(() => server.closeIdleConnections(), 100);
        const cut = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearInterval(idle);
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      });
      return drained;
    },
  };
}
