// Gas of the platform's writes with the arguments the API sends. The table of
// docs/contributors/benchmarks.md#gas comes from
//   GAS_REPORT=1 npx hardhat test nodejs test/contracts/Gas.test.ts --build-profile production
// (the production profile is what Ignition deploys: optimizer on, 200 runs).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import hre, { network } from "hardhat";
import { type Address, type Hex, keccak256, maxUint256, toBytes, zeroAddress } from "viem";

import { exchangeDomain, named, ORDER_TYPES, UNITS_PER_CENT } from "./helpers.js";

const { viem } = await network.create();
const publicClient = await viem.getPublicClient();
const { admin, relayer, buyer, secondBuyer } = named(await viem.getWalletClients(), "admin", "relayer", "buyer", "secondBuyer");
const asRelayer = { account: relayer.account };

const CERTIFIER_ROLE = keccak256(toBytes("CERTIFIER_ROLE"));
const SHARE_ISSUER_ROLE = keccak256(toBytes("SHARE_ISSUER_ROLE"));
const SETTLER_ROLE = keccak256(toBytes("SETTLER_ROLE"));
const ANCHORER_ROLE = keccak256(toBytes("ANCHORER_ROLE"));
const ORDER_SIGNER_ROLE = keccak256(toBytes("ORDER_SIGNER_ROLE"));
const ROYALTY_BPS = 500n;

let serial = 0;
/** An artwork as the API certifies it: a ULID-sized id, its metadata URL, a new artist wallet with the royalty. */
function nextRequest() {
  serial += 1;
  const artworkId = `art_01JD${serial.toString().padStart(22, "0")}`;
  const artist = `0x${(0x1000_0000 + serial).toString(16).padStart(40, "0")}` as Address;
  return {
    to: artist,
    artworkId,
    certificateHash: keccak256(toBytes(`certificate document ${artworkId}`)),
    tokenURI: `https://api.artplatform.example/v1/artworks/${artworkId}/metadata.json`,
    royaltyReceiver: artist,
    royaltyBps: ROYALTY_BPS,
  };
}

async function gasUsed(hash: Hex): Promise<bigint> {
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  assert.equal(receipt.status, "success");
  return receipt.gasUsed;
}

