import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { network } from "hardhat";
import { getAddress, keccak256, toBytes, zeroAddress, zeroHash } from "viem";

import ArtPlatformModule from "../../ignition/modules/ArtPlatformModule.js";
import { named } from "./helpers.js";

const { viem, ignition } = await network.create();
const { deployer, relayer, alice } = named(await viem.getWalletClients(), "deployer", "relayer", "alice");

const CERTIFIER_ROLE = keccak256(toBytes("CERTIFIER_ROLE"));
const SHARE_ISSUER_ROLE = keccak256(toBytes("SHARE_ISSUER_ROLE"));

describe("ArtPlatformModule", () => {
  it("test_deploy_grantsTheRelayerBothRoles", async () => {
    const sharesUri = "https://api.example/v1/fractional/metadata/{id}.json";
    const { artCertificate, artShares } = await ignition.deploy(ArtPlatformModule, {
      parameters: {
        ArtCertificateModule: { admin: deployer.account.address },
        ArtSharesModule: { admin: deployer.account.address, sharesUri },
        ArtPlatformModule: { relayer: relayer.account.address },
      },
    });

    assert.equal(await artCertificate.read.hasRole([CERTIFIER_ROLE, relayer.account.address]), true);
    assert.equal(await artShares.read.hasRole([SHARE_ISSUER_ROLE, relayer.account.address]), true);
    assert.equal(await artCertificate.read.hasRole([CERTIFIER_ROLE, deployer.account.address]), false);
    assert.equal(await artShares.read.hasRole([SHARE_ISSUER_ROLE, deployer.account.address]), false);
    assert.equal(await artCertificate.read.hasRole([zeroHash, deployer.account.address]), true);
    assert.equal(await artShares.read.hasRole([zeroHash, deployer.account.address]), true);
    assert.equal(await artShares.read.certificate(), getAddress(artCertificate.address));
    assert.equal(await artShares.read.uri([1n]), sharesUri);

    // The relayer can run the whole flow: certify, fractionalize, sell shares.
    const asRelayer = { account: relayer.account };
    await artCertificate.write.certify([alice.account.address, "art_1", keccak256(toBytes("doc")), "u", zeroAddress, 0n], asRelayer);
    await artShares.write.createShareClass([1n, 10n], asRelayer);
    await artShares.write.mintShares([alice.account.address, 1n, 10n, keccak256(toBytes("pur_1"))], asRelayer);
    assert.equal(await artShares.read.balanceOf([alice.account.address, 1n]), 10n);
  });
});
