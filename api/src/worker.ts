/**
 * The worker process: the outbox dispatcher, the webhook senders, job runners (certifications,
 * image fetches, maintenance), the indexer listener and the certification sweep.
 * It serves no HTTP; several may run on one database.
 *
 * `tsx api/src/worker.ts` with the same settings as the HTTP process (api/src/server.ts).
 */
import { runProcess } from "./platform.ts";

await runProcess({ http: false, worker: true });
