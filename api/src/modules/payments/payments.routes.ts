import type { ApiRouter } from "../../http/route.ts";
import * as s from "./payments.schemas.ts";
import { MAX_PAYMENT_METHODS_PER_USER, type PaymentsService } from "./payments.service.ts";

const tags = ["Payments"];

// Saved cards are part of the account, used by every feature that takes payments (marketplace,
// fractional, events): the users scopes guard them. Private to their owner, admins included.
const PRIVATE = "Only the owner sees and uses its payment methods: another user's, admins included, is 404 `not_found`.";

export function registerPaymentsRoutes(api: ApiRouter, payments: PaymentsService): void {
  api.route({
    method: "post",
    path: "/v1/payment-methods",
    operationId: "createPaymentMethod",
    summary: "Save a payment method",
    description: [
      `Saves the card behind \`token\` for the caller as \`pm_…\`, usable as \`payment_method_id\` wherever one is asked for. With the built-in sandbox processor the tokens are Stripe's test card ids: ${s.TEST_CARD_LIST}. \`pm_card_visa\` and \`pm_card_mastercard\` succeed, \`pm_card_chargeDeclined\` declines (\`generic_decline\`), \`pm_card_insufficientFunds\` declines (\`insufficient_funds\`), \`pm_card_processingError\` fails transiently every time, \`pm_card_processingError_once\` and \`_twice\` fail the first one or two attempts of each charge and then succeed (the platform retries).`,
      "Test card ids are also accepted directly as `payment_method_id`, without saving them (as in Stripe's test mode).",
      `An unknown token is 400 \`validation_failed\` with \`errors[].code\` \`unknown_token\`; at most ${MAX_PAYMENT_METHODS_PER_USER} methods per user (409 \`conflict\`). Card numbers are never sent to nor stored by the API.`,
      PRIVATE,
    ].join("\n\n"),
    tags,
    auth: { scope: "users:write" },
    body: s.paymentMethodCreateSchema,
    status: 201,
    response: s.paymentMethodSchema,
    handler: ({ auth, body, transaction }) => payments.saveMethod(auth.userId, body.token, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/payment-methods",
    operationId: "listPaymentMethods",
    summary: "List your payment methods",
    description: `Newest first; detached methods are not listed. ${PRIVATE}`,
    tags,
    auth: { scope: "users:read" },
    query: s.paymentMethodListQuery,
    response: s.paymentMethodListSchema,
    handler: ({ auth, query }) => payments.listMethods(auth.userId, query),
  });

  api.route({
    method: "get",
    path: "/v1/payment-methods/:id",
    operationId: "getPaymentMethod",
    summary: "A payment method",
    description: PRIVATE,
    tags,
    auth: { scope: "users:read" },
    params: s.paymentMethodIdParams,
    errors: [404],
    response: s.paymentMethodSchema,
    handler: ({ auth, params }) => payments.getMethod(auth.userId, params.id),
  });

  api.route({
    method: "delete",
    path: "/v1/payment-methods/:id",
    operationId: "detachPaymentMethod",
    summary: "Detach a payment method",
    description: `The method can no longer be seen or charged (404 from then on); charges already made with it stand. ${PRIVATE}`,
    tags,
    auth: { scope: "users:write" },
    params: s.paymentMethodIdParams,
    errors: [404],
    response: s.paymentMethodDeletedSchema,
    handler: ({ auth, params }) => payments.detachMethod(auth.userId, params.id),
  });
}
