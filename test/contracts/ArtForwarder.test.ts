import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { network } from "hardhat";
import { type Address, encodeFunctionData, getAddress, type Hex, keccak256, type LocalAccount, toBytes, zeroAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";

import { FORWARD_REQUEST_TYPES, FORWARDER_DOMAIN } from "../../api/src/chain/forwarder.js";
import { named } from "./helpers.js";

const { viem, networkHelpers } = await network.create();
const publicClient = await viem.getPublicClient();
const { admin, relayer, carol } = named(await viem.getWalletClients(), "admin", "relayer", "carol");

const CERTIFIER_ROLE = keccak256(toBytes("CERTIFIER_ROLE"));
const SETTLER_ROLE = keccak256(toBytes("SETTLER_ROLE"));
const asRelayer = { account: relayer.account };

/** A custodial wallet (a key the platform holds, never funded) holding certificate 1; the forwarder, certificate and market. */
async function deployPlatform() {
  const forwarder = await viem.deployContract("ArtForwarder", []);
  const certificate = await viem.deployContract("ArtCertificate", [admin.account.address, forwarder.address]);
  const market = await viem.deployContract("ArtMarket", [admin.account.address, certificate.address]);
  await certificate.write.grantRole([CERTIFIER_ROLE, relayer.account.address]);
  await market.write.grantRole([SETTLER_ROLE, relayer.account.address]);
  const custodial = privateKeyToAccount(generatePrivateKey());
  await certificate.write.certify([custodial.address, "art_1", keccak256(toBytes("doc 1")), "ipfs://1", zeroAddress, 0n], asRelayer);
  return { forwarder, certificate, market, custodial };
}

type Platform = Awaited<ReturnType<typeof deployPlatform>>;

type Wallet = (typeof relayer);

/**
 * `signer` (a local key, or one of Hardhat's accounts) signs a ForwardRequest of `data` to `to` as `from`
 * (default: itself), with the forwarder's current nonce of `from`.
 */
async function forwardRequest(
  { forwarder }: Platform,
  signer: LocalAccount | Wallet,
  to: Address,
  data: Hex,
  options: { from?: Address; deadline?: number; gas?: bigint } = {},
) {
  const signerAddress = "account" in signer ? signer.account.address : signer.address;
  const from = options.from ?? signerAddress;
  const deadline = options.deadline ?? (await networkHelpers.time.latest()) + 3600;
  const gas = options.gas ?? 100_000n;
  const nonce = await forwarder.read.nonces([from]);
  const typedData = {
    domain: { ...FORWARDER_DOMAIN, chainId: await publicClient.getChainId(), verifyingContract: forwarder.address },
    types: FORWARD_REQUEST_TYPES,
    primaryType: "ForwardRequest",
    message: { from, to, value: 0n, gas, nonce, deadline, data },
  } as const;
  const signature = "account" in signer ? await signer.signTypedData({ account: signer.account, ...typedData }) : await signer.signTypedData(typedData);
  return { from, to, value: 0n, gas, deadline, data, signature };
}

const approveMarket = (platform: Platform, approved = true) =>
  encodeFunctionData({ abi: platform.certificate.abi, functionName: "setApprovalForAll", args: [platform.market.address, approved] });

describe("ArtForwarder", () => {
  it("test_eip712Domain_isArtPlatformForwarderVersion1", async () => {
    const { forwarder, certificate } = await networkHelpers.loadFixture(deployPlatform);
    const [, name, version, chainId, verifyingContract] = await forwarder.read.eip712Domain();
    assert.deepEqual([name, version, chainId, verifyingContract], ["ArtPlatformForwarder", "1", 31337n, getAddress(forwarder.address)]);
    assert.equal(await certificate.read.trustedForwarder(), getAddress(forwarder.address));
    assert.equal(await certificate.read.isTrustedForwarder([forwarder.address]), true);
  });

  it("test_execute_letsAWalletWithoutEthApproveTheMarketThenASettleMovesTheToken", async () => {
    const platform = await networkHelpers.loadFixture(deployPlatform);
    const { forwarder, certificate, market, custodial } = platform;
    assert.equal(await publicClient.getBalance({ address: custodial.address }), 0n);

    const request = await forwardRequest(platform, custodial, certificate.address, approveMarket(platform));
    assert.equal(await forwarder.read.verify([request]), true);
    // Submitted and paid for by the relayer; the certificate sees the custodial wallet as the caller.
    const hash = await forwarder.write.execute([request], asRelayer);
    await viem.assertions.emitWithArgs(hash, certificate, "ApprovalForAll", [getAddress(custodial.address), getAddress(market.address), true]);
    await viem.assertions.emitWithArgs(hash, forwarder, "ExecutedForwardRequest", [getAddress(custodial.address), 0n, true]);
    assert.equal(await certificate.read.isApprovedForAll([custodial.address, market.address]), true);
    assert.equal(await forwarder.read.nonces([custodial.address]), 1n);
    assert.equal(await publicClient.getBalance({ address: custodial.address }), 0n);

    await market.write.settle(["txn_01", 1n, custodial.address, carol.account.address, 500_00n], asRelayer);
    assert.equal(await certificate.read.ownerOf([1n]), getAddress(carol.account.address));
  });

  it("test_execute_revertsOnAReplayedRequest", async () => {
    const platform = await networkHelpers.loadFixture(deployPlatform);
    const request = await forwardRequest(platform, platform.custodial, platform.certificate.address, approveMarket(platform));
    await platform.forwarder.write.execute([request], asRelayer);
    // The nonce is spent: the same signature now recovers to another address.
    await viem.assertions.revertWithCustomError(
      platform.forwarder.write.execute([request], asRelayer),
      platform.forwarder,
      "ERC2771ForwarderInvalidSigner",
    );
  });

  it("test_execute_revertsWhenSignedByAnotherKey", async () => {
    const platform = await networkHelpers.loadFixture(deployPlatform);
    const intruder = privateKeyToAccount(generatePrivateKey());
    const request = await forwardRequest(platform, intruder, platform.certificate.address, approveMarket(platform), {
      from: platform.custodial.address,
    });
    await viem.assertions.revertWithCustomErrorWithArgs(
      platform.forwarder.write.execute([request], asRelayer),
      platform.forwarder,
      "ERC2771ForwarderInvalidSigner",
      [getAddress(intruder.address), getAddress(platform.custodial.address)],
    );
    assert.equal(await platform.certificate.read.isApprovedForAll([platform.custodial.address, platform.market.address]), false);
  });

  it("test_execute_revertsAfterTheDeadline", async () => {
    const platform = await networkHelpers.loadFixture(deployPlatform);
    const deadline = (await networkHelpers.time.latest()) + 60;
    const request = await forwardRequest(platform, platform.custodial, platform.certificate.address, approveMarket(platform), { deadline });
    await networkHelpers.time.increase(120);
    await viem.assertions.revertWithCustomErrorWithArgs(
      platform.forwarder.write.execute([request], asRelayer),
      platform.forwarder,
      "ERC2771ForwarderExpiredRequest",
      [deadline],
    );
  });

  it("test_execute_revertsForATargetThatDoesNotTrustIt", async () => {
    const platform = await networkHelpers.loadFixture(deployPlatform);
    const data = encodeFunctionData({ abi: platform.market.abi, functionName: "isSettled", args: [keccak256(toBytes("txn_01"))] });
    const request = await forwardRequest(platform, platform.custodial, platform.market.address, data);
    await viem.assertions.revertWithCustomErrorWithArgs(
      platform.forwarder.write.execute([request], asRelayer),
      platform.forwarder,
      "ERC2771UntrustfulTarget",
      [getAddress(platform.market.address), getAddress(platform.forwarder.address)],
    );
  });

  it("test_execute_revertsWithFailedCallWhenTheInnerCallReverts", async () => {
    const platform = await networkHelpers.loadFixture(deployPlatform);
    // Moving a token that does not exist reverts in the certificate (ERC721NonexistentToken); the forwarder does
    // not bubble the inner revert data: it reverts with Errors.FailedCall(), and the API replays the inner call to name it.
    const data = encodeFunctionData({
      abi: platform.certificate.abi,
      functionName: "transferFrom",
      args: [platform.custodial.address, carol.account.address, 2n],
    });
    const request = await forwardRequest(platform, platform.custodial, platform.certificate.address, data);
    await viem.assertions.revertWithCustomError(platform.forwarder.write.execute([request], asRelayer), platform.forwarder, "FailedCall");
    assert.equal(await platform.forwarder.read.nonces([platform.custodial.address]), 0n);
  });

  it("test_execute_actsWithTheSignersRolesNotTheSubmitters", async () => {
    const platform = await networkHelpers.loadFixture(deployPlatform);
    const certify = (artworkId: string) =>
      encodeFunctionData({
        abi: platform.certificate.abi,
        functionName: "certify",
        args: [carol.account.address, artworkId, keccak256(toBytes(artworkId)), "u", zeroAddress, 0n],
      });
    // Signed by the certifier, submitted by anyone: certifies.
    const byCertifier = await forwardRequest(platform, relayer, platform.certificate.address, certify("art_2"), { gas: 500_000n });
    await platform.forwarder.write.execute([byCertifier], { account: carol.account });
    assert.equal(await platform.certificate.read.ownerOf([2n]), getAddress(carol.account.address));
    // Signed by the custodial wallet, submitted by the certifier: the wallet's (absent) role counts.
    const byWallet = await forwardRequest(platform, platform.custodial, platform.certificate.address, certify("art_3"), { gas: 500_000n });
    await viem.assertions.revertWithCustomError(platform.forwarder.write.execute([byWallet], asRelayer), platform.forwarder, "FailedCall");
    assert.equal(await platform.certificate.read.totalCertified(), 2n);
  });
});
