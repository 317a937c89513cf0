import { paginationQuery, paginationSchema } from "../../lib/pagination.ts";
import { idOf, idParam, plainString, timestamp } from "../../lib/schema.ts";
import { z } from "../../openapi/zod.ts";
import { TEST_CARDS } from "./sandbox.processor.ts";

const paymentMethodId = idOf("paymentMethod");
export const paymentMethodIdParams = z.object({ id: idParam("paymentMethod") });

export const TEST_CARD_LIST = Object.keys(TEST_CARDS)
  .map((id) => `\`${id}\``)
  .join(", ");

export const paymentMethodCreateSchema = z
  .strictObject({
    token: plainString({ min: 1, max: 255 }).openapi({
      example: "pm_card_visa",
      description: `The processor's token of the card: with the sandbox processor, a test card id (${TEST_CARD_LIST}); with Stripe, the \`pm_…\` that Stripe.js created. Never a card number.`,
    }),
  })
  .openapi("PaymentMethodCreate", { example: { token: "pm_card_visa" } });

export const cardSchema = z
  .object({
    brand: z.string().openapi({ example: "visa", description: "visa, mastercard, ..." }),
    last4: z.string().openapi({ example: "4242" }),
    exp_month: z.number().int().openapi({ example: 12 }),
    exp_year: z.number().int().openapi({ example: 2029 }),
  })
  .openapi("Card");

export const paymentMethodSchema = z
  .object({
    id: paymentMethodId,
    type: z.literal("card"),
    card: cardSchema,
    created_at: timestamp,
  })
  .openapi("PaymentMethod");

export const paymentMethodListQuery = z.object({ ...paginationQuery() });
export const paymentMethodListSchema = z.object({ data: z.array(paymentMethodSchema), pagination: paginationSchema }).openapi("PaymentMethodList");

export const paymentMethodDeletedSchema = z.object({ id: paymentMethodId, deleted: z.literal(true) }).openapi("PaymentMethodDeleted");
