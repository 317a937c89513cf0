/**
 * The indexer against the real thing: the run's Hardhat node and contracts, a real Ponder
 * process, and its views in Postgres. Transactions go through viem; assertions read the views
 * the API reads. Also measures the realtime lag (block mined -> row visible), logged only.
 */
import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { type Address, createPublicClient, createWalletClient, type Hex, http, keccak256, toHex, zeroAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artMarketAbi } from "../../contracts/abi/ArtMarket.ts";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import { auditAnchorAbi } from "../../contracts/abi/AuditAnchor.ts";
import type { IndexerViews } from "../../api/src/chain/indexer-schema.ts";
import { readIndexerStatus } from "../../api/src/chain/indexer-views.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { freshRelayerKey, sendAsDeployer } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { startIndexerForTest, type TestIndexer } from "../support/indexer.ts";
import { waitFor } from "../support/wait.ts";
import { deployAuditAnchor, fundedAccount } from "../support/wallets.ts";

const env = testEnvironment();
const publicClient = createPublicClient({ transport: http(env.rpcUrl) });
/**
 * A relayer of this file's own (funded, holding the relayer's roles): the deployer's account #0 is
 * used by other files running at the same time, and two senders of one account race for nonces.
 */
let relayer: ReturnType<typeof privateKeyToAccount>;
let relayerWallet: ReturnType<typeof createWalletClient<ReturnType<typeof http>, undefined, ReturnType<typeof privateKeyToAccount>>>;

let indexer: TestIndexer;
let views: Kysely<IndexerViews>;
let closeDb: () => Promise<void>;
const lagsMs: number[] = [];
/** An AuditAnchor of this file's own: the deployment's anchors one global sequence, which other tests' ledgers use. */
let auditAnchor: Address;
/** The account that administers it and anchors. */
let anchorer: Awaited<ReturnType<typeof fundedAccount>>["wallet"];

beforeAll(async () => {
  const started = performance.now();
  relayer = privateKeyToAccount(await freshRelayerKey());
  relayerWallet = createWalletClient({ account: relayer, transport: http(env.rpcUrl) });
  ({ address: auditAnchor, anchorer } = await deployAuditAnchor());
  // The websocket path, as the stack runs it: this file measures its lag (below).
  indexer = await startIndexerForTest({ target: { auditAnchor }, websocket: true });
  console.log(`[indexer test] Ponder ready in ${Math.round(performance.now() - started)} ms`);
  const db = createDb(env.databaseUrl, 4);
  views = db.withTables<IndexerViews>().withSchema(indexer.viewsSchema) as unknown as Kysely<IndexerViews>;
  closeDb = () => db.destroy();
});

afterAll(async () => {
  if (lagsMs.length > 0) {
    const sorted = [...lagsMs].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    console.log(
      `[indexer test] realtime lag block -> row over ${sorted.length} txs: median ${median.toFixed(1)} ms, ` +
        `min ${sorted[0]!.toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms (websocket new heads)`,
    );
  }
  await closeDb?.();
});

/** Certifies a new artwork to `owner` (the relayer holds CERTIFIER_ROLE) and returns its token id once mined. */
async function certifyTo(owner: Address, royalty: { royaltyReceiver: Address; royaltyBps: bigint } = { royaltyReceiver: zeroAddress, royaltyBps: 0n }) {
  const artworkId = `art_${randomBytes(8).toString("hex")}`;
  const artworkKey = keccak256(toHex(artworkId));
  const hash = await relayerWallet.writeContract({
    address: env.artCertificateAddress,
    abi: artCertificateAbi,
    functionName: "certify",
    args: [owner, artworkId, artworkKey, `ipfs://${artworkId}`, royalty.royaltyReceiver, royalty.royaltyBps],
    chain: null,
  });
  await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 5 });
  return publicClient.readContract({ address: env.artCertificateAddress, abi: artCertificateAbi, functionName: "tokenIdOfArtwork", args: [artworkKey] });
}

/**
 * Sends a transaction (Hardhat mines it as it is sent), then waits for `visible` to hold in the
 * views, recording the time from the mined block to the row.
 */
