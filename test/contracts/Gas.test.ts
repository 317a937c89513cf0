// Gas of the platform's writes with the arguments the API sends. The README's table comes from
//   GAS_REPORT=1 npx hardhat test nodejs test/contracts/Gas.test.ts --build-profile production
// (the production profile is what Ignition deploys: optimizer on, 200 runs).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import hre, { network } from "hardhat";
import { type Address, type Hex, keccak256, toBytes } from "viem";

import { named } from "./helpers.js";

const { viem } = await network.create();
const publicClient = await viem.getPublicClient();
const { admin, relayer } = named(await viem.getWalletClients(), "admin", "relayer");
const asRelayer = { account: relayer.account };

const CERTIFIER_ROLE = keccak256(toBytes("CERTIFIER_ROLE"));
const SHARE_ISSUER_ROLE = keccak256(toBytes("SHARE_ISSUER_ROLE"));
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
    const certificate = await viem.deployContract("ArtCertificate", [admin.account.address]);
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
      console.log(`\nGas (build profile ${profile}; first certify of a deployment ${first}, first mint of a class ${firstMint}):\n`);
      console.log("| call | gas per transaction | gas per item |");
      console.log("|---|---:|---:|");
      for (const [label, gas, n] of rows) console.log(`| ${label} | ${gas} | ${gas / BigInt(n)} |`);
      console.log();
    }
  });
});
