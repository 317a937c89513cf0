import { ponder } from "ponder:registry";
import { saleSettlement } from "ponder:schema";

// The certificate's owner follows the ERC-721 Transfer of the same transaction (ArtCertificate.ts);
// this records which sale moved it, once per sale key (the contract refuses a second settlement).

ponder.on("ArtMarket:SaleSettled", async ({ event, context }) => {
  const { saleKey, tokenId, saleId, from, to, priceCents, royaltyReceiver, royaltyCents } = event.args;
  await context.db.insert(saleSettlement).values({
    saleKey,
    saleId,
    tokenId,
    from: lower(from),
    to: lower(to),
    priceCents,
    royaltyReceiver: lower(royaltyReceiver),
    royaltyCents,
    blockNumber: event.block.number,
    blockTimestamp: event.block.timestamp,
    txHash: event.transaction.hash,
    logIndex: event.log.logIndex,
  });
});

function lower(address: `0x${string}`): `0x${string}` {
  return address.toLowerCase() as `0x${string}`;
}
