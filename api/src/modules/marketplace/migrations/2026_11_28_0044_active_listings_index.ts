import { type Kysely, sql } from "kysely";

// The page of active listings by date is found in this index alone (a deep page skips its entries,
// filtered by price from the entries themselves), then joined to its artworks (searchActive).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index listings_active_created_idx on listings (created_at desc, id desc) include (price_cents) where status = 'active'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index listings_active_created_idx`.execute(db);
}
