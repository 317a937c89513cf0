import type { ColumnType, Generated, Insertable, Selectable, Updateable } from "kysely";

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
  created_at: Timestamp;
  dispatched_at: NullableTimestamp;
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

export interface Database {
  users: UsersTable;
  api_keys: ApiKeysTable;
  access_tokens: AccessTokensTable;
  siwe_nonces: SiweNoncesTable;
  idempotency_keys: IdempotencyKeysTable;
  outbox_events: OutboxEventsTable;
  chain_deployment: ChainDeploymentTable;
}

export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type ApiKey = Selectable<ApiKeysTable>;
export type AccessToken = Selectable<AccessTokensTable>;
