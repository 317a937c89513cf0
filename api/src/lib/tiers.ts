/** The reward tiers by lifetime points (docs/decisions.md#tiers), lowest first: users show them, rewards set them. */
export const TIER_NAMES = ["bronze", "silver", "gold", "platinum"] as const;
export type Tier = (typeof TIER_NAMES)[number];
