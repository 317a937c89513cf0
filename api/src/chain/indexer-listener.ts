import type { Logger } from "pino";
import { NotificationListener } from "../db/notifications.ts";
import { indexerNotifyChannel } from "./indexer-schema.ts";

/**
 * Tells the API as soon as the indexer has projected a new block: `LISTEN` on the channel Ponder
 * NOTIFYs after each block. A lost connection is reopened with backoff; `onReady` runs after every
 * (re)connect, so the caller can catch up on what it may have missed meanwhile.
 */
export class IndexerListener extends NotificationListener {
  constructor(options: { databaseUrl: string; viewsSchema: string; onNotify: () => void; onReady: () => void; logger: Logger }) {
    super({
      databaseUrl: options.databaseUrl,
      channel: indexerNotifyChannel(options.viewsSchema),
      name: "indexer-listener",
      onNotify: () => options.onNotify(),
      onReady: options.onReady,
      logger: options.logger,
    });
  }
}
