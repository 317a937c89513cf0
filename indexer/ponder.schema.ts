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
