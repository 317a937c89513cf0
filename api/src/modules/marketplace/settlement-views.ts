import type { Kysely } from "kysely";
import { readViews as read } from "../../chain/certificates.ts";

/**
 * The indexer's projections the marketplace settles by (the views schema): ArtMarket's
 * `SaleSettled` rows, ArtExchange's `OrderFilled` and `OrderCancelled` rows, ArtCertificate's
 * `ApprovalForAll` state and its transfers.
 */
type SaleSettlementView = {
  sale_key: string;
  sale_id: string;
  token_id: bigint;
  from: string;
  to: string;
  price_cents: bigint;
  royalty_receiver: string;
  royalty_cents: bigint;
  block_number: bigint;
  block_timestamp: bigint;
  tx_hash: string;
  log_index: number;
};

type CertificateApprovalView = {
  owner: string;
  operator: string;
  approved: boolean;
  block_number: bigint;
};

type ExchangeFillView = {
  order_hash: string;
  token_id: bigint;
  listing_id: string;
  seller: string;
  buyer: string;
  currency: string;
  price: bigint;
  royalty_receiver: string;
  royalty: bigint;
  fee: bigint;
  block_number: bigint;
  block_timestamp: bigint;
  tx_hash: string;
  log_index: number;
};

type ExchangeCancelView = { order_hash: string; canceller: string; block_number: bigint; tx_hash: string; log_index: number };

type CertificateTransferView = { token_id: bigint; from: string; to: string; block_number: bigint; tx_hash: string; log_index: number };

type Views = {
  sale_settlement: SaleSettlementView;
  certificate_approval: CertificateApprovalView;
  certificate: { token_id: bigint; owner: string; artwork_id: string };
  certificate_transfer: CertificateTransferView;
  exchange_fill: ExchangeFillView;
  exchange_cancel: ExchangeCancelView;
};

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

/** A certificate leaving a wallet by a plain transfer (no ArtExchange fill in its transaction), as the chain recorded it. */
export interface CertificateMove {
  tokenId: bigint;
  artworkId: string;
  from: string;
  to: string;
  txHash: string;
  blockNumber: bigint;
}

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

export class SettlementViews {
  private readonly views: Kysely<Views>;

  constructor(
    db: Kysely<any>,
    private readonly viewsSchema: string,
  ) {
    this.views = db.withTables<Views>().withSchema(viewsSchema) as unknown as Kysely<Views>;
  }

  /** Settlements in blocks (fromBlock, toBlock], in chain order. */
  async inBlocks(fromBlock: bigint, toBlock: bigint): Promise<Settlement[]> {
    const rows = await read(() =>
      this.views
        .selectFrom("sale_settlement")
        .selectAll()
        .where("block_number", ">", fromBlock)
        .where("block_number", "<=", toBlock)
        .orderBy("block_number")
        .orderBy("log_index")
        .execute(),
    );
    return rows.map(toSettlement);
  }

  async bySaleIds(saleIds: readonly string[]): Promise<Settlement[]> {
    if (saleIds.length === 0) return [];
    const rows = await read(() => this.views.selectFrom("sale_settlement").selectAll().where("sale_id", "in", [...saleIds]).execute());
    return rows.map(toSettlement);
  }

  /** ArtExchange fills in blocks (fromBlock, toBlock], in chain order. */
  async fillsInBlocks(fromBlock: bigint, toBlock: bigint): Promise<Fill[]> {
    const rows = await read(() =>
      this.views
        .selectFrom("exchange_fill")
        .selectAll()
        .where("block_number", ">", fromBlock)
        .where("block_number", "<=", toBlock)
        .orderBy("block_number")
        .orderBy("log_index")
        .execute(),
    );
    return rows.map(toFill);
  }

  /**
   * Certificate transfers in blocks (fromBlock, toBlock], in chain order, but mints and those of a
   * transaction that filled an ArtExchange order (a sale: the fills' projection records those).
   */
  async movesInBlocks(fromBlock: bigint, toBlock: bigint): Promise<CertificateMove[]> {
    const rows = await read(() =>
      this.views
        .selectFrom("certificate_transfer as t")
        .innerJoin("certificate as c", "c.token_id", "t.token_id")
        .select(["t.token_id", "c.artwork_id", "t.from", "t.to", "t.tx_hash", "t.block_number"])
        .where("t.block_number", ">", fromBlock)
        .where("t.block_number", "<=", toBlock)
        .where("t.from", "!=", "0x0000000000000000000000000000000000000000")
        .where(({ not, exists, selectFrom }) => not(exists(selectFrom("exchange_fill as f").select("f.tx_hash").whereRef("f.tx_hash", "=", "t.tx_hash"))))
        .orderBy("t.block_number")
        .orderBy("t.log_index")
        .execute(),
    );
    return rows.map((r) => ({ tokenId: BigInt(r.token_id), artworkId: r.artwork_id, from: r.from.toLowerCase(), to: r.to.toLowerCase(), txHash: r.tx_hash, blockNumber: BigInt(r.block_number) }));
  }

  /** ArtExchange cancellations of these orders, or in blocks (fromBlock, toBlock]: their order hashes and transactions. */
  async cancels(where: { orderHashes: readonly string[] } | { blocks: [bigint, bigint] }): Promise<{ orderHash: string; txHash: string }[]> {
    if ("orderHashes" in where && where.orderHashes.length === 0) return [];
    const rows = await read(() => {
      const q = this.views.selectFrom("exchange_cancel").select(["order_hash", "tx_hash"]);
      return ("orderHashes" in where
        ? q.where("order_hash", "in", [...where.orderHashes])
        : q.where("block_number", ">", where.blocks[0]).where("block_number", "<=", where.blocks[1])
      ).execute();
    });
    return rows.map((r) => ({ orderHash: r.order_hash, txHash: r.tx_hash }));
  }

  /** Owners that approved `operator` for all their certificates, among `owners` or in blocks (fromBlock, toBlock], as indexed. */
  async approvalsOf(operator: string, where: { owners: readonly string[] } | { blocks: [bigint, bigint] }): Promise<string[]> {
    if ("owners" in where && where.owners.length === 0) return [];
    const rows = await read(() => {
      const q = this.views.selectFrom("certificate_approval").select("owner").where("operator", "=", operator.toLowerCase()).where("approved", "=", true);
      return ("owners" in where
        ? q.where("owner", "in", where.owners.map((o) => o.toLowerCase()))
        : q.where("block_number", ">", where.blocks[0]).where("block_number", "<=", where.blocks[1])
      ).execute();
    });
    return rows.map((r) => r.owner);
  }

  /** Whether `owner` has approved `operator` for all its certificates, as indexed; read on `db` when given (a move's transaction). */
  async isApprovedForAll(owner: string, operator: string, db?: Kysely<any>): Promise<boolean> {
    const views = db ? (db.withTables<Views>().withSchema(this.viewsSchema) as unknown as Kysely<Views>) : this.views;
    const row = await read(() =>
      views
        .selectFrom("certificate_approval")
        .select("approved")
        .where("owner", "=", owner.toLowerCase())
        .where("operator", "=", operator.toLowerCase())
        .executeTakeFirst(),
    );
    return row?.approved === true;
  }
}

function toSettlement(r: SaleSettlementView): Settlement {
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

function toFill(r: ExchangeFillView): Fill {
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
