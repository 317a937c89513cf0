import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { network } from "hardhat";
import { getAddress, keccak256, toBytes, zeroAddress, zeroHash } from "viem";

import ArtPlatformModule from "../../ignition/modules/ArtPlatformModule.js";
import { named } from "./helpers.js";

const { viem, ignition } = await network.create();
const { deployer, relayer, alice, bob } = named(await viem.getWalletClients(), "deployer", "relayer", "alice", "bob");

const CERTIFIER_ROLE = keccak256(toBytes("CERTIFIER_ROLE"));
const SHARE_ISSUER_ROLE = keccak256(toBytes("SHARE_ISSUER_ROLE"));
const SETTLER_ROLE = keccak256(toBytes("SETTLER_ROLE"));
const ANCHORER_ROLE = keccak256(toBytes("ANCHORER_ROLE"));

describe("ArtPlatformModule", () => {
  it("test_deploy_grantsTheRelayerEveryRole", async () => {
    const sharesUri = "https://api.example/v1/fractional/metadata/{id}.json";
    const { artForwarder, artCertificate, artShares, artMarket, auditAnchor } = await ignition.deploy(ArtPlatformModule, {
      parameters: {
        ArtCertificateModule: { admin: deployer.account.address },
        ArtSharesModule: { admin: deployer.account.address, sharesUri },
        ArtMarketModule: { admin: deployer.account.address },
        AuditAnchorModule: { admin: deployer.account.address },
        ArtPlatformModule: { relayer: relayer.account.address },
      },
    });

    const grants = [
      [artCertificate, CERTIFIER_ROLE],
      [artShares, SHARE_ISSUER_ROLE],
      [artMarket, SETTLER_ROLE],
      [auditAnchor, ANCHORER_ROLE],
    ] as const;
    for (const [contract, role] of grants) {
      assert.equal(await contract.read.hasRole([role, relayer.account.address]), true, role);
      assert.equal(await contract.read.hasRole([role, deployer.account.address]), false, role);
      assert.equal(await contract.read.hasRole([zeroHash, deployer.account.address]), true, role);
    }
    assert.equal(await artCertificate.read.trustedForwarder(), getAddress(artForwarder.address));
    assert.equal(await artShares.read.certificate(), getAddress(artCertificate.address));
    assert.equal(await artMarket.read.certificate(), getAddress(artCertificate.address));
    assert.equal(await artShares.read.uri([1n]), sharesUri);

    // The relayer can run the whole flow: certify, fractionalize, sell shares, settle a sale, anchor the ledger.
    const asRelayer = { account: relayer.account };
    await artCertificate.write.certify([alice.account.address, "art_1", keccak256(toBytes("doc")), "u", zeroAddress, 0n], asRelayer);
    await artShares.write.createShareClass([1n, 10n], asRelayer);
    await artShares.write.mintShares([alice.account.address, 1n, 10n, keccak256(toBytes("pur_1"))], asRelayer);
    assert.equal(await artShares.read.balanceOf([alice.account.address, 1n]), 10n);
    await artCertificate.write.setApprovalForAll([artMarket.address, true], { account: alice.account });
    await artMarket.write.settle(["txn_1", 1n, alice.account.address, bob.account.address, 10_000n], asRelayer);
    assert.equal(await artCertificate.read.ownerOf([1n]), getAddress(bob.account.address));
    await auditAnchor.write.anchor([1n, 3n, keccak256(toBytes("root")), keccak256(toBytes("head"))], asRelayer);
    assert.equal(await auditAnchor.read.lastAnchoredSeq(), 3n);
  });
});
