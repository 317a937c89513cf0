import type { Role, UserStatus } from "../users/users.tables.ts";

/** Who is calling: resolved once per request from the bearer credential. */
export interface AuthContext {
  userId: string;
  role: Role;
  status: UserStatus;
  /** The access token's id, or null when the API key itself is the bearer. */
  tokenId: string | null;
  apiKeyId: string | null;
  scopes: readonly string[];
  /** `user:<id>`: rate limits and idempotency keys are per user, shared by all its tokens and keys. */
  principal: string;
}
