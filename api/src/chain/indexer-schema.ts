/**
 * The row types of what the API reads from the Ponder indexer (indexer/ponder.schema.ts); the reads
 * themselves are indexer-views.ts's, the one reader. Self-contained on purpose: no imports from
 * other API modules.
 *
 * Where the rows are: Ponder writes each build into its own schema (`indexer_<hash>`) and, once a
 * build has finished its backfill, points the views of the stable views schema at it
 * (INDEXER_VIEWS_SCHEMA, default "chain"): `chain.certificate`, `chain.share_balance`, ... Read
 * through those views only, and never write them (the row types below refuse inserts/updates).
 * The views appear only after the first build's backfill: before that, a SELECT fails with
 * 42P01 (undefined_table); readIndexerStatus reports `ready: false` then, and the readers throw
 * IndexerNotReadyError.
 *
 * Querying with Kysely, the views schema being a setting (indexer-views.ts; tests do the same):
 *
 *   const views = db.withTables<IndexerViews>().withSchema(config.indexer.viewsSchema);
 *   await views.selectFrom("certificate").selectAll().where("token_id", "=", 1n).executeTakeFirst();
 *
 * Value types: Ponder's bigint columns are `numeric(78,0)`, which node-postgres returns as strings
 * unless a type parser is set for oid 1700 (NUMERIC). The types below say `bigint`: they hold
 * with the parser of api/src/db/connection.ts (integral numerics -> BigInt). Addresses and
 * hashes are lower-case 0x-hex `text`. Timestamps are block timestamps in unix seconds.
 */
import type { ColumnType } from "kysely";

// Type aliases, not interfaces: Kysely's `withTables<T>` wants types with an implicit index signature.

/** A view column: readable, never insertable or updatable. */
type View<T> = ColumnType<T, never, never>;
type Hex = `0x${string}`;

/** One row per certificate token: the facts of ArtworkCertified and the current owner. */
export type CertificateView = {
  token_id: View<bigint>;
  /** keccak256(bytes(artwork_id)). */
  artwork_key: View<Hex>;
  artwork_id: View<string>;
  certificate_hash: View<Hex>;
  /** Current owner: follows every ERC-721 Transfer. */
  owner: View<Hex>;
  /** Current metadata URI: follows EIP-4906 MetadataUpdate. */
  token_uri: View<string>;
  royalty_receiver: View<Hex>;
  royalty_bps: View<number>;
  /** Timestamp of the block that certified it. */
  certified_at: View<bigint>;
  block_number: View<bigint>;
  tx_hash: View<Hex>;
  log_index: View<number>;
  /** Block of the last change (certification, transfer or URI update). */
  updated_at_block: View<bigint>;
};

/** Provenance: one row per ERC-721 Transfer, the mint (from the zero address) included. */
export type CertificateTransferView = {
  /** `${tx_hash}:${log_index}`. */
  id: View<string>;
  token_id: View<bigint>;
  from: View<Hex>;
  to: View<Hex>;
  block_number: View<bigint>;
  block_timestamp: View<bigint>;
  tx_hash: View<Hex>;
  log_index: View<number>;
};

/** One row per fractionalized certificate (share token id = certificate token id). */
export type ShareClassView = {
  token_id: View<bigint>;
  /** The fixed cap. */
  cap: View<bigint>;
  /** Shares minted so far (from ERC-1155 mints; shares_available = cap - minted). */
  minted: View<bigint>;
  /** Addresses with a balance above zero. */
  holders_count: View<number>;
  /** Timestamp of the block that created the class. */
  created_at: View<bigint>;
  tx_hash: View<Hex>;
  block_number: View<bigint>;
};

/** Current holdings; a row exists only while its balance is above zero. */
export type ShareBalanceView = {
  token_id: View<bigint>;
  holder: View<Hex>;
  balance: View<bigint>;
  /** Timestamp of the block from which the holder has held shares without interruption. */
  first_acquired_at: View<bigint>;
  updated_at: View<bigint>;
};

/** One row per SharesMinted: which purchase a mint settled. */
export type ShareMintView = {
  purchase_key: View<Hex>;
  token_id: View<bigint>;
  to: View<Hex>;
  amount: View<bigint>;
  tx_hash: View<Hex>;
  log_index: View<number>;
  block_number: View<bigint>;
  block_timestamp: View<bigint>;
};

/** One row per ERC-1155 transfer item (TransferSingle, or one per id of a TransferBatch), mints included. */
export type ShareTransferView = {
  /** `${tx_hash}:${log_index}:${batch_index}`. */
  id: View<string>;
  token_id: View<bigint>;
  operator: View<Hex>;
  from: View<Hex>;
  to: View<Hex>;
  amount: View<bigint>;
  block_number: View<bigint>;
  block_timestamp: View<bigint>;
  tx_hash: View<Hex>;
  log_index: View<number>;
  batch_index: View<number>;
};

