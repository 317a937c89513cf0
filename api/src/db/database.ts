import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction, Updateable } from "kysely";

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export type Role = "collector" | "artist" | "admin";
export type UserStatus = "active" | "suspended";
export type Tier = "bronze" | "silver" | "gold" | "platinum";

export interface UsersTable {
  id: string;
  username: string;
  display_name: string;
  email: string | null;
  role: Role;
  status: UserStatus;
  tier: Generated<Tier>;
  wallet_address: string;
  wallet_kind: "siwe" | "custodial";
  custody_index: number | null;
  bio: string | null;
  location: string | null;
  website: string | null;
  avatar_url: string | null;
  badges: Generated<string[]>;
  service_points: Generated<number>;
  lifetime_points: Generated<number>;
  artworks_count: Generated<number>;
  followers_count: Generated<number>;
  created_at: Timestamp;
  updated_at: Timestamp;
  last_login_at: NullableTimestamp;
}

export interface ApiKeysTable {
  id: string;
  user_id: string;
  name: string | null;
  secret_hash: string;
  secret_hint: string;
  /** The most a token of this key may hold; null: whatever the user's role allows (keys the platform issues). */
  scopes: string[] | null;
  /** The key whose token made this one: revoking that key revokes this one. */
  parent_api_key_id: string | null;
  created_at: Timestamp;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
}

export interface AccessTokensTable {
  id: string;
  user_id: string;
  api_key_id: string | null;
  token_hash: string;
  scopes: string[];
  created_at: Timestamp;
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
}

export interface SiweNoncesTable {
  nonce: string;
  created_at: Timestamp;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
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
}

export type WebhookSubscriptionStatus = "active" | "disabled";
export type WebhookDeliveryStatus = "pending" | "succeeded" | "failed";

export interface WebhookSubscriptionsTable {
  id: string;
  user_id: string;
  url: string;
  events: string[];
  description: string | null;
  status: WebhookSubscriptionStatus;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: NullableTimestamp;
  failing_since: NullableTimestamp;
  /** An admin's subscription to every user's events, not only its owner's. */
  all_users: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookDeliveriesTable {
  id: string;
  subscription_id: string;
  event_id: string;
  status: WebhookDeliveryStatus;
  attempts: Generated<number>;
  in_flight_since: NullableTimestamp;
  next_retry_at: NullableTimestamp;
  last_attempt_at: NullableTimestamp;
  last_response_code: number | null;
  last_response_body: string | null;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ChainDeploymentTable {
  id: Generated<number>;
  chain_id: number;
  genesis_hash: string;
  art_certificate_address: string | null;
  art_shares_address: string | null;
  start_block: ColumnType<bigint, bigint | number, bigint | number>;
  recorded_at: Timestamp;
}

export type ArtworkStatus = "pending_certification" | "certified" | "certification_failed";
export type DimensionUnit = "mm" | "cm" | "m" | "in" | "ft" | "px";
export interface ArtworkDimensions {
  width: number;
  height: number;
  unit: DimensionUnit;
}

export interface ArtworksTable {
  id: string;
  artist_id: string;
  title: string;
  year: number;
  medium: string;
  /** jsonb: written as JSON text. */
  dimensions: ColumnType<ArtworkDimensions, string, string>;
  description: string | null;
  price_cents: ColumnType<bigint | null, bigint | number | null | undefined, bigint | number | null>;
  for_sale: Generated<boolean>;
  status: ArtworkStatus;
  image_source_url: string | null;
  image_storage_key: string | null;
  image_sha256: string | null;
  image_content_type: string | null;
  image_bytes: number | null;
  certificate_hash: string | null;
  token_id: ColumnType<bigint | null, bigint | null | undefined, bigint | null>;
  certified_at: NullableTimestamp;
  certified_by: string | null;
  certification_tx_hash: string | null;
  certification_requested_at: Timestamp;
  certification_confirmed_at: NullableTimestamp;
  /** When the indexer showed the certificate; null while one confirmed from the chain (the indexer lagging) awaits it. */
  certification_indexed_at: NullableTimestamp;
  certification_attempts: Generated<number>;
  certification_lease_until: NullableTimestamp;
  certification_error: string | null;
  /** Set while a download of image_source_url runs: counts against the artist's cap of downloads in flight. */
  image_fetch_lease_until: NullableTimestamp;
  failed_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface ArtworkProvenanceTable {
  id: Generated<bigint>;
  artwork_id: string;
  event: string;
  actor_id: string | null;
  tx_hash: string | null;
  /** jsonb: written as JSON text. */
  details: ColumnType<Record<string, string> | null, string | null | undefined, string | null>;
  occurred_at: Timestamp;
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
  lease_until: NullableTimestamp;
  last_error: string | null;
  /** jsonb: the confirmed facts, as the kind returned them. */
  result: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  confirmed_from: "indexer" | "chain" | null;
  confirmed_at: NullableTimestamp;
  indexed_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The last indexed block a consumer (an operation kind) has read. */
export interface ChainCursorsTable {
  consumer: string;
  block_number: ColumnType<bigint, bigint | string, bigint | string>;
  updated_at: Timestamp;
}

export interface Database {
  users: UsersTable;
  api_keys: ApiKeysTable;
  access_tokens: AccessTokensTable;
  siwe_nonces: SiweNoncesTable;
  idempotency_keys: IdempotencyKeysTable;
  outbox_events: OutboxEventsTable;
  chain_deployment: ChainDeploymentTable;
  artworks: ArtworksTable;
  artwork_provenance: ArtworkProvenanceTable;
  webhook_subscriptions: WebhookSubscriptionsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  chain_operations: ChainOperationsTable;
  chain_cursors: ChainCursorsTable;
}

export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type ApiKey = Selectable<ApiKeysTable>;
export type AccessToken = Selectable<AccessTokensTable>;
export type WebhookSubscription = Selectable<WebhookSubscriptionsTable>;
export type WebhookDelivery = Selectable<WebhookDeliveriesTable>;
export type Artwork = Selectable<ArtworksTable>;
export type ArtworkProvenance = Selectable<ArtworkProvenanceTable>;
export type ChainOperation = Selectable<ChainOperationsTable>;

/** What repositories take first: the pool, or the transaction a service opened. */
export type Db = Kysely<Database> | Transaction<Database>;
