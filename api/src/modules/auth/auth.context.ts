import type { Role, UserStatus } from "../../db/database.ts";

/** Who is calling: resolved once per request from the bearer credential. */
export interface AuthContext {
  userId: string;
  role: Role;
  status: UserStatus;
  /** The access token's id, or null when the API key itself is the bearer. */
  tokenId: string | null;
  apiKeyId: string | null;
  scopes: readonly string[];
  /** A stable key for per-caller budgets (rate limits, idempotency keys). */
  principal: string;
}
