/**
 * The HTTP process: routes, rate limits, idempotency; it enqueues jobs and runs none, so any number
 * of them can serve one database behind a load balancer. The jobs, the indexer listener and the
 * sweeps run in the worker process (api/src/worker.ts).
 *
 * `tsx api/src/server.ts` against an existing database, chain and indexer.
 */
import { runProcess } from "./platform.ts";

await runProcess({ http: true, worker: false });
