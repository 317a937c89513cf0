import { type Kysely, sql } from "kysely";
import { up as createSlotFunctions } from "./2026_11_23_0007_webhook_slot_functions.ts";
import { up as successTakesTheOwnersLockFirst } from "./2026_11_25_0020_webhook_succeed_lock_order.ts";

// Deliveries are claimed from their own table in batches
// (docs/contributors/architecture.md#events-and-webhook-deliveries): no job per delivery. One
// function starts the attempts of as many due deliveries as a sender asks for, within every user's
// and subscription's caps of attempts in flight. Claims take one advisory lock, so the caps hold
// across processes: a volatile PL/pgSQL function's statements read with a snapshot taken after the
// lock (a single SQL statement's snapshot would predate it). Ending an attempt takes no lock (it
// only frees a slot: a claim that counted it still in flight started fewer, never more).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists webhook_succeed_attempt(text, int, int, text, text, double precision, int, int)`.execute(db);
  await sql`drop function if exists webhook_start_waiting(text, double precision, int, int)`.execute(db);
  await sql`drop function if exists webhook_take_slot(text, text, double precision, int, int)`.execute(db);
  await sql`drop function if exists webhook_subscription_in_flight(text, timestamptz)`.execute(db);
  await sql`drop function if exists webhook_user_in_flight(text, timestamptz)`.execute(db);

  // The claim reads two indexes: the waiting deliveries per subscription (webhook_deliveries_waiting_idx)
  // and the attempts in flight (webhook_deliveries_in_flight_idx). The index on (in_flight_since,
  // next_retry_at) served the sweep of the per-delivery jobs; left beside them, the planner took it
  // for the claim's per-subscription reads (a scan of every waiting delivery, then a sort) whenever its
  // estimates of the waiting rows were low, as they are on a new table or after a burst.
  await sql`drop index if exists webhook_deliveries_pending_idx`.execute(db);

  await sql`
    create function webhook_claim_attempts(p_limit int, p_lease_seconds double precision, p_per_user int, p_per_subscription int)
    returns table (
      id text, attempts int, subscription_id text, user_id text, url text, secret text, previous_secret text,
      previous_secret_expires_at timestamptz, failing_since timestamptz, event_id text, event_type text, payload jsonb,
      event_created_at timestamptz
    ) language plpgsql volatile as $$
    #variable_conflict use_column
    declare
      since constant timestamptz := now() - make_interval(secs => p_lease_seconds);
      waiting text[];
      disabled text[];
    begin
      -- Nothing waiting and nothing abandoned (most polls of an idle platform): no lock, two index probes.
      if not exists (select from webhook_deliveries d where d.status = 'pending' and d.in_flight_since is null)
        and not exists (select from webhook_deliveries d where d.status = 'pending' and d.in_flight_since < since) then
        return;
      end if;
      perform pg_advisory_xact_lock(hashtextextended('webhook_claims', 0));

      -- An attempt whose process died (its lease expired) waits again, ahead of newer deliveries: its
      -- next claim counts a new attempt, and a late answer to the old one is not recorded (attempts differ).
      update webhook_deliveries d set in_flight_since = null, next_retry_at = d.in_flight_since, updated_at = now()
      where d.status = 'pending' and d.in_flight_since < since;

      -- The subscriptions with deliveries waiting, one index probe each (a skip scan of
      -- webhook_deliveries_waiting_idx): a user's long backlog never hides the others' deliveries.
      with recursive w (subscription_id) as (
        (select d.subscription_id from webhook_deliveries d
         where d.status = 'pending' and d.in_flight_since is null order by d.subscription_id limit 1)
        union all
        select (select d.subscription_id from webhook_deliveries d
                where d.status = 'pending' and d.in_flight_since is null and d.subscription_id > w.subscription_id
                order by d.subscription_id limit 1)
        from w where w.subscription_id is not null
      )
      select array_agg(w.subscription_id) into waiting from w where w.subscription_id is not null;
      if waiting is null then
        return;
      end if;

      -- A due delivery of a disabled subscription fails (a manual retry after re-enabling it revives it).
      select array_agg(s.id) into disabled from webhook_subscriptions s where s.id = any(waiting) and s.status = 'disabled';
      if disabled is not null then
        update webhook_deliveries d
        set status = 'failed', last_error = 'The subscription is disabled', next_retry_at = null, updated_at = now()
        where d.subscription_id = any(disabled) and d.status = 'pending' and d.in_flight_since is null and d.next_retry_at <= now();
      end if;

      return query
        with live as (
          select d.subscription_id, count(*) as n from webhook_deliveries d
          where d.status = 'pending' and d.in_flight_since >= since group by d.subscription_id
        ), live_per_user as (
          select s.user_id, sum(l.n) as n from live l join webhook_subscriptions s on s.id = l.subscription_id group by s.user_id
        ), candidates as (
          -- Per subscription, its oldest due deliveries, as many as its free slots.
          select c.id, c.next_retry_at, s.user_id
          from webhook_subscriptions s
          left join live l on l.subscription_id = s.id
          cross join lateral (
            select d.id, d.next_retry_at from webhook_deliveries d
            where d.subscription_id = s.id and d.status = 'pending' and d.in_flight_since is null and d.next_retry_at <= now()
            order by d.next_retry_at, d.id
            limit greatest(p_per_subscription - coalesce(l.n, 0), 0)
          ) c
          where s.id = any(waiting) and s.status = 'active'
        ), chosen as (
          -- Per user, the oldest of those, as many as its free slots; then the oldest overall.
          select r.id, r.next_retry_at from (
            select c.*, row_number() over (partition by c.user_id order by c.next_retry_at, c.id) as rank from candidates c
          ) r
          left join live_per_user u on u.user_id = r.user_id
          where r.rank <= p_per_user - coalesce(u.n, 0)
          order by r.next_retry_at, r.id
          limit p_limit
        ), started as (
          update webhook_deliveries d
          set attempts = d.attempts + 1, in_flight_since = now(), last_attempt_at = now(), next_retry_at = null, updated_at = now()
          from chosen c
          where d.id = c.id
          returning d.id, d.attempts, d.subscription_id, d.event_id, c.next_retry_at
        )
        select st.id, st.attempts, st.subscription_id, s.user_id, s.url, s.secret, s.previous_secret,
          s.previous_secret_expires_at, s.failing_since, st.event_id, e.event_type, e.payload, e.created_at
        from started st
        join webhook_subscriptions s on s.id = st.subscription_id
        join outbox_events e on e.id = st.event_id
        order by st.next_retry_at, st.id;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists webhook_claim_attempts(int, double precision, int, int)`.execute(db);
  await sql`create index webhook_deliveries_pending_idx on webhook_deliveries (in_flight_since, next_retry_at) where status = 'pending'`.execute(db);
  // The functions of the per-delivery jobs, as the two migrations before left them.
  await createSlotFunctions(db);
  await successTakesTheOwnersLockFirst(db);
}
