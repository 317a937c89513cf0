import { type Kysely, sql } from "kysely";

// One lock order for a user's webhook attempts: the owner's advisory lock before any delivery row.
// webhook_succeed_attempt used to record the success (locking that delivery's row) and only then
// take the owner's lock to hand the slot on, while a claim (webhook_take_slot) holds the owner's lock
// when it locks its delivery's row: a claim whose snapshot predates the delivery's start then waits
// for the row the success holds, and the success for the lock the claim holds (a deadlock; the
// victim's success was lost and the delivery sent again once its lease expired). The success now
// takes the owner's lock first; every other holder of a delivery row (a failure being recorded, a
// manual retry) never waits for that lock.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function webhook_succeed_attempt(p_delivery_id text, p_attempts int, p_response_code int, p_response_body text,
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
      perform pg_advisory_xact_lock(hashtextextended('webhook_attempts:' || p_user_id, 0));
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

export async function down(_db: Kysely<any>): Promise<void> {
  // Nothing to undo: the earlier order deadlocks, and 2026_11_23_0007's down drops the function.
}
