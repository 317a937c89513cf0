import type { ColumnType, Generated, Kysely, Selectable, Transaction } from "kysely";
import type { ArtworksTables, ArtworksViews } from "../modules/artworks/artworks.tables.ts";
import type { AuthTables } from "../modules/auth/auth.tables.ts";
import type { CommunityTables } from "../modules/community/community.tables.ts";
import type { EventsTables } from "../modules/events/events.tables.ts";
import type { FractionalTables } from "../modules/fractional/fractional.tables.ts";
import type { LedgerTables } from "../modules/ledger/ledger.tables.ts";
import type { MarketplaceTables } from "../modules/marketplace/marketplace.tables.ts";
import type { PaymentsTables } from "../modules/payments/payments.tables.ts";
import type { RewardsTables, RewardsViews } from "../modules/rewards/rewards.tables.ts";
import type { UsersTables, UsersViews } from "../modules/users/users.tables.ts";
import type { WithdrawalsTables } from "../modules/withdrawals/withdrawals.tables.ts";
import type { WebhooksTables } from "../modules/webhooks/webhooks.tables.ts";
import type { NullableTimestamp, Timestamp } from "./columns.ts";

/**
 * The database: the shared tables below (requests, outbox, chain) and each module's own, declared
 * in its `<feature>.tables.ts`. A new module adds its tables type to the list, nothing else; the
 * views a module publishes for the others to read (`<Feature>Views`) are listed too.
 */
export interface Database extends SharedTables, UsersTables, UsersViews, AuthTables, ArtworksTables, ArtworksViews, WebhooksTables, LedgerTables, PaymentsTables, MarketplaceTables, FractionalTables, CommunityTables, EventsTables, RewardsTables, RewardsViews, WithdrawalsTables {}

/** What repositories take first: the pool, or the transaction a service opened. */
export type Db = Kysely<Database> | Transaction<Database>;

interface SharedTables {
  idempotency_keys: IdempotencyKeysTable;
  outbox_events: OutboxEventsTable;
  chain_deployment: ChainDeploymentTable;
  chain_operations: ChainOperationsTable;
  chain_cursors: ChainCursorsTable;
}

export interface IdempotencyKeysTable {
  principal: string;
  key: string;
  request_hash: string;
  method: string;
  path: string;
  state: "in_progress" | "completed";
  response_status: number | null;
  response_body: unknown;
  created_at: Timestamp;
  locked_at: Timestamp;
  /** The presence id (db/presence.ts) of the process running the request while in progress; null when it has none. */
  holder: number | null;
  completed_at: NullableTimestamp;
}

export interface OutboxEventsTable {
  id: string;
  event_type: string;
  payload: unknown;
  /** The ids of the users the event concerns: only their subscriptions (and admins' all-users ones) get it. */
  audience: string[];
  created_at: Timestamp;
  dispatched_at: NullableTimestamp;
  /** Dispatches that failed (a subscriber threw); the event waits until `dispatch_after` before the next. */
  dispatch_attempts: Generated<number>;
  dispatch_after: NullableTimestamp;
  dispatch_error: string | null;
}

export interface ChainDeploymentTable {
  id: Generated<number>;
  chain_id: number;
  genesis_hash: string;
  art_certificate_address: string | null;
  art_shares_address: string | null;
  art_market_address: string | null;
  audit_anchor_address: string | null;
  /** Null: no exchange on this chain yet (a deployment recorded before it, or none configured). */
  art_exchange_address: string | null;
  payment_token_address: string | null;
  start_block: ColumnType<bigint, bigint | number, bigint | number>;
  recorded_at: Timestamp;
}

export type ChainOperationStatus = "pending" | "sent" | "confirmed" | "failed";

/** A chain write as a durable operation (api/src/chain/operations.ts). */
export interface ChainOperationsTable {
  id: Generated<bigint>;
  /** The business key: `certify:<artwork_id>`, `mint_shares:<purchase_id>`, ... */
  key: string;
  kind: string;
  /** jsonb: what to send; written as JSON text. */
  payload: ColumnType<Record<string, unknown>, string, string>;
  status: ChainOperationStatus;
  tx_hash: string | null;
  attempts: Generated<number>;
  /** While an attempt runs: until when it may before the sweep takes it for lost. */
  lease_until: NullableTimestamp;
  /** The presence id (db/presence.ts) of the process whose attempt or sweep holds the lease; null for none. */
  holder: ColumnType<number | null, number | null | undefined, number | null>;
  /** While waiting for its next attempt: when it may start (now, or when a backoff ends); null while one runs or once settled. */
  due_at: NullableTimestamp;
  /** Lower first among due operations. */
  priority: Generated<number>;
  last_error: string | null;
  /** jsonb: the confirmed facts, as the kind returned them. */
  result: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  confirmed_from: "indexer" | "chain" | null;
  confirmed_at: NullableTimestamp;
  indexed_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The last indexed block a consumer (an operation kind, a projection) has read. */
export interface ChainCursorsTable {
  consumer: string;
  block_number: ColumnType<bigint, bigint | string, bigint | string>;
  updated_at: Timestamp;
  /** A projection's: since when it fails to record the facts past its block, and why (null when it does not). */
  failing_since: NullableTimestamp;
  last_error: string | null;
}

export type ChainOperation = Selectable<ChainOperationsTable>;
