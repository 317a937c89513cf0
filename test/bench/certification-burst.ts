/** The certification bench's load generator, a worker thread that runs each burst it is sent (see BurstWorker in certification.ts). */
import { parentPort } from "node:worker_threads";
import { type BurstOrder, runBurst } from "./certification.ts";

parentPort!.on("message", async (order: BurstOrder) => {
  try {
    parentPort!.postMessage({ result: await runBurst(order) });
  } catch (err) {
    parentPort!.postMessage({ error: (err as Error).stack ?? String(err) });
  }
});
parentPort!.postMessage({ ready: true });
