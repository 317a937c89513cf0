import { defineModule, migrationsOf } from "../module.ts";
import { registerUsersRoutes } from "./users.routes.ts";
import { UsersService } from "./users.service.ts";

/** Users and their profiles; the admin user endpoints (search, role and status). Tables: users.tables.ts. */
export const usersModule = defineModule({
  name: "users",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, custody }) => ({ users: new UsersService(db, custody) }),
  routes: ({ api }, { users }) => registerUsersRoutes(api, users),
});
