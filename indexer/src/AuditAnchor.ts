import { ponder } from "ponder:registry";
import { ledgerAnchor } from "ponder:schema";

ponder.on("AuditAnchor:LedgerAnchored", async ({ event, context }) => {
  const { anchorIndex, firstSeq, lastSeq, merkleRoot, headHash } = event.args;
  await context.db.insert(ledgerAnchor).values({
    anchorIndex,
    firstSeq,
    lastSeq,
    merkleRoot,
    headHash,
    blockNumber: event.block.number,
    blockTimestamp: event.block.timestamp,
    txHash: event.transaction.hash,
    logIndex: event.log.logIndex,
  });
});
