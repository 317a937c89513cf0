/**
 * The one reader of the indexer's views (what they hold: indexer-schema.ts). The API reads the chain
 * as Ponder projected it through this file only, so the views schema, the time before Ponder has
 * published it and the rows' shapes are handled in one place; nothing here writes.
 *
 * `IndexedChain` holds a reader per contract's facts: `certificates` (ArtCertificate: tokens,
 * owners, transfers), `shares` (ArtShares: classes, mints, balances), `market` (ArtMarket's
 * settlements, ArtExchange's fills and cancellations, certificate approvals) and `anchors`
 * (AuditAnchor). `readIndexerStatus` says how far the indexer got. A read before the views exist
 * fails with IndexerNotReadyError.
 */
import { type Expression, type Kysely, type RawBuilder, type Selectable, sql } from "kysely";
import type { Hex } from "viem";
import { type Page, paginate } from "../lib/pagination.ts";
import { type CertificateView, decodeCheckpointBlock, type ExchangeFillView, type IndexerViews, type LedgerAnchorView, type SaleSettlementView } from "./indexer-schema.ts";

/** The indexer has not published its views yet (first backfill still running). */
export class IndexerNotReadyError extends Error {
  override name = "IndexerNotReadyError";
}

/** Runs a read of the indexer's views; a missing view or schema (not published yet) is IndexerNotReadyError. */
export async function readViews<T>(query: () => Promise<T>): Promise<T> {
  try {
    return await query();
  } catch (err) {
    if ((err as { code?: string }).code === "42P01" || (err as { code?: string }).code === "3F000") {
      throw new IndexerNotReadyError("the indexer has not published its views yet");
    }
    throw err;
  }
}

function viewsOn(db: Kysely<any>, viewsSchema: string): Kysely<IndexerViews> {
  return db.withTables<IndexerViews>().withSchema(viewsSchema) as unknown as Kysely<IndexerViews>;
}

/** A reader of one views schema; a read given `db` (a move's transaction) runs on it. */
abstract class ViewsReader {
  protected readonly views: Kysely<IndexerViews>;

  constructor(
    db: Kysely<any>,
    protected readonly viewsSchema: string,
  ) {
    this.views = viewsOn(db, viewsSchema);
  }

  protected on(db: Kysely<any> | undefined): Kysely<IndexerViews> {
    return db ? viewsOn(db, this.viewsSchema) : this.views;
  }
}

/** The chain as the indexer projected it, one reader per contract's facts. */
export class IndexedChain {
  readonly certificates: IndexedCertificates;
  readonly shares: IndexedShares;
  readonly market: IndexedMarket;
  readonly anchors: IndexedAnchors;

  constructor(db: Kysely<any>, viewsSchema: string) {
    this.certificates = new IndexedCertificates(db, viewsSchema);
    this.shares = new IndexedShares(db, viewsSchema);
    this.market = new IndexedMarket(db, viewsSchema);
    this.anchors = new IndexedAnchors(db, viewsSchema);
  }
}

// ---- certificates ----

/** A certificate as the indexer projected it from `ArtworkCertified` (and later transfers). */
export interface IndexedCertificate {
  tokenId: bigint;
  artworkKey: Hex;
  artworkId: string;
  certificateHash: Hex;
  /** Current owner (follows transfers), lower-case. */
  owner: Hex;
  tokenUri: string;
  royaltyReceiver: Hex;
  royaltyBps: number;
  /** Timestamp of the certifying block. */
  certifiedAt: Date;
  blockNumber: bigint;
  txHash: Hex;
}

export interface IndexedTransfer {
  tokenId: bigint;
  from: Hex;
  to: Hex;
  blockNumber: bigint;
  at: Date;
  txHash: Hex;
  logIndex: number;
}

/** A transfer as `transfersJson` gives it (bigints as text). */
export interface TransferJson {
  from: Hex;
  to: Hex;
  block_number: string;
  block_timestamp: string;
  tx_hash: Hex;
  log_index: number;
}

/** Certificates: the source of truth for which artwork holds which token, with which hash, owned by whom. */
export class IndexedCertificates extends ViewsReader {
  async byArtworkId(artworkId: string): Promise<IndexedCertificate | undefined> {
    return (await this.byArtworkIds([artworkId]))[0];
  }

  /** One per artwork (the contract mints at most one), lowest token id first. */
  async byArtworkIds(artworkIds: readonly string[]): Promise<IndexedCertificate[]> {
    if (artworkIds.length === 0) return [];
    const rows = await readViews(() => this.views.selectFrom("certificate").selectAll().where("artwork_id", "in", [...artworkIds]).orderBy("token_id").execute());
    return rows.map(toCertificate);
  }

