import type { Request } from "express";
import type { AuthContext, Role } from "../lib/actor.ts";
import { ApiError } from "../lib/errors.ts";
import { type Scope, scopeCovers } from "../lib/scopes.ts";

/** The request's bearer credential (an access token or an API key, on every route alike); null when none was sent. */
export type Authenticator = (req: Request) => Promise<AuthContext | null>;

export type RouteAuth =
  /** Anyone; a bearer, if sent, must still be valid (docs/decisions.md#public-endpoints). */
  | { public: true }
  /** A bearer holding `scope` (fine or coarse); `null`: any valid bearer (a token revoking itself). */
  | { scope: Scope | null; roles?: readonly Role[] };

/** A bearer route's rule: a credential holding its scope and, when it names roles, one of them. */
export function authorize(rule: RouteAuth, auth: AuthContext | null): void {
  if ("public" in rule) return;
  if (!auth) throw ApiError.unauthenticated();
  if (rule.scope !== null && !scopeCovers(auth.scopes, rule.scope)) {
    throw new ApiError(403, "insufficient_scope", `This endpoint requires the ${rule.scope} scope`, {
      required_scope: rule.scope,
    });
  }
  if (rule.roles && !rule.roles.includes(auth.role)) {
    throw ApiError.forbidden(`This endpoint is limited to the role${rule.roles.length > 1 ? "s" : ""} ${rule.roles.join(", ")}`);
  }
}
