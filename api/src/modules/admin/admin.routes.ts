import type { ApiRouter } from "../../http/route.ts";
import * as s from "../users/users.schemas.ts";
import type { UsersService } from "../users/users.service.ts";
import type { AdminService } from "./admin.service.ts";

export function registerAdminRoutes(api: ApiRouter, admin: AdminService, users: UsersService): void {
  api.route({
    method: "get",
    path: "/v1/admin/users",
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
    method: "post",
    path: "/v1/admin/users",
    summary: "Create a user with a custodial wallet and a first API key",
    tags: ["Admin"],
    auth: { scope: "admin:write", roles: ["admin"] },
    body: s.adminUserCreateSchema,
    status: 201,
    response: s.adminUserCreatedSchema,
    handler: ({ body, transaction }) => admin.createUser(body, transaction),
  });

  api.route({
    method: "patch",
    path: "/v1/admin/users/:id",
    summary: "Change a user's role or status",
    description: "A suspended user's tokens and API keys stop working at once.",
    tags: ["Admin"],
    auth: { scope: "admin:write", roles: ["admin"] },
    params: s.userIdParams,
    body: s.adminUserPatchSchema,
    errors: [404],
    response: s.adminUserSchema,
    handler: ({ auth, params, body }) => users.adminUpdate(auth.userId, params.id, body),
  });
}