  /** The certificates minted in blocks (fromBlock, toBlock], in chain order. */
  async inBlocks(fromBlock: bigint, toBlock: bigint): Promise<IndexedCertificate[]> {
    const rows = await readViews(() =>
      this.views.selectFrom("certificate").selectAll().where("block_number", ">", fromBlock).where("block_number", "<=", toBlock).orderBy("block_number").orderBy("log_index").execute(),
    );
    return rows.map(toCertificate);
  }

  /** Certificates that left a wallet in blocks (fromBlock, toBlock], by any transfer (sales and fills too), in chain order; mints are not moves. */
  movesInBlocks(fromBlock: bigint, toBlock: bigint): Promise<CertificateMove[]> {
    return certificateMoves(this.views, fromBlock, toBlock, { fills: true });
  }

  async byHash(certificateHash: string): Promise<IndexedCertificate | undefined> {
    const row = await readViews(() =>
      this.views
        .selectFrom("certificate")
        .selectAll()
        .where("certificate_hash", "=", certificateHash.toLowerCase() as Hex)
        .orderBy("token_id")
        .limit(1)
        .executeTakeFirst(),
    );
    return row ? toCertificate(row) : undefined;
  }

  /**
   * The token's transfers as a subquery of a caller's statement (a JSON array, the mint included, in
   * chain order; `transfersFromJson` reads it): a detail page reads them without a round trip of
   * their own. A statement that embeds it fails as a read of the views does before they are published.
   */
  transfersJson(tokenId: Expression<bigint | null>): RawBuilder<TransferJson[]> {
    return sql<TransferJson[]>`(
      select coalesce(json_agg(json_build_object('from', t."from", 'to', t."to", 'block_number', t.block_number::text,
                                                 'block_timestamp', t.block_timestamp::text, 'tx_hash', t.tx_hash, 'log_index', t.log_index)
                               order by t.block_number, t.log_index), '[]'::json)
      from ${sql.table(`${this.viewsSchema}.certificate_transfer`)} t where t.token_id = ${tokenId})`;
  }
}

export function transfersFromJson(tokenId: bigint, rows: TransferJson[]): IndexedTransfer[] {
  return rows.map((r) => ({
    tokenId,
    from: r.from,
    to: r.to,
    blockNumber: BigInt(r.block_number),
    at: new Date(Number(r.block_timestamp) * 1000),
    txHash: r.tx_hash,
    logIndex: r.log_index,
  }));
}

function toCertificate(r: Selectable<CertificateView>): IndexedCertificate {
  return {
    tokenId: r.token_id,
    artworkKey: r.artwork_key,
    artworkId: r.artwork_id,
    certificateHash: r.certificate_hash,
    owner: r.owner,
    tokenUri: r.token_uri,
    royaltyReceiver: r.royalty_receiver,
    royaltyBps: Number(r.royalty_bps),
    certifiedAt: new Date(Number(r.certified_at) * 1000),
    blockNumber: r.block_number,
    txHash: r.tx_hash,
  };
}

// ---- shares ----

/** Share classes (one per fractionalized certificate), their mints and their holders' balances. */
export class IndexedShares extends ViewsReader {
  /** Share classes created in blocks (fromBlock, toBlock]. */
  classesInBlocks(fromBlock: bigint, toBlock: bigint): Promise<{ token_id: bigint; tx_hash: Hex }[]> {
    return readViews(() => this.views.selectFrom("share_class").select(["token_id", "tx_hash"]).where("block_number", ">", fromBlock).where("block_number", "<=", toBlock).execute());
  }

  classesOf(tokenIds: readonly bigint[]): Promise<{ token_id: bigint; tx_hash: Hex }[]> {
    if (tokenIds.length === 0) return Promise.resolve([]);
    return readViews(() => this.views.selectFrom("share_class").select(["token_id", "tx_hash"]).where("token_id", "in", [...tokenIds]).execute());
  }

  /** Share mints in blocks (fromBlock, toBlock]. */
  mintsInBlocks(fromBlock: bigint, toBlock: bigint): Promise<{ purchase_key: Hex; tx_hash: Hex }[]> {
    return readViews(() => this.views.selectFrom("share_mint").select(["purchase_key", "tx_hash"]).where("block_number", ">", fromBlock).where("block_number", "<=", toBlock).execute());
  }

  mintsOf(purchaseKeys: readonly Hex[]): Promise<{ purchase_key: Hex; tx_hash: Hex }[]> {
    if (purchaseKeys.length === 0) return Promise.resolve([]);
    return readViews(() => this.views.selectFrom("share_mint").select(["purchase_key", "tx_hash"]).where("purchase_key", "in", [...purchaseKeys]).execute());
  }

