import type { Actor } from "../../lib/actor.ts";

/** What the community's routes share: their tag, scopes, the text rules every text field follows. */
export const tags = ["Community"];
export const write = { scope: "community:write" } as const;
export const admin = { scope: "admin:write", roles: ["admin"] } as const;
/** What a service is told of the caller: the credential's user and role, nothing else of it. */
export const actorOf = (auth: Actor): Actor => ({ userId: auth.userId, role: auth.role });
export const TEXT_RULES = "Text is stored exactly as given and is never rendered as HTML by the API; control characters other than newline and tab are refused (400).";
