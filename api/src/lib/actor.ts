/** A user's role (docs/decisions.md#roles): what the platform lets them do beyond their own things. */
export type Role = "collector" | "artist" | "admin";
export type UserStatus = "active" | "suspended";

/** The caller, as the modules' rules need it (services never see the HTTP request). */
export interface Actor {
  userId: string;
  role: Role;
}

/** Who is calling: resolved once per request from the bearer credential. */
export interface AuthContext extends Actor {
  status: UserStatus;
  /** The access token's id, or null when the API key itself is the bearer. */
  tokenId: string | null;
  apiKeyId: string | null;
  scopes: readonly string[];
  /** `user:<id>`: rate limits and idempotency keys are per user, shared by all its tokens and keys. */
  principal: string;
}
