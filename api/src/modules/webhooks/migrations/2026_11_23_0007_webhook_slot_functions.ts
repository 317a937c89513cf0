import { type Kysely, sql } from "kysely";

// Taking a slot of a user's in-flight caps in one round trip
// (docs/contributors/architecture.md#events-and-webhook-deliveries). Each function takes the
// owner's advisory lock and then counts: a volatile PL/pgSQL function reads with a snapshot taken
// after the lock, which a single SQL statement cannot (its snapshot predates the lock). The lock is
// held until the calling statement's transaction commits, so the caps hold across processes.
export async function up(db: Kysely<any>): Promise<void> {
  // Live attempts of a user (all its subscriptions), or of one subscription.
  await sql`
    create function webhook_user_in_flight(p_user_id text, p_since timestamptz) returns bigint
    language sql stable as $$
      select count(*) from webhook_deliveries f join webhook_subscriptions fs on fs.id = f.subscription_id
      where fs.user_id = p_user_id and f.status = 'pending' and f.in_flight_since >= p_since
    $$`.execute(db);
  await sql`
    create function webhook_subscription_in_flight(p_subscription_id text, p_since timestamptz) returns bigint
    language sql stable as $$
      select count(*) from webhook_deliveries f
      where f.subscription_id = p_subscription_id and f.status = 'pending' and f.in_flight_since >= p_since
    $$`.execute(db);

  // Whether an attempt of this subscription may start now; true leaves the owner's lock held, so the
  // statement that calls it (the claim's UPDATE) starts the attempt before another claim counts.
  await sql`
    create function webhook_take_slot(p_user_id text, p_subscription_id text, p_lease_seconds double precision, p_per_user int, p_per_subscription int)
    returns boolean language plpgsql volatile as $$
    declare
      since constant timestamptz := now() - make_interval(secs => p_lease_seconds);
    begin
      -- Most claims of a user with a backlog find it at a cap: they wait without the lock (a slot
      -- freed meanwhile is handed to them by the attempt that freed it).
      if webhook_user_in_flight(p_user_id, since) >= p_per_user
        or webhook_subscription_in_flight(p_subscription_id, since) >= p_per_subscription then
        return false;
      end if;
      perform pg_advisory_xact_lock(hashtextextended('webhook_attempts:' || p_user_id, 0));
      return webhook_user_in_flight(p_user_id, since) < p_per_user
        and webhook_subscription_in_flight(p_subscription_id, since) < p_per_subscription;
    end $$`.execute(db);

  // Starts attempts of a user's due deliveries waiting for a slot, oldest first, as many as the user's
  // and each subscription's free slots allow; answers them in that order with what each sends (read
  // here: the calling statement's snapshot may predate a delivery this function starts).
  await sql`
    create function webhook_start_waiting(p_user_id text, p_lease_seconds double precision, p_per_user int, p_per_subscription int)
    returns table (
      id text, attempts int, subscription_id text, user_id text, url text, secret text, previous_secret text,
      previous_secret_expires_at timestamptz, failing_since timestamptz, event_id text, event_type text, payload jsonb,
      event_created_at timestamptz
    ) language plpgsql volatile as $$
    #variable_conflict use_column
    declare
      since constant timestamptz := now() - make_interval(secs => p_lease_seconds);
      free bigint;
    begin
      -- Most attempts that end find nothing waiting: no lock then (webhook_deliveries_waiting_idx).
      if not exists (
        select from webhook_subscriptions s join webhook_deliveries d on d.subscription_id = s.id
        where s.user_id = p_user_id and s.status = 'active'
          and d.status = 'pending' and d.in_flight_since is null and d.next_retry_at <= now()
      ) then
        return;
      end if;
      perform pg_advisory_xact_lock(hashtextextended('webhook_attempts:' || p_user_id, 0));
      free := p_per_user - webhook_user_in_flight(p_user_id, since);
      if free <= 0 then
        return;
      end if;
      return query
        with waiting as (
          -- Per subscription, only the oldest few can start (its free slots): the lateral join reads no more.
          select w.id, w.next_retry_at
          from webhook_subscriptions s
          cross join lateral (
            select d.id, d.next_retry_at from webhook_deliveries d
            where d.subscription_id = s.id and d.status = 'pending' and d.in_flight_since is null and d.next_retry_at <= now()
            order by d.next_retry_at, d.id
            limit greatest(p_per_subscription - webhook_subscription_in_flight(s.id, since), 0)
          ) w
          where s.user_id = p_user_id and s.status = 'active'
          order by w.next_retry_at, w.id
          limit free
        ), started as (
          update webhook_deliveries d
          set attempts = d.attempts + 1, in_flight_since = now(), last_attempt_at = now(), next_retry_at = null, updated_at = now()
          from waiting w
          where d.id = w.id and d.status = 'pending' and d.in_flight_since is null
          returning d.id, d.attempts, d.subscription_id, d.event_id, w.next_retry_at
        )
        select st.id, st.attempts, st.subscription_id, s.user_id, s.url, s.secret, s.previous_secret,
          s.previous_secret_expires_at, s.failing_since, st.event_id, e.event_type, e.payload, e.created_at
        from started st
        join webhook_subscriptions s on s.id = st.subscription_id
        join outbox_events e on e.id = st.event_id
        order by st.next_retry_at, st.id;
    end $$`.execute(db);

  // The end of a successful attempt in one round trip: records it (if it is still the delivery's live
  // attempt), marks the subscription healthy, then hands the freed slot on (webhook_start_waiting,
  // whose statements see this update).
  await sql`
    create function webhook_succeed_attempt(p_delivery_id text, p_attempts int, p_response_code int, p_response_body text,
      p_user_id text, p_lease_seconds double precision, p_per_user int, p_per_subscription int)
    returns table (
      id text, attempts int, subscription_id text, user_id text, url text, secret text, previous_secret text,
      previous_secret_expires_at timestamptz, failing_since timestamptz, event_id text, event_type text, payload jsonb,
      event_created_at timestamptz
    ) language plpgsql volatile as $$
    #variable_conflict use_column
    declare
      finished_subscription_id text;
    begin
      update webhook_deliveries d
      set status = 'succeeded', in_flight_since = null, next_retry_at = null, last_error = null,
        last_response_code = p_response_code, last_response_body = p_response_body, updated_at = now()
      where d.id = p_delivery_id and d.attempts = p_attempts and d.status = 'pending'
      returning d.subscription_id into finished_subscription_id;
      if finished_subscription_id is not null then
        update webhook_subscriptions s set failing_since = null where s.id = finished_subscription_id and s.failing_since is not null;
      end if;
      return query select * from webhook_start_waiting(p_user_id, p_lease_seconds, p_per_user, p_per_subscription);
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists webhook_succeed_attempt(text, int, int, text, text, double precision, int, int)`.execute(db);
  await sql`drop function if exists webhook_start_waiting(text, double precision, int, int)`.execute(db);
  await sql`drop function if exists webhook_take_slot(text, text, double precision, int, int)`.execute(db);
  await sql`drop function if exists webhook_subscription_in_flight(text, timestamptz)`.execute(db);
  await sql`drop function if exists webhook_user_in_flight(text, timestamptz)`.execute(db);
}
