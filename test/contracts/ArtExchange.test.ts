import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { artifacts } from "hardhat";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { authorizationNonce, signTransferAuthorization } from "../../api/src/chain/payment-token.js";
import { type Address, getAddress, zeroAddress } from "viem";

import { ACCESS_CONTROL_DEFAULT_ADMIN_RULES_ID, ADMIN_DELAY_SECONDS, interfaceId } from "./helpers.js";
import { BUYER_FUNDS, DEFAULT_ADMIN_ROLE, exchangeNetwork, FEE_BPS, ORDER_SIGNER_ROLE, OrderStatus } from "./exchange-network.js";

const { viem, networkHelpers, publicClient, chainId, admin, relayer, orderKey, alice, bob, carol, dave, treasury, deployExchange, orderOf, sign, balancesOf } = await exchangeNetwork();

describe("ArtExchange", () => {
  describe("cancel", () => {
    it("test_cancel_bySellerOrOrderKeyStopsTheFill", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { exchange } = deployed;
      for (const [canceller, listingId] of [
        [alice, "lst_by_seller"],
        [orderKey, "lst_by_order_key"],
      ] as const) {
        const order = await orderOf(deployed, { listingId });
        const orderHash = await exchange.read.hashOrder([order]);
        const hash = await exchange.write.cancel([order], { account: canceller.account });
        await viem.assertions.emitWithArgs(hash, exchange, "OrderCancelled", [orderHash, getAddress(canceller.account.address)]);
        assert.equal(await exchange.read.orderStatus([orderHash]), OrderStatus.Cancelled);
        await viem.assertions.revertWithCustomErrorWithArgs(
          exchange.write.fill([order, await sign(orderKey, order, exchange.address)], { account: carol.account }),
          exchange,
          "ArtExchangeOrderCancelled",
          [orderHash],
        );
        await viem.assertions.revertWithCustomErrorWithArgs(
          exchange.write.cancel([order], { account: canceller.account }),
          exchange,
          "ArtExchangeOrderCancelled",
          [orderHash],
        );
      }
      assert.deepEqual(await balancesOf(deployed, carol), [BUYER_FUNDS]);
    });

    it("test_cancel_revertsForOthersAndAfterTheFill", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { exchange } = deployed;
      const order = await orderOf(deployed);
      for (const caller of [carol, bob, admin, relayer]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          exchange.write.cancel([order], { account: caller.account }),
          exchange,
          "ArtExchangeUnauthorizedCanceller",
          [getAddress(caller.account.address)],
        );
      }
      await exchange.write.fill([order, await sign(orderKey, order, exchange.address)], { account: carol.account });
      await viem.assertions.revertWithCustomErrorWithArgs(
        exchange.write.cancel([order], { account: alice.account }),
        exchange,
        "ArtExchangeOrderFilled",
        [await exchange.read.hashOrder([order])],
      );
    });
  });

  describe("fee and roles", () => {
    it("test_setFee_setsTheTreasuryAndFeeForTheAdminOnly", async () => {
      const { exchange } = await networkHelpers.loadFixture(deployExchange);
      const hash = await exchange.write.setFee([dave.account.address, 1000]);
      await viem.assertions.emitWithArgs(hash, exchange, "FeeSet", [getAddress(dave.account.address), 1000]);
      assert.equal(await exchange.read.treasury(), getAddress(dave.account.address));
      assert.equal(await exchange.read.feeBps(), 1000);
      await viem.assertions.revertWithCustomErrorWithArgs(exchange.write.setFee([dave.account.address, 1001]), exchange, "ArtExchangeFeeTooHigh", [
        1001,
        1000,
      ]);
      await viem.assertions.revertWithCustomError(exchange.write.setFee([zeroAddress, 0]), exchange, "ArtExchangeZeroAddress");
      for (const caller of [orderKey, treasury]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          exchange.write.setFee([caller.account.address, 0], { account: caller.account }),
          exchange,
          "AccessControlUnauthorizedAccount",
          [getAddress(caller.account.address), DEFAULT_ADMIN_ROLE],
        );
      }
    });

    it("test_constructor_setsEverythingAndRevertsOnZeroAddresses", async () => {
      const { certificate, stablecoin } = await networkHelpers.loadFixture(deployExchange);
      const exchange = await viem.deployContract("ArtExchange", [bob.account.address, certificate.address, stablecoin.address, treasury.account.address, 0]);
      assert.equal(await exchange.read.certificate(), getAddress(certificate.address));
      assert.equal(await exchange.read.paymentToken(), getAddress(stablecoin.address));
      assert.equal(await exchange.read.treasury(), getAddress(treasury.account.address));
      assert.equal(await exchange.read.feeBps(), 0);
      assert.equal(await exchange.read.MAX_FEE_BPS(), 1000);
      assert.equal(await exchange.read.ORDER_SIGNER_ROLE(), ORDER_SIGNER_ROLE);
      assert.equal(await exchange.read.hasRole([DEFAULT_ADMIN_ROLE, bob.account.address]), true);
      assert.equal(await exchange.read.hasRole([ORDER_SIGNER_ROLE, bob.account.address]), false);
      assert.equal(await exchange.read.defaultAdminDelay(), ADMIN_DELAY_SECONDS);

      const args = [admin.account.address, certificate.address, stablecoin.address, treasury.account.address] as const;
      for (const index of [1, 2, 3]) {
        const withZero = args.map((arg, i) => (i === index ? zeroAddress : arg)) as [Address, Address, Address, Address];
        await assert.rejects(viem.deployContract("ArtExchange", [...withZero, FEE_BPS]), /ArtExchangeZeroAddress/);
      }
      await assert.rejects(viem.deployContract("ArtExchange", [...args, 1001]), /ArtExchangeFeeTooHigh/);
      const [, ...rest] = args;
      await assert.rejects(viem.deployContract("ArtExchange", [zeroAddress, ...rest, FEE_BPS]), /AccessControlInvalidDefaultAdmin/);
    });

    it("test_supportsInterface_reportsEveryStandard", async () => {
      const { exchange } = await networkHelpers.loadFixture(deployExchange);
      const { abi } = await artifacts.readArtifact("IArtExchange");
      const supported = {
        erc165: "0x01ffc9a7",
        accessControl: "0x7965db0b",
        accessControlDefaultAdminRules: ACCESS_CONTROL_DEFAULT_ADMIN_RULES_ID,
        artExchange: interfaceId(abi),
      } as const;
      for (const [name, id] of Object.entries(supported)) {
        assert.equal(await exchange.read.supportsInterface([id]), true, name);
      }
      assert.equal(await exchange.read.supportsInterface(["0xffffffff"]), false);
    });
  });

  describe("MockStablecoin", () => {
    it("test_mockStablecoin_hasSixDecimalsAndAnOpenMint", async () => {
      const { stablecoin } = await networkHelpers.loadFixture(deployExchange);
      assert.equal(await stablecoin.read.decimals(), 6);
      await stablecoin.write.mint([treasury.account.address, 1_000_000n], { account: dave.account });
      assert.equal(await stablecoin.read.balanceOf([treasury.account.address]), 1_000_000n);
    });

    it("test_mockStablecoin_transferWithAuthorization_movesOncePerNonceOnTheHoldersSignature", async () => {
      const { stablecoin } = await networkHelpers.loadFixture(deployExchange);
      const holder = privateKeyToAccount(generatePrivateKey());
      await stablecoin.write.mint([holder.address, 5_000_000n], { account: dave.account });
      const domain = { name: await stablecoin.read.name(), version: "2", chainId, verifyingContract: stablecoin.address } as const;
      const now = BigInt((await publicClient.getBlock()).timestamp);
      const nonce = authorizationNonce("wdr_test");
      const args = await signTransferAuthorization(holder, domain, { to: treasury.account.address, value: 2_000_000n, validBefore: now + 3600n, nonce });
      // Anyone submits it (here dave, paying the gas): the holder needs no ETH.
      await stablecoin.write.transferWithAuthorization([...args], { account: dave.account });
      assert.equal(await stablecoin.read.balanceOf([holder.address]), 3_000_000n);
      assert.equal(await stablecoin.read.balanceOf([treasury.account.address]), 2_000_000n);
      assert.equal(await stablecoin.read.authorizationState([holder.address, nonce]), true);
      await viem.assertions.revertWithCustomError(stablecoin.write.transferWithAuthorization([...args], { account: dave.account }), stablecoin, "MockStablecoinAuthorizationUsed");
      // Another recipient than signed, or an expired authorization, moves nothing.
      const other = await signTransferAuthorization(holder, domain, { to: treasury.account.address, value: 1n, validBefore: now + 3600n, nonce: authorizationNonce("wdr_other") });
      await viem.assertions.revertWithCustomError(stablecoin.write.transferWithAuthorization([other[0], dave.account.address, ...other.slice(2)] as unknown as typeof other, { account: dave.account }), stablecoin, "MockStablecoinInvalidSignature");
      const expired = await signTransferAuthorization(holder, domain, { to: treasury.account.address, value: 1n, validBefore: now, nonce: authorizationNonce("wdr_late") });
      await viem.assertions.revertWithCustomError(stablecoin.write.transferWithAuthorization([...expired], { account: dave.account }), stablecoin, "MockStablecoinAuthorizationNotValidNow");
      assert.equal(await stablecoin.read.balanceOf([holder.address]), 3_000_000n);
    });
  });
});