async function sendAndWait<T>(send: () => Promise<Hex>, visible: () => Promise<T | undefined | null | false>) {
  const hash = await send();
  const mined = performance.now();
  const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 5 });
  expect(receipt.status).toBe("success");
  const result = await waitFor(visible, { timeoutMs: 10_000, intervalMs: 2, what: `indexing of ${hash}` });
  lagsMs.push(performance.now() - mined);
  if (process.env.DEBUG_LAG) console.log(`lag ${(performance.now() - mined).toFixed(1)} ms`);
  return { result, receipt };
}

function lower(address: Address): Hex {
  return address.toLowerCase() as Hex;
}

describe("indexer", () => {
  it("reports its status from the views and over HTTP", async () => {
    const head = await publicClient.getBlockNumber();
    const db = createDb(env.databaseUrl, 1);
    try {
      const status = await readIndexerStatus({ db, viewsSchema: indexer.viewsSchema, chainId: env.chainId });
      expect(status.ready).toBe(true);
      expect(status.indexedBlock).not.toBeNull();
      expect(status.indexedBlock!).toBeLessThanOrEqual(head);
      const overHttp = await readIndexerStatus({ url: indexer.url, chainId: env.chainId });
      expect(overHttp.ready).toBe(true);
      expect(overHttp.indexedBlock).not.toBeNull();
      // Without views (another schema), the database source reports not ready instead of failing.
      expect(await readIndexerStatus({ db, viewsSchema: "no_such_views_schema" })).toEqual({ indexedBlock: null, ready: false });
    } finally {
      await db.destroy();
    }
  });

  it("keeps the indexed block at the chain head as blocks are mined", async () => {
    const db = createDb(env.databaseUrl, 1);
    try {
      await publicClient.request({ method: "evm_mine", params: [] } as never);
      const head = await publicClient.getBlockNumber();
      await waitFor(async () => {
        const status = await readIndexerStatus({ db, viewsSchema: indexer.viewsSchema });
        return status.indexedBlock !== null && status.indexedBlock >= head;
      }, { what: `indexed block to reach ${head}` });
    } finally {
      await db.destroy();
    }
  });

  it("projects a certificate, its transfers and a metadata update", async () => {
    const holder = await fundedAccount();
    const buyer = await fundedAccount();
    const artworkId = `art_${randomBytes(8).toString("hex")}`;
    const certificateHash = keccak256(toHex(artworkId));
    const royaltyReceiver = privateKeyToAccount(generatePrivateKey()).address;

    const certifyHash = await relayerWallet.writeContract({
      address: env.artCertificateAddress,
      abi: artCertificateAbi,
      functionName: "certify",
      args: [holder.account.address, artworkId, certificateHash, `ipfs://${artworkId}`, royaltyReceiver, 500n],
      chain: null,
    });
    const mined = performance.now();
    const receipt = await publicClient.waitForTransactionReceipt({ hash: certifyHash, pollingInterval: 5 });
    const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber });
    const certificate = await waitFor(
      () => views.selectFrom("certificate").selectAll().where("artwork_id", "=", artworkId).executeTakeFirst(),
      { intervalMs: 2, what: "the certificate row" },
    );
    lagsMs.push(performance.now() - mined);
    const tokenId = certificate.token_id;

    expect(certificate).toMatchObject({
      artwork_key: keccak256(toHex(artworkId)),
      artwork_id: artworkId,
      certificate_hash: certificateHash,
      owner: lower(holder.account.address),
      token_uri: `ipfs://${artworkId}`,
      royalty_receiver: lower(royaltyReceiver),
      royalty_bps: 500,
      certified_at: block.timestamp,
      block_number: receipt.blockNumber,
      tx_hash: certifyHash,
      updated_at_block: receipt.blockNumber,
    });
    expect(typeof tokenId).toBe("bigint");

    // Transfer: the owner follows, and provenance gains a row.
    const { receipt: transferReceipt } = await sendAndWait(
      () =>
        holder.wallet.writeContract({
          address: env.artCertificateAddress,
          abi: artCertificateAbi,
          functionName: "transferFrom",
          args: [holder.account.address, buyer.account.address, tokenId],
          chain: null,
        }),
      async () => {
        const row = await views.selectFrom("certificate").select(["owner", "updated_at_block"]).where("token_id", "=", tokenId).executeTakeFirst();
        return row?.owner === lower(buyer.account.address) ? row : undefined;
      },
    );
    const provenance = await views
      .selectFrom("certificate_transfer")
      .selectAll()
      .where("token_id", "=", tokenId)
      .orderBy("block_number")
      .orderBy("log_index")
      .execute();
    expect(provenance.map((p) => [p.from, p.to])).toEqual([
      [zeroAddress, lower(holder.account.address)],
      [lower(holder.account.address), lower(buyer.account.address)],
    ]);
    expect(provenance[0]).toMatchObject({ tx_hash: certifyHash, block_number: receipt.blockNumber, block_timestamp: block.timestamp });
    expect(provenance[1]).toMatchObject({
      id: `${transferReceipt.transactionHash}:${provenance[1]!.log_index}`,
      block_number: transferReceipt.blockNumber,
    });

    // EIP-4906: the new URI is read from the contract.
    const { receipt: uriReceipt } = await sendAndWait(
      () =>
        sendAsDeployer((deployer) =>
          deployer.writeContract({
            address: env.artCertificateAddress,
            abi: artCertificateAbi,
            functionName: "setTokenURI",
            args: [tokenId, `ipfs://${artworkId}/v2`],
            chain: null,
          }),
        ),
      async () => {
        const row = await views.selectFrom("certificate").selectAll().where("token_id", "=", tokenId).executeTakeFirst();
        return row?.token_uri === `ipfs://${artworkId}/v2` ? row : undefined;
      },
    );
    const updated = await views.selectFrom("certificate").selectAll().where("token_id", "=", tokenId).executeTakeFirstOrThrow();
    expect(updated.updated_at_block).toBe(uriReceipt.blockNumber);
    expect(updated.owner).toBe(lower(buyer.account.address));
    expect(updated.certificate_hash).toBe(certificateHash);
  });

  it("projects share classes, mints, balances, holders and transfers", async () => {
    const owner = await fundedAccount();
    const alice = await fundedAccount();
    const bob = await fundedAccount();
    const carol = privateKeyToAccount(generatePrivateKey()).address;
    const tokenId = await certifyTo(owner.account.address);

    const shareClass = () => views.selectFrom("share_class").selectAll().where("token_id", "=", tokenId).executeTakeFirst();
    const balances = async () =>
      Object.fromEntries(
        (await views.selectFrom("share_balance").select(["holder", "balance"]).where("token_id", "=", tokenId).execute()).map(
          (b) => [b.holder, b.balance],
        ),
      );

    const { receipt: classReceipt } = await sendAndWait(
      () =>
        relayerWallet.writeContract({
          address: env.artSharesAddress,
          abi: artSharesAbi,
          functionName: "createShareClass",
          args: [tokenId, 1_000n],
          chain: null,
        }),
      shareClass,
    );
    expect(await shareClass()).toMatchObject({
      cap: 1_000n,
      minted: 0n,
      holders_count: 0,
      block_number: classReceipt.blockNumber,
      tx_hash: classReceipt.transactionHash,
    });

    const purchaseA = keccak256(toHex(`purchase-a-${randomBytes(8).toString("hex")}`));
    const purchaseB = keccak256(toHex(`purchase-b-${randomBytes(8).toString("hex")}`));
    const mint = (to: Address, amount: bigint, purchaseKey: Hex) =>
      sendAndWait(
        () =>
          relayerWallet.writeContract({
            address: env.artSharesAddress,
            abi: artSharesAbi,
            functionName: "mintShares",
            args: [to, tokenId, amount, purchaseKey],
            chain: null,
          }),
        () => views.selectFrom("share_mint").selectAll().where("purchase_key", "=", purchaseKey).executeTakeFirst(),
      );
    const { receipt: mintReceipt } = await mint(alice.account.address, 100n, purchaseA);
    await mint(bob.account.address, 50n, purchaseB);

    expect(await balances()).toEqual({ [lower(alice.account.address)]: 100n, [lower(bob.account.address)]: 50n });
    expect(await shareClass()).toMatchObject({ minted: 150n, holders_count: 2 });
    const mintRow = await views.selectFrom("share_mint").selectAll().where("purchase_key", "=", purchaseA).executeTakeFirstOrThrow();
    expect(mintRow).toMatchObject({
      token_id: tokenId,
      to: lower(alice.account.address),
      amount: 100n,
      tx_hash: mintReceipt.transactionHash,
      block_number: mintReceipt.blockNumber,
    });
    const aliceSince = (
      await views.selectFrom("share_balance").select("first_acquired_at").where("holder", "=", lower(alice.account.address)).executeTakeFirstOrThrow()
    ).first_acquired_at;

    // Alice sells everything to Bob: her row goes, the holders count drops.
    await sendAndWait(
      () =>
        alice.wallet.writeContract({
          address: env.artSharesAddress,
          abi: artSharesAbi,
          functionName: "safeTransferFrom",
          args: [alice.account.address, bob.account.address, tokenId, 100n, "0x"],
          chain: null,
        }),
      async () => ((await balances())[lower(bob.account.address)] === 150n ? true : undefined),
    );
    expect(await balances()).toEqual({ [lower(bob.account.address)]: 150n });
    expect(await shareClass()).toMatchObject({ minted: 150n, holders_count: 1 });
    expect(aliceSince).toBeGreaterThan(0n);

    // A batch with the same id twice: one share_transfer row per item.
    const { receipt: batchReceipt } = await sendAndWait(
      () =>
        bob.wallet.writeContract({
          address: env.artSharesAddress,
          abi: artSharesAbi,
          functionName: "safeBatchTransferFrom",
          args: [bob.account.address, carol, [tokenId, tokenId], [10n, 20n], "0x"],
          chain: null,
        }),
      async () => ((await balances())[lower(carol)] === 30n ? true : undefined),
    );
    expect(await balances()).toEqual({ [lower(bob.account.address)]: 120n, [lower(carol)]: 30n });
    expect(await shareClass()).toMatchObject({ minted: 150n, holders_count: 2 });

    const transfers = await views
      .selectFrom("share_transfer")
      .selectAll()
      .where("token_id", "=", tokenId)
      .orderBy("block_number")
      .orderBy("log_index")
      .orderBy("batch_index")
      .execute();
    expect(transfers.map((t) => [t.from, t.to, t.amount, t.batch_index])).toEqual([
      [zeroAddress, lower(alice.account.address), 100n, 0],
      [zeroAddress, lower(bob.account.address), 50n, 0],
      [lower(alice.account.address), lower(bob.account.address), 100n, 0],
      [lower(bob.account.address), lower(carol), 10n, 0],
      [lower(bob.account.address), lower(carol), 20n, 1],
    ]);
    expect(transfers[0]!.operator).toBe(lower(relayer.address));
    expect(transfers.at(-1)).toMatchObject({
      id: `${batchReceipt.transactionHash}:${transfers.at(-1)!.log_index}:1`,
      operator: lower(bob.account.address),
      block_number: batchReceipt.blockNumber,
    });
  });
});

