import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { artifacts, network } from "hardhat";
import { decodeErrorResult, getAddress, keccak256, parseEventLogs, toBytes, zeroAddress, zeroHash } from "viem";

import { ACCESS_CONTROL_DEFAULT_ADMIN_RULES_ID, ADMIN_DELAY_SECONDS, interfaceId, named } from "./helpers.js";

const { viem, networkHelpers } = await network.create();
const publicClient = await viem.getPublicClient();
const { admin, relayer, alice, bob, carol } = named(await viem.getWalletClients(), "admin", "relayer", "alice", "bob", "carol");

const SHARE_ISSUER_ROLE = keccak256(toBytes("SHARE_ISSUER_ROLE"));
const CERTIFIER_ROLE = keccak256(toBytes("CERTIFIER_ROLE"));
const DEFAULT_ADMIN_ROLE = zeroHash;
const SHARES_URI = "http://127.0.0.1:3000/v1/fractional/metadata/{id}.json";
const asRelayer = { account: relayer.account };

const purchaseKey = (purchaseId: string) => keccak256(toBytes(purchaseId));

/** A certificate contract with one certified artwork (token 1) and the shares contract over it. */
async function deployShares() {
  const certificate = await viem.deployContract("ArtCertificate", [admin.account.address, zeroAddress]);
  await certificate.write.grantRole([CERTIFIER_ROLE, relayer.account.address]);
  await certificate.write.certify(
    [alice.account.address, "art_1", keccak256(toBytes("doc 1")), "ipfs://1", zeroAddress, 0n],
    asRelayer,
  );
  const shares = await viem.deployContract("ArtShares", [admin.account.address, certificate.address, SHARES_URI]);
  await shares.write.grantRole([SHARE_ISSUER_ROLE, relayer.account.address]);
  return { certificate, shares };
}

/** As deployShares, with a share class of 100 for token 1. */
async function deploySharesWithClass() {
  const deployed = await deployShares();
  await deployed.shares.write.createShareClass([1n, 100n], asRelayer);
  return deployed;
}

