import { type Kysely, sql } from "kysely";

// A refund that cannot unwind the sale (shares issued, the certificate resold or in the buyer's own
// wallet) is refused unless an admin forces it: then the certificate stays (`waived`) and the
// dispute records that it was forced. The dispute lock reads disputes by their sale's artwork.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table disputes add column refund_forced boolean not null default false`.execute(db);
  await sql`alter table disputes drop constraint disputes_certificate_return_check`.execute(db);
  await sql`alter table disputes add constraint disputes_certificate_return_check check (certificate_return in ('pending', 'returned', 'not_possible', 'waived'))`.execute(db);
  await sql`create index if not exists sales_artwork_idx on sales (artwork_id)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists sales_artwork_idx`.execute(db);
  await sql`alter table disputes drop constraint disputes_certificate_return_check`.execute(db);
  await sql`alter table disputes add constraint disputes_certificate_return_check check (certificate_return in ('pending', 'returned', 'not_possible'))`.execute(db);
  await sql`alter table disputes drop column refund_forced`.execute(db);
}