describe("indexer: market, approvals and ledger anchors", () => {
  it("projects operator approvals of certificates, the current state per owner and operator", async () => {
    const holder = await fundedAccount();
    const owner = lower(holder.account.address);
    const operator = lower(env.artMarketAddress);
    const approval = () =>
      views.selectFrom("certificate_approval").selectAll().where("owner", "=", owner).where("operator", "=", operator).executeTakeFirst();
    const setApproval = (approved: boolean) => () =>
      holder.wallet.writeContract({
        address: env.artCertificateAddress,
        abi: artCertificateAbi,
        functionName: "setApprovalForAll",
        args: [env.artMarketAddress, approved],
        chain: null,
      });

    const { receipt } = await sendAndWait(setApproval(true), approval);
    expect(await approval()).toEqual({
      owner,
      operator,
      approved: true,
      block_number: receipt.blockNumber,
      tx_hash: receipt.transactionHash,
      updated_at_block: receipt.blockNumber,
    });

    const { receipt: revoked } = await sendAndWait(setApproval(false), async () => ((await approval())?.approved === false ? true : undefined));
    expect(await approval()).toMatchObject({ approved: false, block_number: revoked.blockNumber, tx_hash: revoked.transactionHash, updated_at_block: revoked.blockNumber });
    expect(await views.selectFrom("certificate_approval").select("owner").where("owner", "=", owner).execute()).toHaveLength(1);
  });

  it("projects a settled sale with its royalty, and the certificate's new owner", async () => {
    const seller = await fundedAccount();
    const buyer = privateKeyToAccount(generatePrivateKey()).address;
    const artist = privateKeyToAccount(generatePrivateKey()).address;
    const tokenId = await certifyTo(seller.account.address, { royaltyReceiver: artist, royaltyBps: 500n });
    const approveHash = await seller.wallet.writeContract({
      address: env.artCertificateAddress,
      abi: artCertificateAbi,
      functionName: "setApprovalForAll",
      args: [env.artMarketAddress, true],
      chain: null,
    });
    await publicClient.waitForTransactionReceipt({ hash: approveHash, pollingInterval: 5 });

    const saleId = `txn_${randomBytes(8).toString("hex")}`;
    const saleKey = keccak256(toHex(saleId));
    const { receipt } = await sendAndWait(
      () =>
        relayerWallet.writeContract({
          address: env.artMarketAddress,
          abi: artMarketAbi,
          functionName: "settle",
          args: [saleId, tokenId, seller.account.address, buyer, 1_234_567n],
          chain: null,
        }),
      () => views.selectFrom("sale_settlement").selectAll().where("sale_key", "=", saleKey).executeTakeFirst(),
    );
    const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber });
    const [, royaltyCents] = await publicClient.readContract({
      address: env.artCertificateAddress,
      abi: artCertificateAbi,
      functionName: "royaltyInfo",
      args: [tokenId, 1_234_567n],
    });
    const settlement = await views.selectFrom("sale_settlement").selectAll().where("sale_key", "=", saleKey).executeTakeFirstOrThrow();
    expect(settlement).toMatchObject({
      sale_key: saleKey,
      sale_id: saleId,
      token_id: tokenId,
      from: lower(seller.account.address),
      to: lower(buyer),
      price_cents: 1_234_567n,
      royalty_receiver: lower(artist),
      royalty_cents: royaltyCents,
      block_number: receipt.blockNumber,
      block_timestamp: block.timestamp,
      tx_hash: receipt.transactionHash,
    });
    expect(royaltyCents).toBe(61_728n);
    expect(typeof settlement.log_index).toBe("number");

    // The same transaction's Transfer moved the certificate: owner and provenance follow.
    const certificate = await views.selectFrom("certificate").select(["owner", "updated_at_block"]).where("token_id", "=", tokenId).executeTakeFirstOrThrow();
    expect(certificate).toEqual({ owner: lower(buyer), updated_at_block: receipt.blockNumber });
    const lastTransfer = await views
      .selectFrom("certificate_transfer")
      .selectAll()
      .where("token_id", "=", tokenId)
      .orderBy("block_number", "desc")
      .orderBy("log_index", "desc")
      .executeTakeFirstOrThrow();
    expect(lastTransfer).toMatchObject({ from: lower(seller.account.address), to: lower(buyer), tx_hash: receipt.transactionHash });
    expect(lastTransfer.log_index).toBeLessThan(settlement.log_index);
  });

  it("projects ledger anchors", async () => {
    const anchor = (first: bigint, last: bigint, label: string) => () =>
      anchorer.writeContract({
        address: auditAnchor,
        abi: auditAnchorAbi,
        functionName: "anchor",
        args: [first, last, keccak256(toHex(`root ${label}`)), keccak256(toHex(`head ${label}`))],
        chain: null,
      });
    const row = (anchorIndex: bigint) => () =>
      views.selectFrom("ledger_anchor").selectAll().where("anchor_index", "=", anchorIndex).executeTakeFirst();

    const { receipt } = await sendAndWait(anchor(1n, 5n, "a"), row(1n));
    const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber });
    expect(await row(1n)()).toMatchObject({
      anchor_index: 1n,
      first_seq: 1n,
      last_seq: 5n,
      merkle_root: keccak256(toHex("root a")),
      head_hash: keccak256(toHex("head a")),
      block_number: receipt.blockNumber,
      block_timestamp: block.timestamp,
      tx_hash: receipt.transactionHash,
    });
    await sendAndWait(anchor(6n, 6n, "b"), row(2n));
    const anchors = await views.selectFrom("ledger_anchor").select(["anchor_index", "first_seq", "last_seq"]).orderBy("anchor_index").execute();
    expect(anchors).toEqual([
      { anchor_index: 1n, first_seq: 1n, last_seq: 5n },
      { anchor_index: 2n, first_seq: 6n, last_seq: 6n },
    ]);
  });
});
