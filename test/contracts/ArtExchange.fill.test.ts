import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { getAddress, type Hex, hashTypedData, keccak256, maxUint256, parseEventLogs, toBytes, zeroAddress } from "viem";

import { exchangeDomain, ORDER_TYPES } from "./helpers.js";
import { BUYER_FUNDS, exchangeNetwork, FEE_BPS, type Order, ORDER_SIGNER_ROLE, OrderStatus, PRICE } from "./exchange-network.js";

const { viem, networkHelpers, publicClient, testClient, chainId, admin, relayer, orderKey, alice, bob, carol, dave, treasury, asRelayer, deployExchange, orderOf, sign, balancesOf } = await exchangeNetwork();

describe("ArtExchange", () => {
  describe("fill", () => {
    it("test_fill_paysRoyaltyFeeAndSellerExactlyAndMovesTheToken", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { certificate, stablecoin, exchange } = deployed;
      const order = await orderOf(deployed);
      const signature = await sign(orderKey, order, exchange.address);

      const hash = await exchange.write.fill([order, signature], { account: carol.account });
      // 5 % royalty and 2.5 % fee of 12,345,670,000 units ($12,345.67), in whole cents as a card sale's:
      // the royalty $617.2835 rounded down to $617.28, the fee $308.64175 rounded half up to $308.64.
      const [royalty, fee, proceeds] = [617_280_000n, 308_640_000n, 11_419_750_000n];
      assert.equal(royalty + fee + proceeds, PRICE);
      const orderHash = await exchange.read.hashOrder([order]);
      await viem.assertions.emitWithArgs(hash, exchange, "OrderFilled", [
        orderHash,
        1n,
        order.listingId,
        getAddress(alice.account.address),
        getAddress(carol.account.address),
        getAddress(stablecoin.address),
        PRICE,
        getAddress(bob.account.address),
        royalty,
        fee,
      ]);
      assert.deepEqual(await balancesOf(deployed, carol, bob, treasury, alice), [BUYER_FUNDS - PRICE, royalty, fee, proceeds]);
      assert.equal(await stablecoin.read.balanceOf([exchange.address]), 0n);
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(carol.account.address));
      assert.equal(await exchange.read.orderStatus([orderHash]), OrderStatus.Filled);
    });

    it("test_fill_emitsOrderFilledAfterThePaymentsAndTheTransfer", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { certificate, stablecoin, exchange } = deployed;
      const order = await orderOf(deployed);
      const hash = await exchange.write.fill([order, await sign(orderKey, order, exchange.address)], { account: carol.account });
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      // The three payments (royalty, fee, proceeds) and the certificate's Transfer share one topic; then OrderFilled.
      const transferTopic = keccak256(toBytes("Transfer(address,address,uint256)"));
      const [orderFilled] = parseEventLogs({ abi: exchange.abi, logs: receipt.logs, eventName: "OrderFilled" });
      assert.deepEqual(
        receipt.logs.map((log) => [getAddress(log.address), log.topics[0]]),
        [
          [getAddress(stablecoin.address), transferTopic],
          [getAddress(stablecoin.address), transferTopic],
          [getAddress(stablecoin.address), transferTopic],
          [getAddress(certificate.address), transferTopic],
          [getAddress(exchange.address), orderFilled!.topics[0]],
        ],
      );
    });

    it("test_fill_acceptsTheSelfCustodiedSellersOwnSignature", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { certificate, exchange } = deployed;
      assert.equal(await exchange.read.hasRole([ORDER_SIGNER_ROLE, alice.account.address]), false);
      const order = await orderOf(deployed);
      await exchange.write.fill([order, await sign(alice, order, exchange.address)], { account: carol.account });
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(carol.account.address));
    });

    it("test_fill_acceptsAnErc1271SellersSignature", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { certificate, exchange } = deployed;
      // A contract wallet whose signatures are alice's holds certificate 4. The mock cannot approve the exchange,
      // so the fill stops at the ERC-721 approval: after the signature was accepted.
      const wallet = await viem.deployContract("ERC1271WalletMock", [alice.account.address]);
      await certificate.write.certify([wallet.address, "art_4", keccak256(toBytes("art_4")), "ipfs://", zeroAddress, 0n], asRelayer);
      const order = await orderOf(deployed, { seller: getAddress(wallet.address), tokenId: 4n });
      await viem.assertions.revertWithCustomErrorWithArgs(
        exchange.write.fill([order, await sign(alice, order, exchange.address)], { account: carol.account }),
        certificate,
        "ERC721InsufficientApproval",
        [getAddress(exchange.address), 4n],
      );
      await viem.assertions.revertWithCustomErrorWithArgs(
        exchange.write.fill([order, await sign(carol, order, exchange.address)], { account: carol.account }),
        exchange,
        "ArtExchangeInvalidSignature",
        [await exchange.read.hashOrder([order])],
      );
    });

    it("test_fill_revertsForASignatureOfNeitherTheOrderKeyNorTheSeller", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { exchange } = deployed;
      const order = await orderOf(deployed);
      // A stranger, the buyer, the artist, the admin and the relayer: none signs for alice.
      for (const signer of [dave, carol, bob, admin, relayer]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          exchange.write.fill([order, await sign(signer, order, exchange.address)], { account: carol.account }),
          exchange,
          "ArtExchangeInvalidSignature",
          [await exchange.read.hashOrder([order])],
        );
      }
      // The order key's signature of another price does not sell at this one.
      const cheaper = { ...order, price: order.price - 1n };
      await viem.assertions.revertWithCustomErrorWithArgs(
        exchange.write.fill([cheaper, await sign(orderKey, order, exchange.address)], { account: carol.account }),
        exchange,
        "ArtExchangeInvalidSignature",
        [await exchange.read.hashOrder([cheaper])],
      );
      // Garbage is refused the same way, not with an ECDSA error.
      await viem.assertions.revertWithCustomErrorWithArgs(
        exchange.write.fill([order, "0x1234"], { account: carol.account }),
        exchange,
        "ArtExchangeInvalidSignature",
        [await exchange.read.hashOrder([order])],
      );
    });

    it("test_fill_revertsForAnotherChainOrContract", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { certificate, stablecoin, exchange } = deployed;
      const other = await viem.deployContract("ArtExchange", [
        admin.account.address,
        certificate.address,
        stablecoin.address,
        treasury.account.address,
        FEE_BPS,
      ]);
      await other.write.grantRole([ORDER_SIGNER_ROLE, orderKey.account.address]);
      await certificate.write.setApprovalForAll([other.address, true], { account: alice.account });
      await stablecoin.write.approve([other.address, maxUint256], { account: carol.account });
      const order = await orderOf(deployed);
      const forOtherChain = await sign(orderKey, order, exchange.address, chainId + 1);
      const forOtherContract = await sign(orderKey, order, other.address);
      for (const signature of [forOtherChain, forOtherContract]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          exchange.write.fill([order, signature], { account: carol.account }),
          exchange,
          "ArtExchangeInvalidSignature",
          [await exchange.read.hashOrder([order])],
        );
      }
      assert.notEqual(await exchange.read.hashOrder([order]), await other.read.hashOrder([order]));
      // Each signature fills where it was meant to, and only there.
      await other.write.fill([order, forOtherContract], { account: carol.account });
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(carol.account.address));
    });

    it("test_fill_revertsOnASecondFill", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { certificate, exchange } = deployed;
      const order = await orderOf(deployed);
      const signature = await sign(orderKey, order, exchange.address);
      await exchange.write.fill([order, signature], { account: carol.account });
      // Even once the seller holds the token again, the order does not sell it a second time.
      await certificate.write.transferFrom([carol.account.address, alice.account.address, 1n], { account: carol.account });
      const before = await balancesOf(deployed, dave, alice);
      for (const buyer of [dave, carol]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          exchange.write.fill([order, signature], { account: buyer.account }),
          exchange,
          "ArtExchangeOrderFilled",
          [await exchange.read.hashOrder([order])],
        );
      }
      assert.deepEqual(await balancesOf(deployed, dave, alice), before);
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(alice.account.address));
    });

    it("test_fill_oneOfTwoRacingBuyersWins", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { certificate, exchange } = deployed;
      const order = await orderOf(deployed);
      const signature = await sign(orderKey, order, exchange.address);
      await testClient.setAutomine(false);
      let hashes: Hex[];
      try {
        // Both sent before either is mined; a fixed gas limit, as the second one's estimate would already fail.
        hashes = await Promise.all(
          [carol, dave].map((buyer) => exchange.write.fill([order, signature], { account: buyer.account, gas: 400_000n })),
        );
        await testClient.mine({ blocks: 1 });
      } finally {
        await testClient.setAutomine(true);
      }
      const receipts = await Promise.all(hashes.map((hash) => publicClient.waitForTransactionReceipt({ hash })));
      assert.equal(receipts[0]!.blockNumber, receipts[1]!.blockNumber);
      const winners = receipts.filter((receipt) => receipt.status === "success");
      assert.equal(winners.length, 1);
      const winner = getAddress(winners[0]!.from);
      const loser = winner === getAddress(carol.account.address) ? dave : carol;
      assert.equal(await certificate.read.ownerOf([1n]), winner);
      assert.deepEqual(await balancesOf(deployed, loser), [BUYER_FUNDS]);
      assert.equal(
        BUYER_FUNDS - (await deployed.stablecoin.read.balanceOf([winner])),
        PRICE,
        "the winner paid the price once",
      );
      await viem.assertions.revertWithCustomErrorWithArgs(
        exchange.write.fill([order, signature], { account: loser.account }),
        exchange,
        "ArtExchangeOrderFilled",
        [await exchange.read.hashOrder([order])],
      );
    });

    it("test_fill_fillsUntilTheExpiryAndRevertsAfter", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { certificate, exchange } = deployed;
      const expiry = BigInt((await networkHelpers.time.latest()) + 600);
      const late = await orderOf(deployed, { expiry });
      await networkHelpers.time.setNextBlockTimestamp(expiry + 1n);
      await viem.assertions.revertWithCustomErrorWithArgs(
        exchange.write.fill([late, await sign(orderKey, late, exchange.address)], { account: carol.account }),
        exchange,
        "ArtExchangeOrderExpired",
        [await exchange.read.hashOrder([late]), expiry],
      );
      // The expiry's own second still fills.
      const onTime = await orderOf(deployed, { expiry: expiry + 10n });
      await networkHelpers.time.setNextBlockTimestamp(expiry + 10n);
      await exchange.write.fill([onTime, await sign(orderKey, onTime, exchange.address)], { account: carol.account });
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(carol.account.address));
    });

    it("test_fill_revertsWhenTheSellerNoLongerHoldsTheToken", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { certificate, exchange } = deployed;
      const order = await orderOf(deployed);
      const signature = await sign(alice, order, exchange.address);
      await certificate.write.transferFrom([alice.account.address, dave.account.address, 1n], { account: alice.account });
      // dave approved the exchange too: without the check, alice's signature would sell dave's token.
      await certificate.write.setApprovalForAll([exchange.address, true], { account: dave.account });
      await viem.assertions.revertWithCustomErrorWithArgs(
        exchange.write.fill([order, signature], { account: carol.account }),
        exchange,
        "ArtExchangeSellerNotOwner",
        [1n, getAddress(alice.account.address), getAddress(dave.account.address)],
      );
      assert.deepEqual(await balancesOf(deployed, carol), [BUYER_FUNDS]);
      assert.equal(await exchange.read.orderStatus([await exchange.read.hashOrder([order])]), OrderStatus.Open);
    });

    it("test_fill_revertsForAnotherBuyerThanTheOrderNames", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { certificate, exchange } = deployed;
      const order = await orderOf(deployed, { buyer: getAddress(carol.account.address) });
      const signature = await sign(orderKey, order, exchange.address);
      await viem.assertions.revertWithCustomErrorWithArgs(
        exchange.write.fill([order, signature], { account: dave.account }),
        exchange,
        "ArtExchangeWrongBuyer",
        [getAddress(carol.account.address), getAddress(dave.account.address)],
      );
      await exchange.write.fill([order, signature], { account: carol.account });
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(carol.account.address));
    });

    it("test_fill_revertsForAnotherCurrency", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { exchange } = deployed;
      const otherToken = await viem.deployContract("MockStablecoin", []);
      const order = await orderOf(deployed, { currency: getAddress(otherToken.address) });
      await viem.assertions.revertWithCustomErrorWithArgs(
        exchange.write.fill([order, await sign(orderKey, order, exchange.address)], { account: carol.account }),
        exchange,
        "ArtExchangeUnsupportedCurrency",
        [getAddress(otherToken.address)],
      );
    });

    it("test_fill_revertsWhenTheFeeChangedSinceTheSignature", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { exchange } = deployed;
      const order = await orderOf(deployed);
      const signature = await sign(orderKey, order, exchange.address);
      await exchange.write.setFee([treasury.account.address, 300]);
      await viem.assertions.revertWithCustomErrorWithArgs(
        exchange.write.fill([order, signature], { account: carol.account }),
        exchange,
        "ArtExchangeFeeChanged",
        [FEE_BPS, 300],
      );
    });

    it("test_fill_paysNoRoyaltyWithoutOneOrToTheArtistSelling", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { exchange } = deployed;
      const fee = 308_640_000n;
      // Certificate 2 has no royalty: the seller gets the price less the fee.
      const withoutRoyalty = await orderOf(deployed, { tokenId: 2n, listingId: "lst_2" });
      const hash = await exchange.write.fill([withoutRoyalty, await sign(orderKey, withoutRoyalty, exchange.address)], {
        account: carol.account,
      });
      await viem.assertions.emitWithArgs(hash, exchange, "OrderFilled", [
        await exchange.read.hashOrder([withoutRoyalty]),
        2n,
        "lst_2",
        getAddress(alice.account.address),
        getAddress(carol.account.address),
        getAddress(deployed.stablecoin.address),
        PRICE,
        zeroAddress,
        0n,
        fee,
      ]);
      assert.deepEqual(await balancesOf(deployed, alice, treasury), [PRICE - fee, fee]);

      // Certificate 3 is sold by its artist: the royalty would be paid to the seller, so it is all proceeds.
      const byArtist = await orderOf(deployed, { tokenId: 3n, seller: getAddress(bob.account.address), listingId: "lst_3" });
      const byArtistHash = await exchange.write.fill([byArtist, await sign(bob, byArtist, exchange.address)], { account: dave.account });
      await viem.assertions.emitWithArgs(byArtistHash, exchange, "OrderFilled", [
        await exchange.read.hashOrder([byArtist]),
        3n,
        "lst_3",
        getAddress(bob.account.address),
        getAddress(dave.account.address),
        getAddress(deployed.stablecoin.address),
        PRICE,
        getAddress(bob.account.address),
        0n,
        fee,
      ]);
      assert.deepEqual(await balancesOf(deployed, bob, treasury), [PRICE - fee, 2n * fee]);
    });

    it("test_fill_revertsWithoutTheBuyersAllowanceAndLeavesTheOrderOpen", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { certificate, stablecoin, exchange } = deployed;
      const order = await orderOf(deployed);
      const signature = await sign(orderKey, order, exchange.address);
      await stablecoin.write.approve([exchange.address, PRICE - 1n], { account: dave.account });
      // The royalty and the fee pass the allowance; the seller's proceeds do not: the whole fill is undone.
      await viem.assertions.revertWithCustomError(
        exchange.write.fill([order, signature], { account: dave.account }),
        stablecoin,
        "ERC20InsufficientAllowance",
      );
      assert.deepEqual(await balancesOf(deployed, dave, bob, treasury, alice), [BUYER_FUNDS, 0n, 0n, 0n]);
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(alice.account.address));
      assert.equal(await exchange.read.orderStatus([await exchange.read.hashOrder([order])]), OrderStatus.Open);
    });

    it("test_fill_revertsWithoutTheSellersApprovalAndRefundsTheBuyer", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { certificate, exchange } = deployed;
      const order = await orderOf(deployed);
      await certificate.write.setApprovalForAll([exchange.address, false], { account: alice.account });
      await viem.assertions.revertWithCustomErrorWithArgs(
        exchange.write.fill([order, await sign(orderKey, order, exchange.address)], { account: carol.account }),
        certificate,
        "ERC721InsufficientApproval",
        [getAddress(exchange.address), 1n],
      );
      assert.deepEqual(await balancesOf(deployed, carol, bob, treasury, alice), [BUYER_FUNDS, 0n, 0n, 0n]);
    });

    it("test_hashOrder_isTheEip712DigestWalletsSign", async () => {
      const deployed = await networkHelpers.loadFixture(deployExchange);
      const { exchange } = deployed;
      const order = await orderOf(deployed, { listingId: "lst_été", buyer: getAddress(dave.account.address) });
      const digest = hashTypedData({ domain: exchangeDomain(chainId, exchange.address), types: ORDER_TYPES, primaryType: "Order", message: order });
      assert.equal(await exchange.read.hashOrder([order]), digest);
      const [, name, version, domainChainId, verifyingContract] = await exchange.read.eip712Domain();
      assert.deepEqual([name, version, domainChainId, verifyingContract], ["ArtExchange", "1", BigInt(chainId), getAddress(exchange.address)]);
    });
  });
});
