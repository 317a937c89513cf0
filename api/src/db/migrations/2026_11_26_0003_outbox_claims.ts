import { type Kysely, sql } from "kysely";

// The outbox is dispatched from its own table (api/src/jobs/outbox.ts): a dispatcher claims the oldest
// undispatched events in batches (no job per event). An event whose subscriber fails waits before it
// is handed out again: its attempts, the time it may go again, and the last error are kept on it.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("outbox_events")
    .addColumn("dispatch_attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("dispatch_after", "timestamptz")
    .addColumn("dispatch_error", "text")
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("outbox_events").dropColumn("dispatch_error").dropColumn("dispatch_after").dropColumn("dispatch_attempts").execute();
}
