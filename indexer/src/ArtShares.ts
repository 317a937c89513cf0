import { type Context, type Event, ponder } from "ponder:registry";
import { shareBalance, shareClass, shareMint, shareTransfer } from "ponder:schema";
import { zeroAddress } from "viem";

// Balances, holders and the minted total move only with the ERC-1155 transfer events (a mint is a
// transfer from the zero address); SharesMinted only records which purchase a mint settled, so a
// mint is never counted twice. Everything goes through Ponder's db API, so a reorg rolls it back.

ponder.on("ArtShares:ShareClassCreated", async ({ event, context }) => {
  await context.db.insert(shareClass).values({
    tokenId: event.args.tokenId,
    cap: event.args.cap,
    minted: 0n,
    holdersCount: 0,
    createdAt: event.block.timestamp,
    txHash: event.transaction.hash,
    blockNumber: event.block.number,
  });
});

ponder.on("ArtShares:SharesMinted", async ({ event, context }) => {
  await context.db.insert(shareMint).values({
    purchaseKey: event.args.purchaseKey,
    tokenId: event.args.tokenId,
    to: lower(event.args.to),
    amount: event.args.amount,
    txHash: event.transaction.hash,
    logIndex: event.log.logIndex,
    blockNumber: event.block.number,
    blockTimestamp: event.block.timestamp,
  });
});

ponder.on("ArtShares:TransferSingle", async ({ event, context }) => {
  const { operator, from, to, id, value } = event.args;
  await applyTransfer(context, event, { operator, from, to, tokenId: id, amount: value, batchIndex: 0 });
});

ponder.on("ArtShares:TransferBatch", async ({ event, context }) => {
  const { operator, from, to, ids, values } = event.args;
  for (const [batchIndex, tokenId] of ids.entries()) {
    await applyTransfer(context, event, { operator, from, to, tokenId, amount: values[batchIndex]!, batchIndex });
  }
});

type ShareEvent = Event<"ArtShares:TransferSingle"> | Event<"ArtShares:TransferBatch">;

interface TransferItem {
  operator: `0x${string}`;
  from: `0x${string}`;
  to: `0x${string}`;
  tokenId: bigint;
  amount: bigint;
  batchIndex: number;
}

async function applyTransfer(context: Context, event: ShareEvent, item: TransferItem): Promise<void> {
  const from = lower(item.from);
  const to = lower(item.to);
  const { tokenId, amount } = item;
  const at = event.block.timestamp;

  await context.db.insert(shareTransfer).values({
    id: `${event.transaction.hash}:${event.log.logIndex}:${item.batchIndex}`,
    tokenId,
    operator: lower(item.operator),
    from,
    to,
    amount,
    blockNumber: event.block.number,
    blockTimestamp: at,
    txHash: event.transaction.hash,
    logIndex: event.log.logIndex,
    batchIndex: item.batchIndex,
  });
  if (amount === 0n || from === to) return;

  let holdersDelta = 0;
  let mintedDelta = 0n;
  if (from === zeroAddress) {
    mintedDelta = amount;
  } else {
    const sender = await context.db.find(shareBalance, { tokenId, holder: from });
    const remaining = (sender?.balance ?? 0n) - amount;
    if (remaining > 0n) {
      await context.db.update(shareBalance, { tokenId, holder: from }).set({ balance: remaining, updatedAt: at });
    } else if (sender) {
      await context.db.delete(shareBalance, { tokenId, holder: from });
      holdersDelta -= 1;
    }
  }
  if (to !== zeroAddress) {
    const receiver = await context.db.find(shareBalance, { tokenId, holder: to });
    if (receiver) {
      await context.db
        .update(shareBalance, { tokenId, holder: to })
        .set({ balance: receiver.balance + amount, updatedAt: at });
    } else {
      await context.db
        .insert(shareBalance)
        .values({ tokenId, holder: to, balance: amount, firstAcquiredAt: at, updatedAt: at });
      holdersDelta += 1;
    }
  }

  if (holdersDelta === 0 && mintedDelta === 0n) return;
  if (!(await context.db.find(shareClass, { tokenId }))) return; // the contract mints only into a class
  await context.db.update(shareClass, { tokenId }).set((row) => ({
    minted: row.minted + mintedDelta,
    holdersCount: row.holdersCount + holdersDelta,
  }));
}

function lower(address: `0x${string}`): `0x${string}` {
  return address.toLowerCase() as `0x${string}`;
}
