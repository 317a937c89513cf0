/** The certification bench's burst, run in a worker thread (see burstInWorker in certification.ts). */
import { parentPort, workerData } from "node:worker_threads";
import { type BurstOrder, runBurst } from "./certification.ts";

parentPort!.postMessage(await runBurst(workerData as BurstOrder));
