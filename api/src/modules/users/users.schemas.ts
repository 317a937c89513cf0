import { z } from "../../openapi/zod.ts";
import { TIER_NAMES } from "../../lib/tiers.ts";
import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { clean, httpUrl, idOf, idParam, text, timestamp } from "../../lib/schema.ts";

export const ROLES = ["collector", "artist", "admin"] as const;
export const STATUSES = ["active", "suspended"] as const;
export const TIERS = TIER_NAMES;

const userId = idOf("user");

export const userIdParams = z.object({ id: idParam("user") });

export const publicUserSchema = z
  .object({
    id: userId,
    username: z.string(),
    display_name: z.string(),
    role: z.enum(ROLES),
    tier: z.enum(TIERS),
    bio: z.string().nullable(),
    avatar_url: z.string().nullable(),
    location: z.string().nullable(),
    website: z.string().nullable(),
    artworks_count: z.number().int(),
    followers_count: z.number().int(),
  })
  .openapi("PublicUser", { description: "A user's public profile: email and wallet never appear here." });

export const ownUserSchema = publicUserSchema
  .extend({
    email: z.string().nullable(),
    status: z.enum(STATUSES),
    wallet_address: z.string().openapi({ example: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" }),
    badges: z.array(z.string()),
    service_points: z.number().int(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi("OwnUser", { description: "The caller's own profile." });

const optionalText = (max: number, multiline = false) => text({ min: 0, max, multiline }).nullable().optional();

export const profilePatchSchema = z
  .strictObject({
    display_name: text({ max: 100 }).optional(),
    bio: optionalText(1000, true),
    location: optionalText(100),
    website: httpUrl({ max: 200, hostname: z.regexes.domain, message: "must be an http(s) URL with a domain name" })
      .nullable()
      .optional(),
  })
  .refine((v) => Object.keys(v).length > 0, { message: "send at least one of display_name, bio, location, website" })
  .openapi("ProfileUpdate", { minProperties: 1,
    example: { display_name: "Ada Brush", bio: "Oil landscapes of northern harbours.", location: "Hamburg", website: "https://ada.example.com" },
  });

export const profilePatchResponseSchema = z
  .object({
    id: userId,
    display_name: z.string().optional(),
    bio: z.string().nullable().optional(),
    location: z.string().nullable().optional(),
    website: z.string().nullable().optional(),
    updated_at: timestamp,
  })
  .openapi("ProfileUpdateResult");

export const adminUserSchema = z
  .object({
    id: userId,
    username: z.string(),
    display_name: z.string(),
    email: z.string().nullable(),
    role: z.enum(ROLES),
    tier: z.enum(TIERS),
    status: z.enum(STATUSES),
    wallet_address: z.string(),
    joined_at: timestamp,
    last_login: timestamp.nullable(),
  })
  .openapi("AdminUser");

export const adminUsersQuery = z.object({
  q: text({ max: 100 }).optional().openapi({ description: "Matches username, email or display name" }),
  role: z.enum(ROLES).optional(),
  tier: z.enum(TIERS).optional(),
  status: z.enum(STATUSES).optional(),
  ...paginationQuery(50, 200),
});

export const adminUsersListSchema = z
  .object({ data: z.array(adminUserSchema), pagination: paginationSchema })
  .openapi("AdminUserList");

export const adminUserPatchSchema = z
  .strictObject({ role: z.enum(ROLES).optional(), status: z.enum(STATUSES).optional() })
  .refine((v) => v.role !== undefined || v.status !== undefined, { message: "send role and/or status" })
  .openapi("AdminUserUpdate", { minProperties: 1, example: { role: "artist", status: "active" } });

export const username = z
  .string()
  .min(3)
  .max(32)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "letters, digits, _ . - (starting with a letter or digit)");

export const adminUserCreateSchema = z
  .strictObject({
    username,
    email: clean(z.email().max(254)),
    role: z.enum(ROLES).default("collector"),
    display_name: text({ max: 100 }).optional(),
  })
  .openapi("AdminUserCreate", { example: { username: "ada", email: "ada@example.com", role: "artist", display_name: "Ada Brush" } });

export const adminUserCreatedSchema = adminUserSchema
  .extend({
    api_key: z.object({ id: z.string(), secret: z.string().openapi({ description: "Shown once; store it now." }) }),
  })
  .openapi("AdminUserCreated");
