import { type Kysely, sql } from "kysely";

/**
 * Points that follow what stands (docs/rewards.md): the rewards module's own balances (no column of
 * `users` any more), the sources that earned (standing or reversed, each once per rule and user),
 * ledger rows that name their source, reversals and redemptions given back. Today's rows keep their
 * history: their sources are read from their keys; a balance the ledger does not explain becomes an
 * opening `adjustment`, so nothing is lost.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table reward_balances (
      user_id text primary key references users (id),
      service_points integer not null default 0,
      lifetime_points integer not null default 0 check (lifetime_points >= 0),
      tier text not null default 'bronze' check (tier in ('bronze', 'silver', 'gold', 'platinum')),
      updated_at timestamptz not null default now()
    )`.execute(db);
  await sql`
    create table reward_sources (
      user_id text not null references users (id),
      source_type text not null,
      source_id text not null,
      rule text not null,
      points integer not null check (points >= 0),
      state text not null check (state in ('standing', 'reversed')),
      created_at timestamptz not null default now(),
      reversed_at timestamptz,
      primary key (source_type, source_id, rule, user_id)
    )`.execute(db);

  await sql`alter table reward_ledger add column source_type text, add column source_id text, add column rule text`.execute(db);
  await sql`alter table reward_ledger drop constraint reward_ledger_sign`.execute(db);
  await sql`alter table reward_ledger drop constraint reward_ledger_type_check`.execute(db);
  await sql`
    alter table reward_ledger add constraint reward_ledger_type_check
      check (type in ('earned', 'redeemed', 'reversal', 'redemption_reversed', 'adjustment'))`.execute(db);
  await sql`
    alter table reward_ledger add constraint reward_ledger_sign check (
      (type in ('earned', 'redemption_reversed') and points > 0) or (type in ('redeemed', 'reversal') and points < 0) or (type = 'adjustment' and points <> 0))`.execute(db);
  await sql`alter table reward_redemptions add column reversed_at timestamptz`.execute(db);

  // Today's rows: an earning's key is `<event id>:<rule>:<user>`, its reference the source.
  await sql`
    update reward_ledger set
      rule = case when r.rule like 'won:%' then 'won' else r.rule end,
      source_type = case
        when r.rule = 'certified' then 'certification'
        when r.rule in ('bought', 'sold') then 'sale'
        when r.rule = 'shares' then 'share_purchase'
        when r.rule = 'tickets' then 'ticket_order'
        when r.rule = 'post' then 'post'
        when r.rule = 'joined' then 'challenge_submission'
        when r.rule like 'won:%' then 'challenge_win'
        else 'other' end,
      source_id = reference_id
    from (select id, substring(source_key from '^[^:]+:(.*):[^:]+$') as rule from reward_ledger where type = 'earned') r
    where reward_ledger.id = r.id`.execute(db);
  await sql`update reward_ledger set source_type = 'redemption', source_id = reference_id where type = 'redeemed'`.execute(db);
  await sql`
    insert into reward_sources (user_id, source_type, source_id, rule, points, state, created_at)
    select user_id, source_type, source_id, rule, sum(points), 'standing', min(created_at)
    from reward_ledger where type = 'earned' group by user_id, source_type, source_id, rule
    on conflict do nothing`.execute(db);
  // Balances the ledger does not explain (none are expected) open with an adjustment.
  await sql`
    insert into reward_ledger (id, user_id, type, points, reason, reference_id, source_key, source_type, source_id)
    select 'rev_adjust_' || u.id, u.id, 'adjustment', u.service_points - coalesce(l.points, 0), 'Opening balance carried over', u.id, 'adjustment:opening:' || u.id, 'adjustment', u.id
    from users u left join (select user_id, sum(points)::int as points from reward_ledger group by user_id) l on l.user_id = u.id
    where u.service_points <> coalesce(l.points, 0)`.execute(db);
  await sql`
    insert into reward_balances (user_id, service_points, lifetime_points, tier)
    select id, service_points, lifetime_points, tier from users where service_points <> 0 or lifetime_points <> 0 or tier <> 'bronze'`.execute(db);
  await sql`alter table users drop column service_points, drop column lifetime_points, drop column tier`.execute(db);

  // What the users module shows of a user's points (UsersViews reads it; no row: 0, bronze).
  await sql`create view reward_standings as select user_id, service_points, lifetime_points, tier from reward_balances`.execute(db);
  // Public profiles show the tier: a change of it (not of the balance) forgets the kept public reads.
  await sql`
    create trigger reward_balances_public_data_changed after update on reward_balances for each row
    when (old.tier is distinct from new.tier) execute function notify_public_data_changed()`.execute(db);
  await sql`
    create trigger reward_balances_public_data_added after insert on reward_balances
    for each row when (new.tier <> 'bronze') execute function notify_public_data_changed()`.execute(db);
  await sql`create index reward_ledger_source_idx on reward_ledger (source_type, source_id)`.execute(db);
  await sql`create index reward_redemptions_order_idx on reward_redemptions (order_id) where order_id is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop view reward_standings`.execute(db);
  await sql`alter table users add column service_points integer not null default 0 check (service_points >= 0),
    add column lifetime_points integer not null default 0 check (lifetime_points >= 0),
    add column tier text not null default 'bronze' check (tier in ('bronze', 'silver', 'gold', 'platinum'))`.execute(db);
  await sql`update users u set service_points = greatest(b.service_points, 0), lifetime_points = b.lifetime_points, tier = b.tier from reward_balances b where b.user_id = u.id`.execute(db);
  await sql`drop index if exists reward_redemptions_order_idx`.execute(db);
  await sql`drop index if exists reward_ledger_source_idx`.execute(db);
  await sql`alter table reward_redemptions drop column reversed_at`.execute(db);
  await sql`delete from reward_ledger where type not in ('earned', 'redeemed')`.execute(db);
  await sql`alter table reward_ledger drop constraint reward_ledger_sign, drop constraint reward_ledger_type_check`.execute(db);
  await sql`alter table reward_ledger add constraint reward_ledger_type_check check (type in ('earned', 'redeemed'))`.execute(db);
  await sql`alter table reward_ledger add constraint reward_ledger_sign check ((type = 'earned' and points > 0) or (type = 'redeemed' and points < 0))`.execute(db);
  await sql`alter table reward_ledger drop column source_type, drop column source_id, drop column rule`.execute(db);
  await sql`drop table reward_sources`.execute(db);
  await sql`drop table reward_balances`.execute(db);
}