  /** A token's holders with a positive balance, largest first. */
  holders(tokenId: bigint, page: Page) {
    const query = this.views.selectFrom("share_balance").where("token_id", "=", tokenId).where("balance", ">", 0n);
    return readViews(() => paginate(query, page, (q) => q.select(["holder", "balance", "first_acquired_at"]).orderBy("balance", "desc").orderBy("holder")));
  }

  async balanceOf(tokenId: bigint, holder: Hex, db?: Kysely<any>): Promise<bigint | undefined> {
    const row = await readViews(() => this.on(db).selectFrom("share_balance").select("balance").where("token_id", "=", tokenId).where("holder", "=", holder).executeTakeFirst());
    return row?.balance;
  }
}

// ---- the market: ArtMarket settlements, ArtExchange fills and cancellations, certificate approvals ----

/** One settlement of ArtMarket as the chain recorded it (addresses lower-case). */
export interface Settlement {
  saleId: string;
  tokenId: bigint;
  from: string;
  to: string;
  priceCents: bigint;
  royaltyReceiver: string;
  royaltyCents: bigint;
  txHash: string;
  blockNumber: bigint;
  at: Date;
}

/** One fill of an ArtExchange order as the chain recorded it (addresses lower-case, amounts in the token's base units). */
export interface Fill {
  orderHash: string;
  tokenId: bigint;
  listingId: string;
  seller: string;
  buyer: string;
  currency: string;
  price: bigint;
  royaltyReceiver: string;
  royalty: bigint;
  fee: bigint;
  txHash: string;
  blockNumber: bigint;
  at: Date;
}

/** A certificate leaving a wallet (a mint is not one), as the chain recorded it. */
export interface CertificateMove {
  tokenId: bigint;
  artworkId: string;
  from: string;
  to: string;
  txHash: string;
  blockNumber: bigint;
}

/** Certificate transfers in blocks (fromBlock, toBlock] but mints, in chain order; without `fills`, not those of a transaction that filled an ArtExchange order. */
async function certificateMoves(views: Kysely<IndexerViews>, fromBlock: bigint, toBlock: bigint, { fills }: { fills: boolean }): Promise<CertificateMove[]> {
  let query = views
    .selectFrom("certificate_transfer as t")
    .innerJoin("certificate as c", "c.token_id", "t.token_id")
    .select(["t.token_id", "c.artwork_id", "t.from", "t.to", "t.tx_hash", "t.block_number"])
    .where("t.block_number", ">", fromBlock)
    .where("t.block_number", "<=", toBlock)
    .where("t.from", "!=", "0x0000000000000000000000000000000000000000");
  if (!fills) query = query.where(({ not, exists, selectFrom }) => not(exists(selectFrom("exchange_fill as f").select("f.tx_hash").whereRef("f.tx_hash", "=", "t.tx_hash"))));
  const rows = await readViews(() => query.orderBy("t.block_number").orderBy("t.log_index").execute());
  return rows.map((r) => ({ tokenId: BigInt(r.token_id), artworkId: r.artwork_id, from: lower(r.from), to: lower(r.to), txHash: r.tx_hash, blockNumber: BigInt(r.block_number) }));
}

/** What the marketplace settles by. */
export class IndexedMarket extends ViewsReader {
  /**
   * Certificate transfers in blocks (fromBlock, toBlock], in chain order, but mints and those of a
   * transaction that filled an ArtExchange order (a sale: the fills' projection records those).
   */
  movesInBlocks(fromBlock: bigint, toBlock: bigint): Promise<CertificateMove[]> {
    return certificateMoves(this.views, fromBlock, toBlock, { fills: false });
  }

  /** Settlements in blocks (fromBlock, toBlock], in chain order. */
  async inBlocks(fromBlock: bigint, toBlock: bigint): Promise<Settlement[]> {
    const rows = await readViews(() =>
      this.views.selectFrom("sale_settlement").selectAll().where("block_number", ">", fromBlock).where("block_number", "<=", toBlock).orderBy("block_number").orderBy("log_index").execute(),
    );
    return rows.map(toSettlement);
  }

  async bySaleIds(saleIds: readonly string[]): Promise<Settlement[]> {
    if (saleIds.length === 0) return [];
    const rows = await readViews(() => this.views.selectFrom("sale_settlement").selectAll().where("sale_id", "in", [...saleIds]).execute());
    return rows.map(toSettlement);
  }

