import { usdAmount, usdValue } from "../../lib/money.ts";
import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { exampleId, idOf, idParam, plainString, timestamp } from "../../lib/schema.ts";
import { z } from "../../openapi/zod.ts";

export const rewardIdParams = z.object({ id: idParam("reward") });
export const listQuery = z.object({ ...paginationQuery() });

const discountUsd = usdAmount.refine((v) => v > 0, { message: "must be greater than 0" });
const rewardFields = {
  name: plainString({ min: 1, max: 120 }),
  points_cost: z.number().int().min(1).max(10_000_000),
  kind: z.enum(["code", "discount"]).openapi({ description: "code: an activation code; discount: taken off an order of the user awaiting payment" }),
  discount_pct: z.number().int().min(1).max(100).optional().openapi({ description: "discount rewards: a percentage of the order's total (one of discount_pct, discount_usd)" }),
  discount_usd: discountUsd.optional().openapi({ description: "discount rewards: an amount, at most the order's total" }),
  stock: z.number().int().min(0).max(10_000_000).nullable().optional().openapi({ description: "How many may be redeemed; omitted or null: unlimited" }),
  active: z.boolean(),
};

export const rewardCreateSchema = z
  .strictObject({ ...rewardFields, active: rewardFields.active.default(true) })
  .superRefine((v, ctx) => {
    const given = [v.discount_pct, v.discount_usd].filter((x) => x !== undefined).length;
    if (v.kind === "code" && given > 0) ctx.addIssue({ code: "custom", path: [v.discount_pct !== undefined ? "discount_pct" : "discount_usd"], message: "a code reward has no discount" });
    if (v.kind === "discount" && given !== 1) ctx.addIssue({ code: "custom", path: ["discount_pct"], message: "a discount reward has exactly one of discount_pct and discount_usd" });
  })
  .openapi("RewardCreate", { example: { name: "10 % off a ticket", points_cost: 500, kind: "discount", discount_pct: 10, stock: 200, active: true } });
export type RewardCreate = z.infer<typeof rewardCreateSchema>;

export const rewardPatchSchema = z
  .strictObject({ name: rewardFields.name.optional(), points_cost: rewardFields.points_cost.optional(), stock: rewardFields.stock, active: rewardFields.active.optional() })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { message: "send at least one field" })
  .openapi("RewardPatch", { minProperties: 1, description: "The kind and discount of a reward never change (make another).", example: { points_cost: 400, stock: null } });
export type RewardPatch = z.infer<typeof rewardPatchSchema>;

export const rewardSchema = z
  .object({
    reward_id: idOf("reward"),
    name: z.string(),
    points_cost: z.number().int(),
    kind: z.enum(["code", "discount"]),
    discount_pct: z.number().int().nullable(),
    discount_usd: usdValue.nullable(),
    stock: z.number().int().nullable().openapi({ description: "null: unlimited" }),
    remaining: z.number().int().nullable().openapi({ description: "Left to redeem; null: unlimited" }),
    active: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .openapi("Reward");
export const rewardListSchema = z.object({ data: z.array(rewardSchema), pagination: paginationSchema }).openapi("RewardList");

export const balanceSchema = z
  .object({
    user_id: idOf("user"),
    service_points: z.number().int().openapi({ description: "Points to spend" }),
    tier: z.enum(["bronze", "silver", "gold", "platinum"]).openapi({ description: "From lifetime_earned: silver 1,000, gold 5,000, platinum 15,000" }),
    tier_threshold_next: z.number().int().nullable().openapi({ description: "Lifetime points of the next tier; null at platinum" }),
    points_to_next_tier: z.number().int().nullable().openapi({ description: "null at platinum" }),
    lifetime_earned: z.number().int(),
  })
  .openapi("RewardsBalance");

export const historySchema = z
  .object({
    data: z.array(
      z.object({
        event_id: idOf("rewardEvent"),
        type: z.enum(["earned", "redeemed", "reversal", "redemption_reversed", "adjustment"]).openapi({
          description: "earned (+), reversal (-: the source stopped standing), redeemed (-), redemption_reversed (+: its order did not go through), adjustment (an opening balance)",
        }),
        points: z.number().int().openapi({ description: "Negative when redeemed or reversed" }),
        reason: z.string(),
        reference_id: z.string().openapi({ description: "What earned them (an artwork, a transaction, an order, a post...) or the redemption" }),
        source: z
          .object({ type: z.string().openapi({ description: "certification, sale, share_purchase, ticket_order, post, challenge_submission, challenge_win, redemption, adjustment" }), id: z.string() })
          .nullable(),
        rule: z.string().nullable().openapi({ description: "The earning rule (GET /v1/rewards/rules) of an earning or its reversal" }),
        created_at: timestamp,
      }),
    ),
    pagination: paginationSchema,
  })
  .openapi("RewardsHistory");

export const rulesSchema = z
  .object({
    data: z.array(
      z.object({
        rule: z.string(),
        source_type: z.string(),
        event: z.string().openapi({ description: "The event that makes the source stand" }),
        who: z.string(),
        points: z.string(),
        reversed_when: z.string(),
      }),
    ),
  })
  .openapi("RewardRules");

export const redeemSchema = z
  .strictObject({
    reward_id: plainString({ min: 1, max: 64 }),
    points_to_spend: z.number().int().min(1).openapi({ description: "Must equal the reward's points_cost" }),
    order_id: plainString({ min: 1, max: 64 }).optional().openapi({ description: "Discount rewards: your order awaiting payment (a ticket order `ord_…` made without a payment method)" }),
  })
  .openapi("RewardRedeem", { example: { reward_id: exampleId("reward"), points_to_spend: 500, order_id: exampleId("order") } });

export const redemptionSchema = z
  .object({
    redemption_id: idOf("redemption"),
    reward_id: idOf("reward"),
    reward: z.string().openapi({ description: "What was redeemed, as display text" }),
    points_spent: z.number().int(),
    remaining_balance: z.number().int(),
    activation_code: z.string().nullable().openapi({ description: "Code rewards: unique, unguessable (XXXX-XXXX-XXXX-XXXX); null for a discount" }),
    order_id: z.string().nullable(),
    discount_usd: usdValue.nullable().openapi({ description: "Discount rewards: what was taken off the order" }),
    redeemed_at: timestamp,
  })
  .openapi("Redemption");
