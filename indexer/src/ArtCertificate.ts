import { ponder } from "ponder:registry";
import { certificate, certificateApproval, certificateTransfer } from "ponder:schema";
import { zeroAddress } from "viem";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";

// `certify` emits Transfer (the mint), MetadataUpdate (the URI) and then ArtworkCertified: the
// certificate row is created by ArtworkCertified, so the events before it only touch it when it
// already exists. Everything goes through Ponder's db API, so a reorg rolls it all back.
//
// A mint's Transfer and the MetadataUpdate right after it (same transaction, same token) have nothing
// to update, as ArtworkCertified carries the owner and the URI: they skip the lookup, which Ponder
// otherwise answers from the database (one query a block for a batch's 40 tokens, each looked up
// twice). `lastMint` only saves that lookup: after a restart it is empty and the lookup decides.
let lastMint: { txHash: string; tokenId: bigint } | null = null;

ponder.on("ArtCertificate:ArtworkCertified", async ({ event, context }) => {
  const { tokenId, artworkKey, owner, artworkId, certificateHash, tokenURI, royaltyReceiver, royaltyBps } =
    event.args;
  await context.db.insert(certificate).values({
    tokenId,
    artworkKey,
    artworkId,
    certificateHash,
    owner: lower(owner),
    tokenUri: tokenURI,
    royaltyReceiver: lower(royaltyReceiver),
    royaltyBps: Number(royaltyBps),
    certifiedAt: event.block.timestamp,
    blockNumber: event.block.number,
    txHash: event.transaction.hash,
    logIndex: event.log.logIndex,
    updatedAtBlock: event.block.number,
  });
});

ponder.on("ArtCertificate:Transfer", async ({ event, context }) => {
  const { from, to, tokenId } = event.args;
  await context.db.insert(certificateTransfer).values({
    id: `${event.transaction.hash}:${event.log.logIndex}`,
    tokenId,
    from: lower(from),
    to: lower(to),
    blockNumber: event.block.number,
    blockTimestamp: event.block.timestamp,
    txHash: event.transaction.hash,
    logIndex: event.log.logIndex,
  });
  if (from === zeroAddress) {
    lastMint = { txHash: event.transaction.hash, tokenId };
    return;
  }
  if (await context.db.find(certificate, { tokenId })) {
    await context.db
      .update(certificate, { tokenId })
      .set({ owner: lower(to), updatedAtBlock: event.block.number });
  }
});

ponder.on("ArtCertificate:MetadataUpdate", async ({ event, context }) => {
  const tokenId = event.args._tokenId;
  const ofMint = lastMint?.txHash === event.transaction.hash && lastMint.tokenId === tokenId;
  lastMint = null;
  if (ofMint || !(await context.db.find(certificate, { tokenId }))) return;
  // EIP-4906 names the token only: read the new URI at this event's block.
  const tokenUri = await context.client.readContract({
    abi: artCertificateAbi,
    address: event.log.address,
    functionName: "tokenURI",
    args: [tokenId],
  });
  await context.db.update(certificate, { tokenId }).set({ tokenUri, updatedAtBlock: event.block.number });
});

// The current operator approval of each (owner, operator): the marketplace needs ArtMarket approved
// before it can settle a sale of the owner's certificates.
ponder.on("ArtCertificate:ApprovalForAll", async ({ event, context }) => {
  const { owner, operator, approved } = event.args;
  const state = { approved, blockNumber: event.block.number, txHash: event.transaction.hash, updatedAtBlock: event.block.number };
  await context.db
    .insert(certificateApproval)
    .values({ owner: lower(owner), operator: lower(operator), ...state })
    .onConflictDoUpdate(state);
});

function lower(address: `0x${string}`): `0x${string}` {
  return address.toLowerCase() as `0x${string}`;
}
