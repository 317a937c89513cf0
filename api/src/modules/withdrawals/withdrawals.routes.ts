import type { ApiRouter } from "../../http/route.ts";
import * as s from "./withdrawals.schemas.ts";
import type { WithdrawalsService } from "./withdrawals.service.ts";

const tags = ["Withdrawals"];

export function registerWithdrawalsRoutes(api: ApiRouter, withdrawals: WithdrawalsService): void {
  api.route({
    method: "post",
    path: "/v1/withdrawals",
    operationId: "createWithdrawal",
    summary: "Take a certificate from your custodial wallet to a wallet of your own",
    description: [
      "Moves the artwork's certificate from the custodial wallet the platform holds for you to `to`, one of your linked wallets (POST /v1/users/me/wallets): the platform signs the transfer for the custodial wallet and relays it, once. 202 `pending`; `completed` once the indexer shows the transfer (webhook `asset.withdrawn`). From then on the wallet holds it, and you keep the owner's rights through it (listing needs that wallet's own approval of the settlement contract).",
      "Refused: `to` not one of your linked wallets (400), a certificate your custodial wallet does not hold (403; 409 when your linked wallet holds it already), and 409 `invalid_state` with the `reason` while the artwork is `listed`, `disputed`, fractionalized (`shares_issued`) or being withdrawn (`withdrawing`).",
    ].join("\n\n"),
    tags,
    auth: { scope: "artworks:write" },
    body: s.withdrawalCreateSchema,
    errors: [403, 409, 503],
    status: 202,
    response: s.withdrawalSchema,
    handler: ({ auth, body, transaction }) => withdrawals.create({ userId: auth.userId, role: auth.role }, body, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/withdrawals",
    operationId: "listWithdrawals",
    summary: "Your withdrawals",
    tags,
    auth: { scope: "artworks:read" },
    query: s.withdrawalListQuery,
    response: s.withdrawalListSchema,
    handler: ({ auth, query }) => withdrawals.list(auth.userId, query),
  });

  api.route({
    method: "get",
    path: "/v1/withdrawals/:id",
    operationId: "getWithdrawal",
    summary: "A withdrawal",
    description: "Yours, or anyone's for an admin; another user's is 404.",
    tags,
    auth: { scope: "artworks:read" },
    params: s.withdrawalIdParams,
    errors: [404],
    response: s.withdrawalSchema,
    handler: ({ auth, params }) => withdrawals.get({ userId: auth.userId, role: auth.role }, params.id),
  });
}
