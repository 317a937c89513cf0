import { defineModule, migrationsOf } from "../module.ts";
import { LedgerAnchoring } from "./anchoring.ts";
import { registerLedgerRoutes } from "./ledger.routes.ts";
import { LedgerService } from "./ledger.service.ts";

/**
 * The marketplace's audit ledger (docs/auditors.md#the-marketplace-ledger): other modules append
 * entries through `ledger` (LedgerService) in their own transactions; `ledgerAnchoring` anchors
 * them on the AuditAnchor contract (the `ledger_anchor` chain operation kind) from a worker loop.
 * Tables: ledger.tables.ts.
 */
export const ledgerModule = defineModule({
  name: "ledger",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, config, logger, relayer, publicClient, chainOperations, indexedChain }) => {
    const ledgerAnchoring = new LedgerAnchoring({ db, config, logger, relayer, publicClient, operations: chainOperations, anchors: indexedChain.anchors });
    const ledger = new LedgerService({
      db,
      indexedAnchors: () => ledgerAnchoring.indexedAnchors(),
      anchorTransaction: (trx, firstSeq, lastSeq) => ledgerAnchoring.transactionOfRange(trx, firstSeq, lastSeq),
    });
    return { ledger, ledgerAnchoring };
  },
  routes: ({ api }, { ledger }) => registerLedgerRoutes(api, ledger),
  chainOperationKinds: ({ ledgerAnchoring }) => [ledgerAnchoring],
  worker: ({ ledgerAnchoring }) => ({
    start: () => ledgerAnchoring.start(),
    stop: () => ledgerAnchoring.stop(),
  }),
});