  /** ArtExchange fills in blocks (fromBlock, toBlock], in chain order. */
  async fillsInBlocks(fromBlock: bigint, toBlock: bigint): Promise<Fill[]> {
    const rows = await readViews(() =>
      this.views.selectFrom("exchange_fill").selectAll().where("block_number", ">", fromBlock).where("block_number", "<=", toBlock).orderBy("block_number").orderBy("log_index").execute(),
    );
    return rows.map(toFill);
  }

  /** ArtExchange cancellations of these orders, or in blocks (fromBlock, toBlock]: their order hashes and transactions. */
  async cancels(where: { orderHashes: readonly string[] } | { blocks: [bigint, bigint] }): Promise<{ orderHash: string; txHash: string }[]> {
    if ("orderHashes" in where && where.orderHashes.length === 0) return [];
    const rows = await readViews(() => {
      const q = this.views.selectFrom("exchange_cancel").select(["order_hash", "tx_hash"]);
      return ("orderHashes" in where
        ? q.where("order_hash", "in", where.orderHashes as Hex[])
        : q.where("block_number", ">", where.blocks[0]).where("block_number", "<=", where.blocks[1])
      ).execute();
    });
    return rows.map((r) => ({ orderHash: r.order_hash, txHash: r.tx_hash }));
  }

  /** Owners that approved `operator` for all their certificates, among `owners` or in blocks (fromBlock, toBlock], as indexed. */
  async approvalsOf(operator: string, where: { owners: readonly string[] } | { blocks: [bigint, bigint] }): Promise<string[]> {
    if ("owners" in where && where.owners.length === 0) return [];
    const rows = await readViews(() => {
      const q = this.views.selectFrom("certificate_approval").select("owner").where("operator", "=", lower(operator)).where("approved", "=", true);
      return ("owners" in where ? q.where("owner", "in", where.owners.map(lower)) : q.where("block_number", ">", where.blocks[0]).where("block_number", "<=", where.blocks[1])).execute();
    });
    return rows.map((r) => r.owner);
  }

  /** Whether `owner` has approved `operator` for all its certificates, as indexed; read on `db` when given (a move's transaction). */
  async isApprovedForAll(owner: string, operator: string, db?: Kysely<any>): Promise<boolean> {
    const row = await readViews(() =>
      this.on(db).selectFrom("certificate_approval").select("approved").where("owner", "=", lower(owner)).where("operator", "=", lower(operator)).executeTakeFirst(),
    );
    return row?.approved === true;
  }
}

function lower(address: string): Hex {
  return address.toLowerCase() as Hex;
}

function toSettlement(r: Selectable<SaleSettlementView>): Settlement {
  return {
    saleId: r.sale_id,
    tokenId: BigInt(r.token_id),
    from: r.from.toLowerCase(),
    to: r.to.toLowerCase(),
    priceCents: BigInt(r.price_cents),
    royaltyReceiver: r.royalty_receiver.toLowerCase(),
    royaltyCents: BigInt(r.royalty_cents),
    txHash: r.tx_hash,
    blockNumber: BigInt(r.block_number),
    at: new Date(Number(r.block_timestamp) * 1000),
  };
}

function toFill(r: Selectable<ExchangeFillView>): Fill {
  return {
    orderHash: r.order_hash.toLowerCase(),
    tokenId: BigInt(r.token_id),
    listingId: r.listing_id,
    seller: r.seller.toLowerCase(),
    buyer: r.buyer.toLowerCase(),
    currency: r.currency.toLowerCase(),
    price: BigInt(r.price),
    royaltyReceiver: r.royalty_receiver.toLowerCase(),
    royalty: BigInt(r.royalty),
    fee: BigInt(r.fee),
    txHash: r.tx_hash,
    blockNumber: BigInt(r.block_number),
    at: new Date(Number(r.block_timestamp) * 1000),
  };
}

// ---- the audit ledger's anchors ----

/** An anchor as the chain holds it (AuditAnchor's LedgerAnchored; hashes lower-case). */
export interface IndexedLedgerAnchor {
  anchorIndex: bigint;
  firstSeq: bigint;
  lastSeq: bigint;
  merkleRoot: string;
  headHash: string;
  txHash: string;
  blockNumber: bigint;
}

export class IndexedAnchors extends ViewsReader {
  /** Anchored in blocks (fromBlock, toBlock], in anchor order. */
  async inBlocks(fromBlock: bigint, toBlock: bigint): Promise<IndexedLedgerAnchor[]> {
    const rows = await readViews(() => this.views.selectFrom("ledger_anchor").selectAll().where("block_number", ">", fromBlock).where("block_number", "<=", toBlock).orderBy("anchor_index").execute());
    return rows.map(toAnchor);
  }

