import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import net from "node:net";
import type { ChainRecorder } from "./chain-recorder.ts";
import { portInUse } from "./processes.ts";

/**
 * The local chain's RPC as everyone sees it (the banner's Chain RPC: the API, its worker, the
 * indexer, deploys, wallets): a JSON-RPC proxy in front of the Hardhat node that answers a request
 * only once the chain's journal holds every block the node had when it answered. Nothing then acts
 * on a block the journal does not hold: a SIGKILL of the node loses only blocks nobody was told of,
 * and the next start replays every block the database knows (chain-journal.ts).
 *
 * - Each answer waits for one catch-up of the journal that began after the node answered; answers
 *   that arrive while one runs share the next (ChainRecorder.journalSeen), so a burst costs one.
 * - The node's own state changes that are no transaction (hardhat_setBalance, evm_increaseTime…)
 *   are made through the recorder, which journals them in place (replayed at the next start).
 * - If the journal cannot be written (the node died, the disk failed), the answer is a JSON-RPC
 *   error, never the node's answer: a client that sent a transaction then sends it again, as for
 *   any failed send.
 * - Websocket subscriptions pass through to the node as they are: what they announce is not held
 *   for the journal (the stack's own processes poll over HTTP).
 */
export interface JournaledRpc {
  url: string;
  wsUrl: string;
  stop(): Promise<void>;
}

/** Cheats that change the node's state without a block: journaled as calls, in place. */
const STATE_CALLS = new Set([
  "hardhat_setBalance",
  "hardhat_setCode",
  "hardhat_setNonce",
  "hardhat_setStorageAt",
  "hardhat_setNextBlockBaseFeePerGas",
  "hardhat_setPrevRandao",
  "hardhat_setCoinbase",
  "evm_increaseTime",
  "evm_setNextBlockTimestamp",
]);

/** Answers that say nothing about the chain's blocks or state: passed on without waiting for the journal. */
const STATIC_METHODS = new Set(["eth_chainId", "net_version", "web3_clientVersion", "net_listening", "eth_accounts", "hardhat_metadata"]);

/** Deploys send the contracts' bytecode; nothing else comes near. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

interface RpcRequest {
  jsonrpc?: string;
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

export async function startJournaledRpc(options: { nodeUrl: string; port: number; recorder: ChainRecorder; log: (line: string) => void }): Promise<JournaledRpc> {
  const { recorder, log } = options;
  if (await portInUse(options.port)) {
    throw new Error(`Port ${options.port} is taken, so the chain RPC cannot start (set HARDHAT_NODE_PORT, or CHAIN_RPC_URL to use a running chain)`);
  }
  const node = new URL(options.nodeUrl);
  let lastJournalError: string | null = null;

  /** The node's answer to `body` (passed on as it is), once the journal holds what it may reveal. */
  async function forward(body: string, requests: RpcRequest[]): Promise<{ status: number; text: string }> {
    const upstream = await fetch(options.nodeUrl, { method: "POST", headers: { "content-type": "application/json" }, body }).catch((error: Error) => {
      throw new Error(`the Hardhat node did not answer (${error.message})`);
    });
    const text = await upstream.text();
    if (!requests.every((r) => typeof r.method === "string" && STATIC_METHODS.has(r.method))) {
      await recorder.journalSeen().catch((error: Error) => {
        throw new Error(`the chain's journal could not record the node's blocks, so its answer is withheld (${error.message.split("\n")[0]})`);
      });
    }
    return { status: upstream.status, text };
  }

  /** A cheat made by the recorder, journaled in place; its answer as the node would give it. */
  async function stateCall(request: RpcRequest): Promise<unknown> {
    try {
      const result = await recorder.recordCall(request.method as string, Array.isArray(request.params) ? request.params : []);
      return { jsonrpc: "2.0", id: request.id ?? null, result: result ?? null };
    } catch (error) {
      return { jsonrpc: "2.0", id: request.id ?? null, error: { code: -32603, message: (error as Error).message.split("\n")[0] } };
    }
  }

  async function answer(body: string): Promise<{ status: number; text: string }> {
    let parsed: RpcRequest | RpcRequest[];
    try {
      parsed = JSON.parse(body) as RpcRequest | RpcRequest[];
    } catch {
      // Not JSON: the node says so in its own words.
      return forward(body, []);
    }
    const requests = Array.isArray(parsed) ? parsed : [parsed];
    if (!requests.some((r) => typeof r.method === "string" && STATE_CALLS.has(r.method))) return forward(body, requests);
    // A batch with a cheat in it: one by one, in order, so that each is journaled where it happened.
    const answers: unknown[] = [];
    for (const request of requests) {
      if (typeof request.method === "string" && STATE_CALLS.has(request.method)) answers.push(await stateCall(request));
      else answers.push(JSON.parse((await forward(JSON.stringify(request), [request])).text));
    }
    return { status: 200, text: JSON.stringify(Array.isArray(parsed) ? answers : answers[0]) };
  }

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((error: Error) => {
      // The journal (or the node) failed: the client learns nothing it could act on.
      const message = error.message.split("\n")[0]!;
      // Said once per kind of failure: a node that stopped fails every request the same way.
      if (message !== lastJournalError) log(`Chain RPC: ${message}`);
      lastJournalError = message;
      if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32603, message } }));
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== "POST") {
      // CORS preflights and GETs say nothing of the chain: the node answers them.
      const upstream = await fetch(new URL(req.url ?? "/", node), { method: req.method, headers: headersOf(req) });
      res.writeHead(upstream.status, Object.fromEntries(upstream.headers)).end(Buffer.from(await upstream.arrayBuffer()));
      return;
    }
    const body = await readBody(req);
    if (body === null) {
      res.writeHead(413, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32600, message: `request body over ${MAX_BODY_BYTES} bytes` } }));
      return;
    }
    const { status, text } = await answer(body);
    lastJournalError = null;
    res.writeHead(status, { "content-type": "application/json", "access-control-allow-origin": "*" }).end(text);
  }

  // Websockets: the upgrade request and every byte after it go to the node and back as they are.
  server.on("upgrade", (req: IncomingMessage, socket: net.Socket, head: Buffer) => {
    const upstream = net.connect(Number(node.port), node.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length > 0) upstream.write(head);
      socket.pipe(upstream).pipe(socket);
    });
    const close = () => {
      socket.destroy();
      upstream.destroy();
    };
    upstream.on("error", close);
    socket.on("error", close);
    socket.on("close", () => upstream.destroy());
    upstream.on("close", () => socket.destroy());
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, "127.0.0.1", () => resolve());
  });
  return {
    url: `http://127.0.0.1:${options.port}`,
    wsUrl: `ws://127.0.0.1:${options.port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && name !== "host" && name !== "connection" && name !== "content-length") headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}

/** The whole body, or null past MAX_BODY_BYTES. */
function readBody(req: IncomingMessage): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on("end", () => resolve(size > MAX_BODY_BYTES ? null : Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
