import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { artifacts, network } from "hardhat";
import { type Address, getAddress, keccak256, parseEventLogs, toBytes, zeroAddress, zeroHash } from "viem";

import { ACCESS_CONTROL_DEFAULT_ADMIN_RULES_ID, ADMIN_DELAY_SECONDS, interfaceId, named } from "./helpers.js";

const { viem, networkHelpers } = await network.create();
const publicClient = await viem.getPublicClient();
const { admin, relayer, alice, bob, carol } = named(await viem.getWalletClients(), "admin", "relayer", "alice", "bob", "carol");

const CERTIFIER_ROLE = keccak256(toBytes("CERTIFIER_ROLE"));
const SETTLER_ROLE = keccak256(toBytes("SETTLER_ROLE"));
const DEFAULT_ADMIN_ROLE = zeroHash;
const ROYALTY_BPS = 500n;
const asRelayer = { account: relayer.account };
const asAlice = { account: alice.account };

const saleKey = (saleId: string) => keccak256(toBytes(saleId));
const settleCall = (args: readonly [string, bigint, Address, Address, bigint]) =>
  ({ functionName: "settle", args, account: relayer.account }) as const;

/** Certificate 1 held by alice with a 5 % royalty to bob (the artist), certificate 2 held by alice without royalty. */
async function deployMarket() {
  const certificate = await viem.deployContract("ArtCertificate", [admin.account.address, zeroAddress]);
  const market = await viem.deployContract("ArtMarket", [admin.account.address, certificate.address]);
  await certificate.write.grantRole([CERTIFIER_ROLE, relayer.account.address]);
  await market.write.grantRole([SETTLER_ROLE, relayer.account.address]);
  await certificate.write.certify(
    [alice.account.address, "art_1", keccak256(toBytes("doc 1")), "ipfs://1", bob.account.address, ROYALTY_BPS],
    asRelayer,
  );
  await certificate.write.certify([alice.account.address, "art_2", keccak256(toBytes("doc 2")), "ipfs://2", zeroAddress, 0n], asRelayer);
  return { certificate, market };
}

async function deployApprovedMarket() {
  const deployed = await deployMarket();
  await deployed.certificate.write.setApprovalForAll([deployed.market.address, true], asAlice);
  return deployed;
}