describe("ArtShares", () => {
  describe("constructor", () => {
    it("test_constructor_setsCertificateUriAndAdmin", async () => {
      const { certificate, shares } = await networkHelpers.loadFixture(deployShares);
      assert.equal(await shares.read.certificate(), getAddress(certificate.address));
      assert.equal(await shares.read.uri([1n]), SHARES_URI);
      assert.equal(await shares.read.uri([42n]), SHARES_URI);
      assert.equal(await shares.read.SHARE_ISSUER_ROLE(), SHARE_ISSUER_ROLE);
      assert.equal(await shares.read.hasRole([DEFAULT_ADMIN_ROLE, admin.account.address]), true);
      assert.equal(await shares.read.hasRole([SHARE_ISSUER_ROLE, admin.account.address]), false);
    });
  });

  describe("createShareClass", () => {
    it("test_createShareClass_setsCapAndEmits", async () => {
      const { shares } = await networkHelpers.loadFixture(deployShares);
      assert.equal(await shares.read.shareCap([1n]), 0n);
      await viem.assertions.emitWithArgs(
        shares.write.createShareClass([1n, 1000n], asRelayer),
        shares,
        "ShareClassCreated",
        [1n, 1000n],
      );
      assert.equal(await shares.read.shareCap([1n]), 1000n);
      assert.equal(await shares.read.totalSupply([1n]), 0n);
    });

    it("test_createShareClass_revertsForUncertifiedToken", async () => {
      const { certificate, shares } = await networkHelpers.loadFixture(deployShares);
      for (const tokenId of [0n, 2n, 2n ** 255n]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          shares.write.createShareClass([tokenId, 100n], asRelayer),
          shares,
          "ArtSharesNotCertified",
          [tokenId],
        );
      }
      // Once token 2 is certified its class can be created.
      await certificate.write.certify(
        [alice.account.address, "art_2", keccak256(toBytes("doc 2")), "ipfs://2", zeroAddress, 0n],
        asRelayer,
      );
      await shares.write.createShareClass([2n, 100n], asRelayer);
      assert.equal(await shares.read.shareCap([2n]), 100n);
    });

    it("test_createShareClass_revertsOnZeroCap", async () => {
      const { shares } = await networkHelpers.loadFixture(deployShares);
      await viem.assertions.revertWithCustomError(
        shares.write.createShareClass([1n, 0n], asRelayer),
        shares,
        "ArtSharesZeroAmount",
      );
    });

    it("test_createShareClass_revertsWhenClassExists", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      for (const cap of [100n, 1_000_000n, 1n]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          shares.write.createShareClass([1n, cap], asRelayer),
          shares,
          "ArtSharesClassExists",
          [1n],
        );
      }
      assert.equal(await shares.read.shareCap([1n]), 100n);
    });

    it("test_createShareClass_revertsForNonIssuer", async () => {
      const { shares } = await networkHelpers.loadFixture(deployShares);
      for (const caller of [admin, alice]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          shares.write.createShareClass([1n, 100n], { account: caller.account }),
          shares,
          "AccessControlUnauthorizedAccount",
          [getAddress(caller.account.address), SHARE_ISSUER_ROLE],
        );
      }
    });
  });

  describe("mintShares", () => {
    it("test_mintShares_mintsAndEmits", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      const key = purchaseKey("pur_1");
      const hash = await shares.write.mintShares([bob.account.address, 1n, 30n, key], asRelayer);
      await viem.assertions.emitWithArgs(hash, shares, "SharesMinted", [1n, getAddress(bob.account.address), key, 30n]);
      await viem.assertions.emitWithArgs(hash, shares, "TransferSingle", [
        getAddress(relayer.account.address),
        zeroAddress,
        getAddress(bob.account.address),
        1n,
        30n,
      ]);
      assert.equal(await shares.read.balanceOf([bob.account.address, 1n]), 30n);
      assert.equal(await shares.read.purchaseMinted([key]), true);
    });

    it("test_mintShares_tracksTotalSupply", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      assert.equal(await shares.read.exists([1n]), false);
      await shares.write.mintShares([bob.account.address, 1n, 10n, purchaseKey("pur_1")], asRelayer);
      await shares.write.mintShares([carol.account.address, 1n, 15n, purchaseKey("pur_2")], asRelayer);
      await shares.write.mintShares([bob.account.address, 1n, 5n, purchaseKey("pur_3")], asRelayer);
      assert.equal(await shares.read.totalSupply([1n]), 30n);
      assert.equal(await shares.read.totalSupply(), 30n);
      assert.equal(await shares.read.exists([1n]), true);
      assert.deepEqual(
        await shares.read.balanceOfBatch([[bob.account.address, carol.account.address], [1n, 1n]]),
        [15n, 15n],
      );
    });

    it("test_mintShares_revertsPastCapWithAvailable", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      await shares.write.mintShares([bob.account.address, 1n, 60n, purchaseKey("pur_1")], asRelayer);
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.mintShares([carol.account.address, 1n, 50n, purchaseKey("pur_2")], asRelayer),
        shares,
        "ArtSharesCapExceeded",
        [1n, 50n, 40n],
      );
      assert.equal(await shares.read.totalSupply([1n]), 60n);
      // A rejected purchase does not consume its key.
      assert.equal(await shares.read.purchaseMinted([purchaseKey("pur_2")]), false);
    });

    it("test_mintShares_mintsExactlyToCap", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      await shares.write.mintShares([bob.account.address, 1n, 60n, purchaseKey("pur_1")], asRelayer);
      await shares.write.mintShares([carol.account.address, 1n, 40n, purchaseKey("pur_2")], asRelayer);
      assert.equal(await shares.read.totalSupply([1n]), 100n);
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.mintShares([carol.account.address, 1n, 1n, purchaseKey("pur_3")], asRelayer),
        shares,
        "ArtSharesCapExceeded",
        [1n, 1n, 0n],
      );
    });

    it("test_mintShares_revertsOnHugeAmount", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.mintShares([bob.account.address, 1n, 2n ** 256n - 1n, purchaseKey("pur_1")], asRelayer),
        shares,
        "ArtSharesCapExceeded",
        [1n, 2n ** 256n - 1n, 100n],
      );
    });

    it("test_mintShares_revertsWhenPurchaseAlreadyMinted", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      const key = purchaseKey("pur_1");
      await shares.write.mintShares([bob.account.address, 1n, 10n, key], asRelayer);
      // A retried purchase cannot mint again, whatever its recipient or amount.
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.mintShares([carol.account.address, 1n, 5n, key], asRelayer),
        shares,
        "ArtSharesPurchaseAlreadyMinted",
        [key],
      );
      assert.equal(await shares.read.totalSupply([1n]), 10n);
    });

    it("test_mintShares_revertsWithPurchaseAlreadyMintedWhenRetriedAtTheCap", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      const key = purchaseKey("pur_last_shares");
      await shares.write.mintShares([bob.account.address, 1n, 100n, key], asRelayer);
      // The class is sold out by this very purchase: its retry must say "already minted" (done), never
      // "cap exceeded" (which the API would take as a failed purchase and refund).
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.mintShares([bob.account.address, 1n, 100n, key], asRelayer),
        shares,
        "ArtSharesPurchaseAlreadyMinted",
        [key],
      );
      assert.equal(await shares.read.totalSupply([1n]), 100n);
    });

    it("test_mintShares_emitsSharesMintedBeforeTheReceiverHook", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      const receiver = await viem.deployContract("ERC1155ReceiverMock", [shares.address]);
      const key = purchaseKey("pur_contract_wallet");
      await receiver.write.watch([key, false]);
      const hash = await shares.write.mintShares([receiver.address, 1n, 30n, key], asRelayer);

      const { logs } = await publicClient.waitForTransactionReceipt({ hash });
      const events = parseEventLogs({ abi: [...shares.abi, ...receiver.abi], logs });
      assert.deepEqual(
        events.map((event) => event.eventName),
        ["TransferSingle", "SharesMinted", "Received"],
      );
      // When the hook ran, the purchase and the supply were already recorded.
      assert.deepEqual(events[2]?.args, { id: 1n, value: 30n, purchaseMinted: true, totalSupply: 30n });
      assert.equal(await shares.read.balanceOf([receiver.address, 1n]), 30n);
    });

    it("test_mintShares_reentrantMintOfTheSamePurchaseReverts", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      const receiver = await viem.deployContract("ERC1155ReceiverMock", [shares.address]);
      // A hostile recipient holding the issuer role tries to mint the same purchase from inside its hook.
      await shares.write.grantRole([SHARE_ISSUER_ROLE, receiver.address]);
      const key = purchaseKey("pur_reentrant");
      await receiver.write.watch([key, true]);
      await shares.write.mintShares([receiver.address, 1n, 30n, key], asRelayer);

      const reentryError = await receiver.read.reentryError();
      assert.deepEqual(decodeErrorResult({ abi: shares.abi, data: reentryError }), {
        abiItem: shares.abi.find((item) => item.type === "error" && item.name === "ArtSharesPurchaseAlreadyMinted"),
        errorName: "ArtSharesPurchaseAlreadyMinted",
        args: [key],
      });
      assert.equal(await shares.read.totalSupply([1n]), 30n);
    });

    it("test_mintShares_revertsToZeroAddress", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.mintShares([zeroAddress, 1n, 1n, purchaseKey("pur_1")], asRelayer),
        shares,
        "ERC1155InvalidReceiver",
        [zeroAddress],
      );
      assert.equal(await shares.read.purchaseMinted([purchaseKey("pur_1")]), false);
    });

    it("test_mintShares_purchaseKeyMintsOnceAcrossClasses", async () => {
      const { certificate, shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      await certificate.write.certify(
        [alice.account.address, "art_2", keccak256(toBytes("doc 2")), "ipfs://2", zeroAddress, 0n],
        asRelayer,
      );
      await shares.write.createShareClass([2n, 100n], asRelayer);
      const key = purchaseKey("pur_1");
      await shares.write.mintShares([bob.account.address, 1n, 10n, key], asRelayer);
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.mintShares([bob.account.address, 2n, 10n, key], asRelayer),
        shares,
        "ArtSharesPurchaseAlreadyMinted",
        [key],
      );
    });

    it("test_mintShares_revertsForUnknownClass", async () => {
      const { shares } = await networkHelpers.loadFixture(deployShares);
      for (const tokenId of [0n, 1n, 7n]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          shares.write.mintShares([bob.account.address, tokenId, 1n, purchaseKey("pur_1")], asRelayer),
          shares,
          "ArtSharesUnknownClass",
          [tokenId],
        );
      }
    });

    it("test_mintShares_revertsOnZeroAmount", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      await viem.assertions.revertWithCustomError(
        shares.write.mintShares([bob.account.address, 1n, 0n, purchaseKey("pur_1")], asRelayer),
        shares,
        "ArtSharesZeroAmount",
      );
    });

    it("test_mintShares_revertsForNonIssuer", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      for (const caller of [admin, bob]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          shares.write.mintShares([bob.account.address, 1n, 1n, purchaseKey("pur_1")], { account: caller.account }),
          shares,
          "AccessControlUnauthorizedAccount",
          [getAddress(caller.account.address), SHARE_ISSUER_ROLE],
        );
      }
    });

    it("test_mintShares_revertsForContractWithoutReceiverHook", async () => {
      const { certificate, shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      // ERC-1155 mints always check the recipient: a contract must implement onERC1155Received.
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.mintShares([certificate.address, 1n, 1n, purchaseKey("pur_1")], asRelayer),
        shares,
        "ERC1155InvalidReceiver",
        [getAddress(certificate.address)],
      );
    });

    it("test_revokeRole_stopsTheIssuer", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      await shares.write.revokeRole([SHARE_ISSUER_ROLE, relayer.account.address]);
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.mintShares([bob.account.address, 1n, 1n, purchaseKey("pur_1")], asRelayer),
        shares,
        "AccessControlUnauthorizedAccount",
        [getAddress(relayer.account.address), SHARE_ISSUER_ROLE],
      );
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.grantRole([SHARE_ISSUER_ROLE, bob.account.address], asRelayer),
        shares,
        "AccessControlUnauthorizedAccount",
        [getAddress(relayer.account.address), DEFAULT_ADMIN_ROLE],
      );
    });
  });

  describe("admin", () => {
    it("test_beginDefaultAdminTransfer_movesTheAdminAfterTheDelay", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      assert.equal(await shares.read.defaultAdminDelay(), ADMIN_DELAY_SECONDS);
      await viem.assertions.revertWithCustomError(
        shares.write.grantRole([DEFAULT_ADMIN_ROLE, carol.account.address]),
        shares,
        "AccessControlEnforcedDefaultAdminRules",
      );
      await shares.write.beginDefaultAdminTransfer([carol.account.address]);
      const [, acceptSchedule] = await shares.read.pendingDefaultAdmin();
      await networkHelpers.time.increaseTo(acceptSchedule + 1);
      await shares.write.acceptDefaultAdminTransfer({ account: carol.account });
      assert.equal(await shares.read.owner(), getAddress(carol.account.address));
      // The new admin rotates the issuer; the old one can no longer.
      await shares.write.revokeRole([SHARE_ISSUER_ROLE, relayer.account.address], { account: carol.account });
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.grantRole([SHARE_ISSUER_ROLE, relayer.account.address]),
        shares,
        "AccessControlUnauthorizedAccount",
        [getAddress(admin.account.address), DEFAULT_ADMIN_ROLE],
      );
    });
  });

  describe("transfers", () => {
    it("test_safeTransferFrom_holdersTradeShares", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      await shares.write.mintShares([bob.account.address, 1n, 50n, purchaseKey("pur_1")], asRelayer);
      await viem.assertions.emitWithArgs(
        shares.write.safeTransferFrom([bob.account.address, carol.account.address, 1n, 20n, "0x"], { account: bob.account }),
        shares,
        "TransferSingle",
        [getAddress(bob.account.address), getAddress(bob.account.address), getAddress(carol.account.address), 1n, 20n],
      );
      // An approved operator (a marketplace) moves shares on a holder's behalf.
      await shares.write.setApprovalForAll([alice.account.address, true], { account: carol.account });
      await shares.write.safeTransferFrom([carol.account.address, alice.account.address, 1n, 5n, "0x"], { account: alice.account });
      assert.deepEqual(
        await shares.read.balanceOfBatch([[bob.account.address, carol.account.address, alice.account.address], [1n, 1n, 1n]]),
        [30n, 15n, 5n],
      );
      assert.equal(await shares.read.totalSupply([1n]), 50n);
    });

    it("test_safeTransferFrom_revertsWithoutApproval", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      await shares.write.mintShares([bob.account.address, 1n, 50n, purchaseKey("pur_1")], asRelayer);
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.safeTransferFrom([bob.account.address, carol.account.address, 1n, 1n, "0x"], asRelayer),
        shares,
        "ERC1155MissingApprovalForAll",
        [getAddress(relayer.account.address), getAddress(bob.account.address)],
      );
    });

    it("test_safeTransferFrom_cannotBurn", async () => {
      const { shares } = await networkHelpers.loadFixture(deploySharesWithClass);
      await shares.write.mintShares([bob.account.address, 1n, 50n, purchaseKey("pur_1")], asRelayer);
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.safeTransferFrom([bob.account.address, zeroAddress, 1n, 1n, "0x"], { account: bob.account }),
        shares,
        "ERC1155InvalidReceiver",
        [zeroAddress],
      );
      const writes = shares.abi
        .filter((item) => item.type === "function" && item.stateMutability === "nonpayable")
        .map((item) => (item.type === "function" ? item.name : ""));
      assert.equal(writes.some((name) => /burn/i.test(name)), false);
    });
  });

  describe("uri", () => {
    it("test_setURI_replacesTheTemplate", async () => {
      const { shares } = await networkHelpers.loadFixture(deployShares);
      await shares.write.setURI(["https://api.example/v1/fractional/metadata/{id}.json"]);
      assert.equal(await shares.read.uri([1n]), "https://api.example/v1/fractional/metadata/{id}.json");
    });

    it("test_setURI_revertsForNonAdmin", async () => {
      const { shares } = await networkHelpers.loadFixture(deployShares);
      await viem.assertions.revertWithCustomErrorWithArgs(
        shares.write.setURI(["https://evil.example/{id}.json"], asRelayer),
        shares,
        "AccessControlUnauthorizedAccount",
        [getAddress(relayer.account.address), DEFAULT_ADMIN_ROLE],
      );
      assert.equal(await shares.read.uri([1n]), SHARES_URI);
    });
  });

  describe("supportsInterface", () => {
    it("test_supportsInterface_reportsEveryStandard", async () => {
      const { shares } = await networkHelpers.loadFixture(deployShares);
      const { abi } = await artifacts.readArtifact("IArtShares");
      const supported = {
        erc165: "0x01ffc9a7",
        erc1155: "0xd9b67a26",
        erc1155MetadataURI: "0x0e89341c",
        accessControl: "0x7965db0b",
        accessControlDefaultAdminRules: ACCESS_CONTROL_DEFAULT_ADMIN_RULES_ID,
        artShares: interfaceId(abi),
      } as const;
      for (const [name, id] of Object.entries(supported)) {
        assert.equal(await shares.read.supportsInterface([id]), true, name);
      }
      for (const id of ["0xffffffff", "0x80ac58cd"] as const) {
        assert.equal(await shares.read.supportsInterface([id]), false, id);
      }
    });
  });
});
