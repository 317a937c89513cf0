import type { ApiRouter } from "../../http/route.ts";
import * as s from "./withdrawals.schemas.ts";
import type { WithdrawalsService } from "./withdrawals.service.ts";

const tags = ["Withdrawals"];

export function registerWithdrawalsRoutes(api: ApiRouter, withdrawals: WithdrawalsService): void {
  api.route({
    method: "post",
    path: "/v1/withdrawals",
    operationId: "createWithdrawal",
    summary: "Take a certificate, shares or payment token from your custodial wallet to a wallet of your own",
    description: [
      "Moves an asset from the custodial wallet the platform holds for you to `to`, one of your linked wallets (POST /v1/users/me/wallets): the platform signs the transfer for the custodial wallet and relays it, once. 202 `pending`, then `completed` (webhook `asset.withdrawn`).",
      "`asset: certificate` with `artwork_id`: the artwork's certificate, `completed` once the indexer shows the transfer. From then on the wallet holds it, and you keep the owner's rights through it (listing needs that wallet's own approval of the settlement contract). Refused: a certificate your custodial wallet does not hold (403; 409 when your linked wallet holds it already), and 409 `invalid_state` with the `reason` while the artwork is `listed`, `disputed`, fractionalized (`shares_issued`) or being withdrawn (`withdrawing`).",
      "`asset: shares` with `artwork_id` and `quantity`: that many of the artwork's shares (ERC-1155, id = the certificate's token id), in a transaction the custodial wallet signs once and sends itself (the platform gives it the ETH for the gas), `completed` once the indexer shows the transfer. From then on the linked wallet holds them and you remain their shareholder through it. Refused with 409 `invalid_state`, `reason` `insufficient_balance`, above what the custodial wallet holds less what is being withdrawn.",
      "`asset: payment_token` with `amount` (US dollars): that much of the payment token (the proceeds of your sales paid on-chain), by an EIP-3009 transfer authorization the custodial key signs, `completed` once its transaction is mined. Refused with 409 `invalid_state`, `reason` `insufficient_balance`, above the custodial wallet's balance less what is being withdrawn.",
      "Refused for any asset: `to` not one of your linked wallets (400).",
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
