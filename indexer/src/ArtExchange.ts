import { ponder } from "ponder:registry";
import { exchangeCancel, exchangeFill } from "ponder:schema";

// The certificate's owner follows the ERC-721 Transfer of the same transaction (ArtCertificate.ts);
// these record which order moved it and how the price was split, once per order hash (the contract
// refuses a second fill or cancel of an order).

ponder.on("ArtExchange:OrderFilled", async ({ event, context }) => {
  const { orderHash, tokenId, listingId, seller, buyer, currency, price, royaltyReceiver, royalty, fee } = event.args;
  await context.db.insert(exchangeFill).values({
    orderHash,
    tokenId,
    listingId,
    seller: lower(seller),
    buyer: lower(buyer),
    currency: lower(currency),
    price,
    royaltyReceiver: lower(royaltyReceiver),
    royalty,
    fee,
    ...logPosition(event),
  });
});

ponder.on("ArtExchange:OrderCancelled", async ({ event, context }) => {
  const { orderHash, canceller } = event.args;
  await context.db.insert(exchangeCancel).values({ orderHash, canceller: lower(canceller), ...logPosition(event) });
});

function logPosition(event: { block: { number: bigint; timestamp: bigint }; transaction: { hash: `0x${string}` }; log: { logIndex: number } }) {
  return { blockNumber: event.block.number, blockTimestamp: event.block.timestamp, txHash: event.transaction.hash, logIndex: event.log.logIndex };
}

function lower(address: `0x${string}`): `0x${string}` {
  return address.toLowerCase() as `0x${string}`;
}
