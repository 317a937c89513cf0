import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { type Hex, keccak256, parseTransaction } from "viem";
import { expect } from "vitest";

export interface JsonRpcCall {
  method: string;
  params: unknown[];
}

export interface JsonRpcProxy {
  /** The API's CHAIN_RPC_URL. */
  url: string;
  close(): Promise<void>;
}

/**
 * An HTTP JSON-RPC proxy to the chain that shows each request to `inspect` before it reaches the
 * node: `inspect` may hold it (await something, e.g. a process being killed) and then let it
 * through ("forward") or never send it ("drop": the client sees its connection closed).
 */
export async function startJsonRpcProxy(upstreamUrl: string, inspect: (calls: JsonRpcCall[]) => Promise<"forward" | "drop"> | "forward" | "drop"): Promise<JsonRpcProxy> {
  const server = createServer(async (req, res) => {
    try {
      const body = await readBody(req);
      const parsed = JSON.parse(body) as JsonRpcCall | JsonRpcCall[];
      if ((await inspect(Array.isArray(parsed) ? parsed : [parsed])) === "drop") {
        res.destroy();
        return;
      }
      const upstream = await fetch(upstreamUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
      res.writeHead(upstream.status, { "content-type": "application/json" }).end(await upstream.text());
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A request's body, whole. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/**
 * After a process was killed while the proxy held its transaction `held`, then forwarded or dropped
 * it (`fate`), and a restart finished the work: what the restart sent again (`resent`, the same
 * kind of transaction) and the transaction the work was confirmed with must match that fate.
 * Forwarded: nothing sent again, confirmed with the held one. Dropped: the lost one sent again with
 * its nonce, and confirmed with that.
 */
export function expectResentByFate(fate: "forward" | "drop", held: { raw: Hex; nonce: number }, resent: Hex[], confirmedWith: string | null): void {
  if (fate === "forward") {
    expect(resent).toEqual([]);
    expect(confirmedWith).toBe(keccak256(held.raw));
  } else {
    expect(resent.map((raw) => parseTransaction(raw).nonce)).toEqual([held.nonce]);
    expect(confirmedWith).toBe(keccak256(resent[0]!));
  }
}
