import { index, onchainTable, primaryKey } from "ponder";

// Outside readers (the API) SELECT these tables through the views schema (INDEXER_VIEWS_SCHEMA,
// default "chain"); api/src/chain/indexer-schema.ts mirrors them as Kysely row types, so change
// both together. Amounts, block numbers and timestamps (unix seconds) are numeric(78,0) bigints;
// addresses and hashes are lower-case 0x hex text.

/** One row per ArtCertificate token: the facts of ArtworkCertified plus the current owner. */
export const certificate = onchainTable(
  "certificate",
  (t) => ({
    tokenId: t.bigint().primaryKey(),
    artworkKey: t.hex().notNull(),
    artworkId: t.text().notNull(),
    certificateHash: t.hex().notNull(),
    owner: t.hex().notNull(),
    tokenUri: t.text().notNull(),
    royaltyReceiver: t.hex().notNull(),
    royaltyBps: t.integer().notNull(),
    certifiedAt: t.bigint().notNull(),
    blockNumber: t.bigint().notNull(),
    txHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
    updatedAtBlock: t.bigint().notNull(),
  }),
  (table) => ({
    artworkIdIndex: index().on(table.artworkId),
    ownerIndex: index().on(table.owner),
  }),
);

/** Provenance: one row per ERC-721 Transfer, the mint (from the zero address) included. */
export const certificateTransfer = onchainTable(
  "certificate_transfer",
  (t) => ({
    id: t.text().primaryKey(), // `${txHash}:${logIndex}`
    tokenId: t.bigint().notNull(),
    from: t.hex().notNull(),
    to: t.hex().notNull(),
    blockNumber: t.bigint().notNull(),
    blockTimestamp: t.bigint().notNull(),
    txHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
  }),
  (table) => ({
    tokenIdIndex: index().on(table.tokenId, table.blockNumber, table.logIndex),
  }),
);

/** One row per fractionalized certificate: the fixed cap and what was minted of it so far. */
export const shareClass = onchainTable("share_class", (t) => ({
  tokenId: t.bigint().primaryKey(),
  cap: t.bigint().notNull(),
  minted: t.bigint().notNull(),
  holdersCount: t.integer().notNull(),
  createdAt: t.bigint().notNull(),
  txHash: t.hex().notNull(),
  blockNumber: t.bigint().notNull(),
}));

/** Current holdings; a row exists only while its balance is above zero. */
export const shareBalance = onchainTable(
  "share_balance",
  (t) => ({
    tokenId: t.bigint().notNull(),
    holder: t.hex().notNull(),
    balance: t.bigint().notNull(),
    firstAcquiredAt: t.bigint().notNull(),
    updatedAt: t.bigint().notNull(),
  }),
  (table) => ({
    pk: primaryKey({ columns: [table.tokenId, table.holder] }),
    holderIndex: index().on(table.holder),
  }),
);

/** One row per SharesMinted: the purchase a mint settled. */
export const shareMint = onchainTable(
  "share_mint",
  (t) => ({
    purchaseKey: t.hex().primaryKey(),
    tokenId: t.bigint().notNull(),
    to: t.hex().notNull(),
    amount: t.bigint().notNull(),
    txHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
    blockNumber: t.bigint().notNull(),
    blockTimestamp: t.bigint().notNull(),
  }),
  (table) => ({
    tokenIdIndex: index().on(table.tokenId),
    toIndex: index().on(table.to),
  }),
);

/** One row per ERC-1155 transfer item (a TransferBatch yields one per id), mints included. */
export const shareTransfer = onchainTable(
  "share_transfer",
  (t) => ({
    id: t.text().primaryKey(), // `${txHash}:${logIndex}:${batchIndex}`
    tokenId: t.bigint().notNull(),
    operator: t.hex().notNull(),
    from: t.hex().notNull(),
    to: t.hex().notNull(),
    amount: t.bigint().notNull(),
    blockNumber: t.bigint().notNull(),
    blockTimestamp: t.bigint().notNull(),
    txHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
    batchIndex: t.integer().notNull(),
  }),
  (table) => ({
    tokenIdIndex: index().on(table.tokenId, table.blockNumber, table.logIndex),
    fromIndex: index().on(table.from),
    toIndex: index().on(table.to),
  }),
);

