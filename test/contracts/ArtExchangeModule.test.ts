import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { network } from "hardhat";
import { getAddress, keccak256, maxUint256, toBytes, zeroAddress, zeroHash } from "viem";

import ArtCertificateModule from "../../ignition/modules/ArtCertificateModule.js";
import ArtExchangeModule from "../../ignition/modules/ArtExchangeModule.js";
import LocalExchangeModule from "../../ignition/modules/LocalExchangeModule.js";
import MockStablecoinModule from "../../ignition/modules/MockStablecoinModule.js";
import { exchangeDomain, named, ORDER_TYPES, UNITS_PER_CENT } from "./helpers.js";

const { viem, ignition } = await network.create();
const publicClient = await viem.getPublicClient();
const { deployer, orderKey, treasury, alice, bob } = named(await viem.getWalletClients(), "deployer", "orderKey", "treasury", "alice", "bob");

const CERTIFIER_ROLE = keccak256(toBytes("CERTIFIER_ROLE"));
const ORDER_SIGNER_ROLE = keccak256(toBytes("ORDER_SIGNER_ROLE"));

describe("ArtExchangeModule", () => {
  it("test_deploy_overAnExistingCertificateAndTheLocalStablecoinGrantsTheOrderKeyAndFills", async () => {
    // The platform first, as on a chain that predates the exchange; the mock token as `paymentToken`.
    const { artCertificate } = await ignition.deploy(ArtCertificateModule, { parameters: { ArtCertificateModule: { admin: deployer.account.address } } });
    const { mockStablecoin } = await ignition.deploy(MockStablecoinModule);
    const { artExchange } = await ignition.deploy(ArtExchangeModule, {
      parameters: {
        ArtExchangeModule: {
          certificate: artCertificate.address,
          paymentToken: mockStablecoin.address,
          treasury: treasury.account.address,
          orderSigner: orderKey.account.address,
        },
      },
    });
    assert.equal(await artExchange.read.paymentToken(), getAddress(mockStablecoin.address));
    assert.equal(await artExchange.read.certificate(), getAddress(artCertificate.address));
    assert.equal(await artExchange.read.treasury(), getAddress(treasury.account.address));
    assert.equal(await artExchange.read.feeBps(), 250);
    assert.equal(await artExchange.read.hasRole([ORDER_SIGNER_ROLE, orderKey.account.address]), true);
    assert.equal(await artExchange.read.hasRole([ORDER_SIGNER_ROLE, deployer.account.address]), false);
    assert.equal(await artExchange.read.hasRole([zeroHash, deployer.account.address]), true);

    // The order key's order fills: alice's certificate to bob for $100.
    await artCertificate.write.grantRole([CERTIFIER_ROLE, deployer.account.address]);
    await artCertificate.write.certify([alice.account.address, "art_1", keccak256(toBytes("doc")), "u", zeroAddress, 0n]);
    await artCertificate.write.setApprovalForAll([artExchange.address, true], { account: alice.account });
    const price = 10_000n * UNITS_PER_CENT;
    await mockStablecoin.write.mint([bob.account.address, price], { account: bob.account });
    await mockStablecoin.write.approve([artExchange.address, maxUint256], { account: bob.account });
    const order = {
      listingId: "lst_1",
      seller: getAddress(alice.account.address),
      buyer: getAddress(bob.account.address),
      tokenId: 1n,
      currency: getAddress(mockStablecoin.address),
      price,
      feeBps: 250,
      expiry: (await publicClient.getBlock()).timestamp + 3600n,
    };
    const signature = await orderKey.signTypedData({
      domain: exchangeDomain(await publicClient.getChainId(), artExchange.address),
      types: ORDER_TYPES,
      primaryType: "Order",
      message: order,
    });
    await artExchange.write.fill([order, signature], { account: bob.account });
    assert.equal(await artCertificate.read.ownerOf([1n]), getAddress(bob.account.address));
    assert.equal(await mockStablecoin.read.balanceOf([treasury.account.address]), 250n * UNITS_PER_CENT);
    assert.equal(await mockStablecoin.read.balanceOf([alice.account.address]), 9_750n * UNITS_PER_CENT);
  });

  it("test_deployLocal_deploysTheStablecoinAndTheExchangePaidInIt", async () => {
    const { artCertificate } = await ignition.deploy(ArtCertificateModule, { parameters: { ArtCertificateModule: { admin: deployer.account.address } } });
    const { artExchange, mockStablecoin } = await ignition.deploy(LocalExchangeModule, {
      parameters: { LocalExchangeModule: { certificate: artCertificate.address, orderSigner: orderKey.account.address } },
    });
    assert.equal(await mockStablecoin.read.decimals(), 6);
    assert.equal(await artExchange.read.paymentToken(), getAddress(mockStablecoin.address));
    assert.equal(await artExchange.read.certificate(), getAddress(artCertificate.address));
    assert.equal(await artExchange.read.treasury(), getAddress(deployer.account.address));
    assert.equal(await artExchange.read.feeBps(), 250);
    assert.equal(await artExchange.read.hasRole([ORDER_SIGNER_ROLE, orderKey.account.address]), true);
  });
});