describe("ArtMarket", () => {
  describe("settle", () => {
    it("test_settle_movesTheTokenAndEmitsSaleSettled", async () => {
      const { certificate, market } = await networkHelpers.loadFixture(deployApprovedMarket);
      const [royaltyReceiver, royaltyCents] = await certificate.read.royaltyInfo([1n, 1_234_567n]);
      assert.deepEqual([royaltyReceiver, royaltyCents], [getAddress(bob.account.address), 61_728n]);

      const hash = await market.write.settle(["txn_01", 1n, alice.account.address, carol.account.address, 1_234_567n], asRelayer);
      await viem.assertions.emitWithArgs(hash, market, "SaleSettled", [
        saleKey("txn_01"),
        1n,
        "txn_01",
        getAddress(alice.account.address),
        getAddress(carol.account.address),
        1_234_567n,
        royaltyReceiver,
        royaltyCents,
      ]);
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(carol.account.address));
      assert.equal(await market.read.isSettled([saleKey("txn_01")]), true);
      assert.equal(await market.read.isSettled([saleKey("txn_02")]), false);
    });

    it("test_settle_emitsSaleSettledAfterTheTransfer", async () => {
      const { certificate, market } = await networkHelpers.loadFixture(deployApprovedMarket);
      const hash = await market.write.settle(["txn_01", 1n, alice.account.address, carol.account.address, 100n], asRelayer);
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      const names = parseEventLogs({ abi: [...certificate.abi, ...market.abi], logs: receipt.logs }).map((log) => log.eventName);
      assert.deepEqual(names, ["Transfer", "SaleSettled"]);
    });

    it("test_settle_returnsTheRoyaltyOfThePrice", async () => {
      const { certificate, market } = await networkHelpers.loadFixture(deployApprovedMarket);
      for (const price of [0n, 1n, 19n, 20n, 999_999_99n]) {
        const { result } = await publicClient.simulateContract({
          ...settleCall([`txn_${price}`, 1n, alice.account.address, carol.account.address, price]),
          address: market.address,
          abi: market.abi,
        });
        assert.deepEqual(result, await certificate.read.royaltyInfo([1n, price]));
      }
      // Without a royalty: the zero address and nothing due.
      const { result } = await publicClient.simulateContract({
        ...settleCall(["txn_2", 2n, alice.account.address, carol.account.address, 50_000n]),
        address: market.address,
        abi: market.abi,
      });
      assert.deepEqual(result, [zeroAddress, 0n]);
    });

    it("test_settle_revertsWhenTheSaleIsAlreadySettled", async () => {
      const { certificate, market } = await networkHelpers.loadFixture(deployApprovedMarket);
      await market.write.settle(["txn_01", 1n, alice.account.address, carol.account.address, 100n], asRelayer);
      await certificate.write.setApprovalForAll([market.address, true], { account: carol.account });
      // A retry is refused whatever its arguments: another token, seller, buyer or price.
      for (const args of [
        ["txn_01", 1n, alice.account.address, carol.account.address, 100n],
        ["txn_01", 1n, carol.account.address, alice.account.address, 100n],
        ["txn_01", 2n, alice.account.address, bob.account.address, 7n],
      ] as const) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          market.write.settle(args, asRelayer),
          market,
          "ArtMarketAlreadySettled",
          [saleKey("txn_01")],
        );
      }
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(carol.account.address));
      assert.equal(await certificate.read.ownerOf([2n]), getAddress(alice.account.address));
    });

    it("test_settle_keysSalesByKeccakOfUtf8Bytes", async () => {
      const { market } = await networkHelpers.loadFixture(deployApprovedMarket);
      for (const saleId of ["txn_01JD0000000000000000000000", "return:dsp_01", "vente-été"]) {
        assert.equal(await market.read.saleKeyOf([saleId]), saleKey(saleId));
      }
      await market.write.settle(["return:dsp_01", 1n, alice.account.address, carol.account.address, 0n], asRelayer);
      assert.equal(await market.read.isSettled([saleKey("return:dsp_01")]), true);
    });

    it("test_settle_revertsWithoutTheOwnersApproval", async () => {
      const { certificate, market } = await networkHelpers.loadFixture(deployMarket);
      await viem.assertions.revertWithCustomErrorWithArgs(
        market.write.settle(["txn_01", 1n, alice.account.address, carol.account.address, 100n], asRelayer),
        certificate,
        "ERC721InsufficientApproval",
        [getAddress(market.address), 1n],
      );
      // The failed settlement left the sale open: once approved, it settles.
      assert.equal(await market.read.isSettled([saleKey("txn_01")]), false);
      await certificate.write.approve([market.address, 1n], asAlice);
      await market.write.settle(["txn_01", 1n, alice.account.address, carol.account.address, 100n], asRelayer);
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(carol.account.address));
      // A single-token approval is spent by the transfer; token 2 still needs its own.
      await viem.assertions.revertWithCustomErrorWithArgs(
        market.write.settle(["txn_02", 2n, alice.account.address, carol.account.address, 100n], asRelayer),
        certificate,
        "ERC721InsufficientApproval",
        [getAddress(market.address), 2n],
      );
    });

    it("test_settle_revertsAfterTheApprovalIsRevoked", async () => {
      const { certificate, market } = await networkHelpers.loadFixture(deployApprovedMarket);
      await certificate.write.setApprovalForAll([market.address, false], asAlice);
      await viem.assertions.revertWithCustomErrorWithArgs(
        market.write.settle(["txn_01", 1n, alice.account.address, carol.account.address, 100n], asRelayer),
        certificate,
        "ERC721InsufficientApproval",
        [getAddress(market.address), 1n],
      );
    });

    it("test_settle_revertsWhenFromIsNotTheOwner", async () => {
      const { certificate, market } = await networkHelpers.loadFixture(deployApprovedMarket);
      await certificate.write.setApprovalForAll([market.address, true], { account: bob.account });
      await viem.assertions.revertWithCustomErrorWithArgs(
        market.write.settle(["txn_01", 1n, bob.account.address, carol.account.address, 100n], asRelayer),
        certificate,
        "ERC721IncorrectOwner",
        [getAddress(bob.account.address), 1n, getAddress(alice.account.address)],
      );
    });

    it("test_settle_revertsForNonSettler", async () => {
      const { certificate, market } = await networkHelpers.loadFixture(deployApprovedMarket);
      for (const caller of [admin, alice, carol]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          market.write.settle(["txn_01", 1n, alice.account.address, caller.account.address, 100n], { account: caller.account }),
          market,
          "AccessControlUnauthorizedAccount",
          [getAddress(caller.account.address), SETTLER_ROLE],
        );
      }
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(alice.account.address));
      assert.equal(await market.read.isSettled([saleKey("txn_01")]), false);
    });

    it("test_settle_revertsOnEmptySaleId", async () => {
      const { market } = await networkHelpers.loadFixture(deployApprovedMarket);
      await viem.assertions.revertWithCustomError(
        market.write.settle(["", 1n, alice.account.address, carol.account.address, 100n], asRelayer),
        market,
        "ArtMarketEmptySaleId",
      );
    });

    it("test_settle_revertsOnZeroAddresses", async () => {
      const { market } = await networkHelpers.loadFixture(deployApprovedMarket);
      for (const [from, to] of [
        [zeroAddress, carol.account.address],
        [alice.account.address, zeroAddress],
      ] as const) {
        await viem.assertions.revertWithCustomError(
          market.write.settle(["txn_01", 1n, from, to, 100n], asRelayer),
          market,
          "ArtMarketZeroAddress",
        );
      }
    });

    it("test_settle_revertsForNonexistentToken", async () => {
      const { certificate, market } = await networkHelpers.loadFixture(deployApprovedMarket);
      await viem.assertions.revertWithCustomErrorWithArgs(
        market.write.settle(["txn_01", 3n, alice.account.address, carol.account.address, 100n], asRelayer),
        certificate,
        "ERC721NonexistentToken",
        [3n],
      );
    });
  });

  describe("roles", () => {
    it("test_constructor_grantsAdminRoleOnlyAndLinksTheCertificate", async () => {
      const { certificate } = await networkHelpers.loadFixture(deployMarket);
      const market = await viem.deployContract("ArtMarket", [bob.account.address, certificate.address]);
      assert.equal(await market.read.SETTLER_ROLE(), SETTLER_ROLE);
      assert.equal(await market.read.certificate(), getAddress(certificate.address));
      assert.equal(await market.read.hasRole([DEFAULT_ADMIN_ROLE, bob.account.address]), true);
      assert.equal(await market.read.hasRole([SETTLER_ROLE, bob.account.address]), false);
      assert.equal(await market.read.defaultAdminDelay(), ADMIN_DELAY_SECONDS);
    });

    it("test_constructor_revertsForZeroAdminOrCertificate", async () => {
      const { certificate } = await networkHelpers.loadFixture(deployMarket);
      await assert.rejects(viem.deployContract("ArtMarket", [zeroAddress, certificate.address]), /AccessControlInvalidDefaultAdmin/);
      await assert.rejects(viem.deployContract("ArtMarket", [admin.account.address, zeroAddress]), /ArtMarketZeroAddress/);
    });

    it("test_grantRole_revertsForNonAdmin", async () => {
      const { market } = await networkHelpers.loadFixture(deployMarket);
      await viem.assertions.revertWithCustomErrorWithArgs(
        market.write.grantRole([SETTLER_ROLE, alice.account.address], asRelayer),
        market,
        "AccessControlUnauthorizedAccount",
        [getAddress(relayer.account.address), DEFAULT_ADMIN_ROLE],
      );
    });
  });

  describe("supportsInterface", () => {
    it("test_supportsInterface_reportsEveryStandard", async () => {
      const { market } = await networkHelpers.loadFixture(deployMarket);
      const { abi } = await artifacts.readArtifact("IArtMarket");
      const supported = {
        erc165: "0x01ffc9a7",
        accessControl: "0x7965db0b",
        accessControlDefaultAdminRules: ACCESS_CONTROL_DEFAULT_ADMIN_RULES_ID,
        artMarket: interfaceId(abi),
      } as const;
      for (const [name, id] of Object.entries(supported)) {
        assert.equal(await market.read.supportsInterface([id]), true, name);
      }
      for (const id of ["0xffffffff", "0x80ac58cd"] as const) {
        assert.equal(await market.read.supportsInterface([id]), false, id);
      }
    });
  });
});
