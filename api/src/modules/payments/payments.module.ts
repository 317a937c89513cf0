import type { Config } from "../../config.ts";
import type { Kysely } from "kysely";
import type { Database } from "../../db/database.ts";
import { defineModule, migrationsOf } from "../module.ts";
import type { PaymentProcessor } from "./processor.ts";
import { registerPaymentsRoutes } from "./payments.routes.ts";
import { PaymentsService } from "./payments.service.ts";
import { SandboxProcessor } from "./sandbox.processor.ts";
import { PURCHASE_CHARGE_TASK, PURCHASE_REFUND_TASK, Purchases } from "./purchases.service.ts";
import type { LedgerService } from "../ledger/ledger.service.ts";

/**
 * Payment methods and charges through a processor (processor.ts): the built-in sandbox, which
 * behaves as Stripe's test mode; and every purchase's lifecycle (purchases.service.ts), with which the
 * modules that sell register their kinds. Tables: payments.tables.ts.
 */
export const paymentsModule = defineModule<{ payments: PaymentsService; purchases: Purchases }, { ledger: LedgerService }>({
  name: "payments",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, config, logger, ledger, chainOperations }) => {
    const payments = new PaymentsService(db, processorFor(config.payments.processor, db), config.payments);
    return { payments, purchases: new Purchases({ db, logger, payments, ledger, operations: chainOperations, chargeRuns: config.marketplace.chargeAttempts }) };
  },
  routes: ({ api }, { payments }) => registerPaymentsRoutes(api, payments),
  worker: ({ purchases }, { config, logger }) => {
    let timer: NodeJS.Timeout | null = null;
    let running: Promise<unknown> | null = null;
    // The safety net behind the charge and refund jobs: purchases whose step sits behind a dead worker.
    const sweep = () => {
      timer = setTimeout(() => {
        running = purchases
          .recoverStuck()
          .catch((err: unknown) => logger.error({ err }, "purchase sweep failed"))
          .finally(() => {
            running = null;
            if (timer) sweep();
          });
      }, config.marketplace.sweepIntervalMs);
    };
    return {
      tasks: { general: { [PURCHASE_CHARGE_TASK]: purchases.chargeTask, [PURCHASE_REFUND_TASK]: purchases.refundTask } },
      start: sweep,
      stop: async () => {
        if (timer) clearTimeout(timer);
        timer = null;
        await running;
      },
    };
  },
});

/** A real adapter (Stripe) is one more case here and one more name in PAYMENT_PROCESSOR. */
function processorFor(name: Config["payments"]["processor"], db: Kysely<Database>): PaymentProcessor {
  switch (name) {
    case "sandbox":
      return new SandboxProcessor(db);
  }
}
