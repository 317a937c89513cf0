/**
 * A stopping HTTP server (api/src/http/drain.ts): the request under way is answered, its
 * connection closed with it, and the server done then, not when the keep-alive runs out.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { drainable } from "../../api/src/http/drain.ts";

function serve(handler: http.RequestListener) {
  const server = http.createServer(handler);
  // As the API's: a connection kept a minute after its last answer (the test's timeout is far shorter).
  server.keepAliveTimeout = 65_000;
  return new Promise<{ server: http.Server; port: number }>((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, port: (server.address() as AddressInfo).port })));
}

/** A GET on a keep-alive agent: the answer's status, Connection header and body. */
function get(port: number, agent: http.Agent): Promise<{ status: number; connection: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path: "/", agent }, (res) => {
        let body = "";
        res.on("data", (chunk) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
      })
      .on("error", reject);
  });
}

describe("draining a server", () => {
  it("answers the request under way with Connection: close and is done once it has, though keep-alive would hold the connection a minute", async () => {
    let answer!: () => void;
    let arrived!: () => void;
    const requestArrived = new Promise<void>((resolve) => (arrived = resolve));
    const { server, port } = await serve((_req, res) => {
      arrived();
      answer = () => res.end("done");
    });
    const drained = drainable(server);
    const agent = new http.Agent({ keepAlive: true });
    try {
      // A connection that served one request and stays open, idle.
      const warm = get(port, agent);
      await requestArrived;
      answer();
      expect((await warm).connection).toBe("keep-alive");

      const secondArrived = new Promise<void>((resolve) => (arrived = resolve));
      const underWay = get(port, agent);
      await secondArrived;
      const stopping = drained.drain();
      answer();
      expect(await underWay).toEqual({ status: 200, connection: "close", body: "done" });
      await stopping;
      expect(server.listening).toBe(false);
    } finally {
      agent.destroy();
      server.closeAllConnections();
    }
  }, 10_000);

  it("cuts a request that outlasts the grace", async () => {
    let arrived!: () => void;
    const requestArrived = new Promise<void>((resolve) => (arrived = resolve));
    const { server, port } = await serve(() => arrived());
    const drained = drainable(server);
    const agent = new http.Agent({ keepAlive: true });
    try {
      const hanging = get(port, agent).then(
        () => "answered",
        (error: NodeJS.ErrnoException) => error.code,
      );
      await requestArrived;
      await drained.drain(50);
      expect(await hanging).toBe("ECONNRESET");
    } finally {
      agent.destroy();
    }
  }, 10_000);
});