describe("gas", () => {
  it("test_gas_certifyBatchCostsLessPerItemThanCertify", async () => {
    const forwarder = await viem.deployContract("ArtForwarder", []);
    const certificate = await viem.deployContract("ArtCertificate", [admin.account.address, forwarder.address]);
    await certificate.write.grantRole([CERTIFIER_ROLE, relayer.account.address]);
    const shares = await viem.deployContract("ArtShares", [admin.account.address, certificate.address, "https://x/{id}.json"]);
    await shares.write.grantRole([SHARE_ISSUER_ROLE, relayer.account.address]);

    const certify = async () => {
      const r = nextRequest();
      return gasUsed(
        await certificate.write.certify([r.to, r.artworkId, r.certificateHash, r.tokenURI, r.royaltyReceiver, r.royaltyBps], asRelayer),
      );
    };
    const certifyBatch = async (n: number) => {
      const requests = Array.from({ length: n }, nextRequest);
      return gasUsed(await certificate.write.certifyBatch([requests], asRelayer));
    };

    const rows: [string, bigint, number][] = [];
    // The first certificate of a deployment also pays for the counter's first write: measure the steady state.
    const first = await certify();
    rows.push(["certify (steady state)", await certify(), 1]);
    for (const n of [1, 10, 40]) rows.push([`certifyBatch of ${n}`, await certifyBatch(n), n]);

    await gasUsed(await shares.write.createShareClass([1n, 1_000_000n], asRelayer));
    rows.push(["createShareClass", await gasUsed(await shares.write.createShareClass([2n, 1_000_000n], asRelayer)), 1]);
    const holder = (i: number) => `0x${(0x2000_0000 + i).toString(16).padStart(40, "0")}` as Address;
    const mint = async (to: Address, key: string) =>
      gasUsed(await shares.write.mintShares([to, 1n, 100n, keccak256(toBytes(key))], asRelayer));
    const firstMint = await mint(holder(1), "purchase 1");
    rows.push(["mintShares (new holder)", await mint(holder(2), "purchase 2"), 1]);
    rows.push(["mintShares (existing holder)", await mint(holder(2), "purchase 3"), 1]);

    // A sale as the API settles it: the seller (approved once for all) to a new buyer, a ULID-sized sale id.
    const market = await viem.deployContract("ArtMarket", [admin.account.address, certificate.address]);
    await market.write.grantRole([SETTLER_ROLE, relayer.account.address]);
    const seller = nextRequest();
    await certificate.write.certify([admin.account.address, seller.artworkId, seller.certificateHash, seller.tokenURI, seller.royaltyReceiver, seller.royaltyBps], asRelayer);
    await certificate.write.certify([admin.account.address, `${seller.artworkId}b`, seller.certificateHash, seller.tokenURI, seller.royaltyReceiver, seller.royaltyBps], asRelayer);
    await certificate.write.setApprovalForAll([market.address, true]);
    const soldTokenId = await certificate.read.totalCertified();
    const settle = async (tokenId: bigint, saleId: string, buyer: number) =>
      gasUsed(await market.write.settle([saleId, tokenId, admin.account.address, holder(100 + buyer), 1_250_000n], asRelayer));
    await settle(soldTokenId - 1n, "txn_01JD0000000000000000000001", 1);
    rows.push(["settle (new buyer)", await settle(soldTokenId, "txn_01JD0000000000000000000002", 2), 1]);

    // A sale paid on-chain: the order key signs the seller's order, a buyer who approved the exchange fills it,
    // paying the 5 % royalty, a 2.5 % fee and the seller in a 6-decimal stablecoin. The first fill also pays for
    // the recipients' first balances; the next one, by another new buyer, pays the same recipients again.
    const stablecoin = await viem.deployContract("MockStablecoin", []);
    const exchange = await viem.deployContract("ArtExchange", [admin.account.address, certificate.address, stablecoin.address, holder(900), 250]);
    await exchange.write.grantRole([ORDER_SIGNER_ROLE, relayer.account.address]);
    await certificate.write.setApprovalForAll([exchange.address, true]);
    for (const wallet of [buyer, secondBuyer]) {
      await stablecoin.write.mint([wallet.account.address, 1_000_000n * 100n * UNITS_PER_CENT]);
      await stablecoin.write.approve([exchange.address, maxUint256], { account: wallet.account });
    }
    const chainId = await publicClient.getChainId();
    const fill = async (listing: number, filler: typeof buyer) => {
      const r = nextRequest();
      await certificate.write.certify([admin.account.address, r.artworkId, r.certificateHash, r.tokenURI, seller.royaltyReceiver, r.royaltyBps], asRelayer);
      const order = {
        listingId: `lst_01JD${listing.toString().padStart(22, "0")}`,
        seller: admin.account.address,
        buyer: zeroAddress,
        tokenId: await certificate.read.totalCertified(),
        currency: stablecoin.address,
        price: 1_250_000n * UNITS_PER_CENT,
        feeBps: 250,
        expiry: (await publicClient.getBlock()).timestamp + 86_400n,
      };
      const signature = await relayer.signTypedData({
        domain: exchangeDomain(chainId, exchange.address),
        types: ORDER_TYPES,
        primaryType: "Order",
        message: order,
      });
      return gasUsed(await exchange.write.fill([order, signature], { account: filler.account }));
    };
    const firstFill = await fill(1, buyer);
    rows.push(["fill (a sale paid on-chain), a new buyer", await fill(2, secondBuyer), 1]);

    // Anchoring the audit ledger: a range of entries under one root.
    const auditAnchor = await viem.deployContract("AuditAnchor", [admin.account.address]);
    await auditAnchor.write.grantRole([ANCHORER_ROLE, relayer.account.address]);
    const anchor = async (first: bigint, last: bigint) =>
      gasUsed(await auditAnchor.write.anchor([first, last, keccak256(toBytes(`root ${first}`)), keccak256(toBytes(`head ${last}`))], asRelayer));
    const firstAnchor = await anchor(1n, 100n);
    rows.push(["anchor (steady state)", await anchor(101n, 200n), 1]);

    const perItem = (name: string) => {
      const row = rows.find(([label]) => label === name);
      assert.ok(row);
      return row[1] / BigInt(row[2]);
    };
    // A batch of one costs a little more than certify (the array's encoding); batches of 10 and more save.
    assert.ok(perItem("certifyBatch of 10") < perItem("certify (steady state)"));
    assert.ok(perItem("certifyBatch of 40") < perItem("certifyBatch of 10"));

    if (process.env.GAS_REPORT) {
      const profile = hre.globalOptions.buildProfile ?? "default";
      console.log(
        `\nGas (build profile ${profile}; first certify of a deployment ${first}, first mint of a class ${firstMint}, ` +
          `first anchor of a deployment ${firstAnchor}, first fill of a deployment ${firstFill}):\n`,
      );
      console.log("| call | gas per transaction | gas per item |");
      console.log("|---|---:|---:|");
      for (const [label, gas, n] of rows) console.log(`| ${label} | ${gas} | ${gas / BigInt(n)} |`);
      console.log();
    }
  });
});