/** Operator approvals of certificates (ERC-721 ApprovalForAll): the current state per owner and operator. */
export type CertificateApprovalView = {
  owner: View<Hex>;
  operator: View<Hex>;
  approved: View<boolean>;
  /** The block and transaction of the ApprovalForAll that set `approved` (the last one). */
  block_number: View<bigint>;
  tx_hash: View<Hex>;
  /** The same block: the column to keep a cursor on, as in `certificate`. */
  updated_at_block: View<bigint>;
};

/** One row per ArtMarket SaleSettled: which sale moved a certificate, and the royalty due on its price. */
export type SaleSettlementView = {
  /** keccak256(bytes(sale_id)). */
  sale_key: View<Hex>;
  /** The API's `txn_…` id, or `return:<dispute id>`. */
  sale_id: View<string>;
  token_id: View<bigint>;
  from: View<Hex>;
  to: View<Hex>;
  /** USD cents. */
  price_cents: View<bigint>;
  /** The certificate's ERC-2981 receiver (the zero address without a royalty). */
  royalty_receiver: View<Hex>;
  /** royaltyInfo(token_id, price_cents), USD cents. */
  royalty_cents: View<bigint>;
  block_number: View<bigint>;
  block_timestamp: View<bigint>;
  tx_hash: View<Hex>;
  log_index: View<number>;
};

/** One row per AuditAnchor LedgerAnchored: audit-ledger entries first_seq..last_seq under one Merkle root. */
export type LedgerAnchorView = {
  /** Sequential from 1. */
  anchor_index: View<bigint>;
  first_seq: View<bigint>;
  last_seq: View<bigint>;
  merkle_root: View<Hex>;
  head_hash: View<Hex>;
  block_number: View<bigint>;
  block_timestamp: View<bigint>;
  tx_hash: View<Hex>;
  log_index: View<number>;
};

/** One row per ArtExchange OrderFilled: an order filled once, what it paid and to whom (amounts in the payment token's base units). */
export type ExchangeFillView = {
  /** The order's EIP-712 digest. */
  order_hash: View<Hex>;
  token_id: View<bigint>;
  /** The API's listing the order was signed for. */
  listing_id: View<string>;
  seller: View<Hex>;
  buyer: View<Hex>;
  currency: View<Hex>;
  price: View<bigint>;
  royalty_receiver: View<Hex>;
  royalty: View<bigint>;
  fee: View<bigint>;
  block_number: View<bigint>;
  block_timestamp: View<bigint>;
  tx_hash: View<Hex>;
  log_index: View<number>;
};

/** One row per ArtExchange OrderCancelled: an order that can no longer fill. */
export type ExchangeCancelView = {
  order_hash: View<Hex>;
  canceller: View<Hex>;
  block_number: View<bigint>;
  block_timestamp: View<bigint>;
  tx_hash: View<Hex>;
  log_index: View<number>;
};

/** Ponder's progress per chain; `latest_checkpoint` encodes the last indexed block (see decodeCheckpointBlock). */
export type PonderCheckpointView = {
  chain_name: View<string>;
  chain_id: View<bigint | string>;
  safe_checkpoint: View<string>;
  latest_checkpoint: View<string>;
  finalized_checkpoint: View<string>;
};

/** Ponder's app metadata; `value.is_ready` is 1 once the backfill is done. */
export type PonderMetaView = {
  key: View<string>;
  value: View<{ is_ready?: number; build_id?: string } & Record<string, unknown>>;
};

/** The views of INDEXER_VIEWS_SCHEMA, keyed by unqualified name (use with `withSchema`). */
export type IndexerViews = {
  certificate: CertificateView;
  certificate_transfer: CertificateTransferView;
  share_class: ShareClassView;
  share_balance: ShareBalanceView;
  share_mint: ShareMintView;
  share_transfer: ShareTransferView;
  certificate_approval: CertificateApprovalView;
  sale_settlement: SaleSettlementView;
  ledger_anchor: LedgerAnchorView;
  exchange_fill: ExchangeFillView;
  exchange_cancel: ExchangeCancelView;
  _ponder_checkpoint: PonderCheckpointView;
  _ponder_meta: PonderMetaView;
};

/** The block number inside a Ponder checkpoint (10 digits timestamp, 16 chain id, 16 block number, ...). */
export function decodeCheckpointBlock(checkpoint: string): bigint {
  return BigInt(checkpoint.slice(26, 42));
}

/** The Postgres channel Ponder NOTIFYs after each indexed block: `LISTEN "<viewsSchema>_live_query"`. */
export function indexerNotifyChannel(viewsSchema: string): string {
  return `${viewsSchema}_live_query`;
}