/**
 * Operator approvals of certificates (ERC-721 ApprovalForAll): one row per owner and operator, the
 * current state. `blockNumber`/`txHash` are those of the ApprovalForAll that set `approved` (the last
 * one); `updatedAtBlock` is the same block, the column readers keep cursors on (as in `certificate`).
 */
export const certificateApproval = onchainTable(
  "certificate_approval",
  (t) => ({
    owner: t.hex().notNull(),
    operator: t.hex().notNull(),
    approved: t.boolean().notNull(),
    blockNumber: t.bigint().notNull(),
    txHash: t.hex().notNull(),
    updatedAtBlock: t.bigint().notNull(),
  }),
  (table) => ({
    pk: primaryKey({ columns: [table.owner, table.operator] }),
    operatorIndex: index().on(table.operator),
    updatedAtBlockIndex: index().on(table.updatedAtBlock),
  }),
);

/** One row per ArtMarket SaleSettled: the sale a certificate moved for, and the royalty due (USD cents). */
export const saleSettlement = onchainTable(
  "sale_settlement",
  (t) => ({
    saleKey: t.hex().primaryKey(), // keccak256(bytes(saleId))
    saleId: t.text().notNull(),
    tokenId: t.bigint().notNull(),
    from: t.hex().notNull(),
    to: t.hex().notNull(),
    priceCents: t.bigint().notNull(),
    royaltyReceiver: t.hex().notNull(),
    royaltyCents: t.bigint().notNull(),
    blockNumber: t.bigint().notNull(),
    blockTimestamp: t.bigint().notNull(),
    txHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
  }),
  (table) => ({
    saleIdIndex: index().on(table.saleId),
    tokenIdIndex: index().on(table.tokenId, table.blockNumber, table.logIndex),
    blockNumberIndex: index().on(table.blockNumber),
  }),
);

/** One row per AuditAnchor LedgerAnchored: a contiguous range of audit-ledger entries and its Merkle root. */
export const ledgerAnchor = onchainTable(
  "ledger_anchor",
  (t) => ({
    anchorIndex: t.bigint().primaryKey(),
    firstSeq: t.bigint().notNull(),
    lastSeq: t.bigint().notNull(),
    merkleRoot: t.hex().notNull(),
    headHash: t.hex().notNull(),
    blockNumber: t.bigint().notNull(),
    blockTimestamp: t.bigint().notNull(),
    txHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
  }),
  (table) => ({
    lastSeqIndex: index().on(table.lastSeq),
    blockNumberIndex: index().on(table.blockNumber),
  }),
);

/**
 * One row per ArtExchange OrderFilled: an order filled on-chain, the certificate moved from seller to
 * buyer, and how its price (base units of `currency`, a 6-decimal stablecoin) was split.
 */
export const exchangeFill = onchainTable(
  "exchange_fill",
  (t) => ({
    orderHash: t.hex().primaryKey(), // the order's EIP-712 digest: fills once
    tokenId: t.bigint().notNull(),
    listingId: t.text().notNull(),
    seller: t.hex().notNull(),
    buyer: t.hex().notNull(),
    currency: t.hex().notNull(),
    price: t.bigint().notNull(),
    royaltyReceiver: t.hex().notNull(),
    royalty: t.bigint().notNull(),
    fee: t.bigint().notNull(),
    blockNumber: t.bigint().notNull(),
    blockTimestamp: t.bigint().notNull(),
    txHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
  }),
  (table) => ({
    blockNumberIndex: index().on(table.blockNumber),
  }),
);

/** One row per ArtExchange OrderCancelled: an order that can no longer fill. */
export const exchangeCancel = onchainTable(
  "exchange_cancel",
  (t) => ({
    orderHash: t.hex().primaryKey(),
    canceller: t.hex().notNull(),
    blockNumber: t.bigint().notNull(),
    blockTimestamp: t.bigint().notNull(),
    txHash: t.hex().notNull(),
    logIndex: t.integer().notNull(),
  }),
  (table) => ({
    blockNumberIndex: index().on(table.blockNumber),
  }),
);
