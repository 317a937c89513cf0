import type { Kysely } from "kysely";
import { readViews as read } from "../../chain/certificates.ts";

/**
 * The indexer's projections the marketplace settles by (the views schema): ArtMarket's
 * `SaleSettled` rows, ArtCertificate's `ApprovalForAll` state, and current certificate owners.
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

type Views = { sale_settlement: SaleSettlementView; certificate_approval: CertificateApprovalView; certificate: { token_id: bigint; owner: string } };

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

  constructor(db: Kysely<any>, viewsSchema: string) {
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

  /** Whether `owner` has approved `operator` for all its certificates, as indexed. */
  async isApprovedForAll(owner: string, operator: string): Promise<boolean> {
    const row = await read(() =>
      this.views
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
