/** The certification bench's load generator, a worker thread that runs each burst it is sent (see BurstWorker in certification.ts). */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parentPort } from "node:worker_threads";
import { type BurstOrder, runBurst, submitArtwork } from "./certification.ts";

/**
 * The client's own code warmed before the first burst, against a local stand-in that reads each
 * upload and answers 201: three rounds of 200 uploads at once, nothing sent to the API.
 */
async function warmUp(): Promise<void> {
  let n = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(201, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: `warm_${n++}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  for (let round = 0; round < 3; round++) await Promise.all(Array.from({ length: 200 }, (_, i) => submitArtwork(url, "warm-up", -1 - i)));
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

parentPort!.on("message", async (order: BurstOrder) => {
  try {
    parentPort!.postMessage({ result: await runBurst(order) });
  } catch (err) {
    parentPort!.postMessage({ error: (err as Error).stack ?? String(err) });
  }
});
await warmUp();
parentPort!.postMessage({ ready: true });
