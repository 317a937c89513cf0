import type { Selectable } from "kysely";
import type { NullableTimestamp, Timestamp } from "../../db/columns.ts";

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

export interface AuthTables {
  api_keys: ApiKeysTable;
  access_tokens: AccessTokensTable;
  siwe_nonces: SiweNoncesTable;
}

export type ApiKey = Selectable<ApiKeysTable>;
export type AccessToken = Selectable<AccessTokensTable>;
