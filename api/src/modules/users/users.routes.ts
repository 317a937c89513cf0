import type { ApiRouter } from "../../http/route.ts";
import * as s from "./users.schemas.ts";
import { toOwnView, toPublicView, type UsersService } from "./users.service.ts";

export function registerUsersRoutes(api: ApiRouter, users: UsersService): void {
  api.route({
    method: "get",
    path: "/v1/users/me",
    operationId: "getMe",
    summary: "Your own profile",
    tags: ["Users"],
    auth: { scope: "users:read" },
    response: s.ownUserSchema,
    handler: async ({ auth }) => toOwnView(await users.profile(auth.userId)),
  });

  api.route({
    method: "get",
    path: "/v1/users/:id",
    operationId: "getUser",
    summary: "A user's public profile",
    tags: ["Users"],
    auth: { public: true },
    params: s.userIdParams,
    errors: [404],
    response: s.publicUserSchema,
    handler: async ({ params }) => toPublicView(await users.profile(params.id)),
  });

  api.route({
    method: "patch",
    path: "/v1/users/:id/profile",
    operationId: "updateProfile",
    summary: "Update your profile",
    description: "Only the user may update their own profile (admins included). Empty strings clear bio, location and website.",
    tags: ["Users"],
    auth: { scope: "users:write" },
    params: s.userIdParams,
    body: s.profilePatchSchema,
    errors: [404],
    response: s.profilePatchResponseSchema,
    handler: ({ auth, params, body }) => users.updateProfile(auth.userId, params.id, body),
  });

  api.route({
    method: "get",
    path: "/v1/admin/users",
    operationId: "listUsers",
    summary: "Search users",
    tags: ["Admin"],
    auth: { scope: "admin:read", roles: ["admin"] },
    query: s.adminUsersQuery,
    response: s.adminUsersListSchema,
    handler: ({ query }) => {
      const { page, limit, ...filter } = query;
      return users.adminList(filter, { page, limit });
    },
  });

  api.route({
    method: "patch",
    path: "/v1/admin/users/:id",
    operationId: "updateUser",
    summary: "Change a user's role or status",
    description:
      "A new role revokes, in the same transaction, the user's tokens and API keys holding a scope it may not hold (a demoted admin's `admin` and `admin:*` ones, with the keys made with their tokens); a key without a cap of its own grants the new role's scopes. A suspended user's tokens and API keys are refused at once (403 `account_suspended`) and work again when the user is made active: a suspension revokes nothing. Refused (409 `invalid_state`): an admin suspending or demoting themselves, or the last active admin losing the role.",
    tags: ["Admin"],
    auth: { scope: "admin:write", roles: ["admin"] },
    params: s.userIdParams,
    body: s.adminUserPatchSchema,
    errors: [404, 409],
    response: s.adminUserSchema,
    handler: ({ auth, params, body }) => users.adminUpdate(auth.userId, params.id, body),
  });
}