  /** The anchors of the ranges starting at these entries. */
  async byFirstSeqs(firstSeqs: readonly bigint[]): Promise<IndexedLedgerAnchor[]> {
    if (firstSeqs.length === 0) return [];
    const rows = await readViews(() => this.views.selectFrom("ledger_anchor").selectAll().where("first_seq", "in", [...firstSeqs]).execute());
    return rows.map(toAnchor);
  }

  async all(): Promise<IndexedLedgerAnchor[]> {
    return (await readViews(() => this.views.selectFrom("ledger_anchor").selectAll().orderBy("anchor_index").execute())).map(toAnchor);
  }
}

function toAnchor(r: Selectable<LedgerAnchorView>): IndexedLedgerAnchor {
  return {
    anchorIndex: r.anchor_index,
    firstSeq: r.first_seq,
    lastSeq: r.last_seq,
    merkleRoot: r.merkle_root.toLowerCase(),
    headHash: r.head_hash.toLowerCase(),
    txHash: r.tx_hash.toLowerCase(),
    blockNumber: r.block_number,
  };
}

// ---- how far the indexer got ----

export interface IndexerStatus {
  /** The last block the indexer has fully processed; null before its first checkpoint. */
  indexedBlock: bigint | null;
  /** Whether the backfill has finished (Ponder's /ready is 200, and the views exist). */
  ready: boolean;
}

export interface IndexerStatusSource {
  /** Reads `<viewsSchema>._ponder_checkpoint` / `_ponder_meta`: what the API's readers actually see. */
  db?: Kysely<any>;
  viewsSchema?: string;
  /** Ponder's HTTP server (INDEXER_URL): GET /ready and GET /status. */
  url?: string;
  /** Which chain's checkpoint to report; by default the only (first) one. */
  chainId?: number;
  /** For the HTTP requests (default 2000 ms). */
  timeoutMs?: number;
}

/**
 * How far the indexer got. With `db`, reads the views schema (the source of truth for readers:
 * it is what their SELECTs see); with only `url`, asks Ponder over HTTP. With both, the
 * database answers, and HTTP covers the time before the first build publishes its views.
 * Lag in blocks = chain head - indexedBlock. Throws when the chosen source is unreachable.
 */
export async function readIndexerStatus(source: IndexerStatusSource): Promise<IndexerStatus> {
  if (source.db) {
    const fromViews = await readFromViews(source.db, source.viewsSchema ?? "chain", source.chainId);
    if (fromViews || !source.url) return fromViews ?? { indexedBlock: null, ready: false };
  }
  if (source.url) return readFromHttp(source.url, source.chainId, source.timeoutMs ?? 2_000);
  throw new Error("readIndexerStatus needs a db or a url");
}

async function readFromViews(db: Kysely<any>, viewsSchema: string, chainId?: number): Promise<IndexerStatus | null> {
  const views = viewsOn(db, viewsSchema);
  try {
    const [checkpoints, meta] = await Promise.all([
      views.selectFrom("_ponder_checkpoint").select(["chain_id", "latest_checkpoint"]).execute(),
      views.selectFrom("_ponder_meta").select("value").where("key", "=", "app").executeTakeFirst(),
    ]);
    const checkpoint = chainId === undefined ? checkpoints[0] : checkpoints.find((c) => String(c.chain_id) === String(chainId));
    return {
      indexedBlock: checkpoint ? decodeCheckpointBlock(checkpoint.latest_checkpoint) : null,
      ready: meta?.value.is_ready === 1,
    };
  } catch (error) {
    if ((error as { code?: string }).code === "42P01") return null; // no views yet
    throw error;
  }
}

async function readFromHttp(indexerUrl: string, chainId: number | undefined, timeoutMs: number): Promise<IndexerStatus> {
  const base = indexerUrl.replace(/\/$/, "");
  const [ready, status] = await Promise.all([fetch(`${base}/ready`, { signal: AbortSignal.timeout(timeoutMs) }), fetch(`${base}/status`, { signal: AbortSignal.timeout(timeoutMs) })]);
  await ready.body?.cancel();
  if (!status.ok) throw new Error(`Indexer /status answered ${status.status}`);
  // { [chainName]: { id, block: { number, timestamp } } }
  const chains = Object.values((await status.json()) as Record<string, { id: number; block: { number: number } }>);
  const chain = chainId === undefined ? chains[0] : chains.find((c) => c.id === chainId);
  return { indexedBlock: chain ? BigInt(chain.block.number) : null, ready: ready.status === 200 };
}
