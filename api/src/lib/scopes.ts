import type { Role } from "./actor.ts";

/** Scope strings are `<resource>:<action>` plus the coarse `read`, `write` and `admin` (docs/decisions.md#scopes). */
export const SCOPE_RESOURCES = [
  "users",
  "artworks",
  "marketplace",
  "fractional",
  "community",
  "events",
  "rewards",
  "webhooks",
  "admin",
] as const;
export type ScopeResource = (typeof SCOPE_RESOURCES)[number];
export type ScopeAction = "read" | "write";
export type FineScope = `${ScopeResource}:${ScopeAction}`;
export type Scope = FineScope | "read" | "write" | "admin";

export const ALL_SCOPES: readonly Scope[] = [
  "read",
  "write",
  "admin",
  ...SCOPE_RESOURCES.flatMap((r) => [`${r}:read`, `${r}:write`] as FineScope[]),
];

export function isScope(value: string): value is Scope {
  return (ALL_SCOPES as readonly string[]).includes(value);
}

/** Whether the granted scopes cover `required`. `write` implies `read`; `admin` covers everything. */
export function scopeSatisfies(granted: readonly string[], required: FineScope): boolean {
  const [resource, action] = required.split(":") as [ScopeResource, ScopeAction];
  return granted.some((g) => {
    if (g === "admin") return true;
    if (resource === "admin") return g === required || (action === "read" && g === "admin:write");
    if (g === "write") return true;
    if (g === "read") return action === "read";
    if (g === `${resource}:write`) return true;
    return g === required;
  });
}

const FINE_SCOPES = ALL_SCOPES.filter((s): s is FineScope => s.includes(":"));

/** The fine scopes a scope stands for: `read` every non-admin `*:read`, `write` every non-admin one, `admin` all. */
function fineScopesOf(scope: Scope): readonly FineScope[] {
  if (scope === "admin") return FINE_SCOPES;
  const nonAdmin = FINE_SCOPES.filter((s) => !s.startsWith("admin:"));
  if (scope === "write") return nonAdmin;
  if (scope === "read") return nonAdmin.filter((s) => s.endsWith(":read"));
  return [scope];
}

/** Whether the granted scopes cover all of `required`, a fine or a coarse scope. */
export function scopeCovers(granted: readonly string[], required: Scope): boolean {
  return fineScopesOf(required).every((fine) => scopeSatisfies(granted, fine));
}

/** Everything a user of `role` may hold: what an API key without a cap of its own grants. */
export function fullScopesOf(role: Role): Scope[] {
  return role === "admin" ? ["admin"] : ["write"];
}

/** Scopes a user of `role` may not ask for. */
export function scopesDeniedForRole(role: Role, requested: readonly Scope[]): Scope[] {
  if (role === "admin") return [];
  return requested.filter((s) => s === "admin" || s.startsWith("admin:"));
}
