import type { Config } from "../../config.ts";
import type { Kysely } from "kysely";
import type { Database } from "../../db/database.ts";
import { defineModule, migrationsOf } from "../module.ts";
import type { PaymentProcessor } from "./processor.ts";
import { registerPaymentsRoutes } from "./payments.routes.ts";
import { PaymentsService } from "./payments.service.ts";
import { SandboxProcessor } from "./sandbox.processor.ts";

/**
 * Payment methods and charges through a processor (processor.ts): the built-in sandbox, which
 * behaves as Stripe's test mode. Other modules charge through `payments` (PaymentsService).
 * Tables: payments.tables.ts.
 */
export const paymentsModule = defineModule({
  name: "payments",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, config }) => ({
    payments: new PaymentsService(db, processorFor(config.payments.processor, db), config.payments),
  }),
  routes: ({ api }, { payments }) => registerPaymentsRoutes(api, payments),
});

/** A real adapter (Stripe) is one more case here and one more name in PAYMENT_PROCESSOR. */
function processorFor(name: Config["payments"]["processor"], db: Kysely<Database>): PaymentProcessor {
  switch (name) {
    case "sandbox":
      return new SandboxProcessor(db);
  }
}
