// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {ArtCertificate} from "../../contracts/ArtCertificate.sol";
import {ArtExchange} from "../../contracts/ArtExchange.sol";
import {IArtExchange} from "../../contracts/interfaces/IArtExchange.sol";
import {MockStablecoin} from "../../contracts/test/MockStablecoin.sol";
import {Test} from "./utils/Test.sol";

/// @notice Fuzz tests of ArtExchange: the price splits exactly, only the order key or the seller signs, an
/// order never fills after its expiry or twice.
contract ArtExchangeFuzzTest is Test {
    // secp256k1's order: private keys are in [1, N - 1].
    uint256 private constant SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141;
    uint256 private constant ORDER_KEY = 0x0EDE7;
    uint256 private constant SELLER_KEY = 0xA11CE;
    address private constant BUYER = address(0xB0B);
    address private constant ARTIST = address(0xA27);
    address private constant TREASURY = address(0x7EA5);

    ArtCertificate private _certificate;
    MockStablecoin private _stablecoin;
    ArtExchange private _exchange;
    address private _seller;

    function setUp() public {
        _seller = vm.addr(SELLER_KEY);
        _certificate = new ArtCertificate(address(this), address(0));
        _stablecoin = new MockStablecoin();
        _exchange = new ArtExchange(address(this), address(_certificate), address(_stablecoin), TREASURY, 250);
        _certificate.grantRole(_certificate.CERTIFIER_ROLE(), address(this));
        _exchange.grantRole(_exchange.ORDER_SIGNER_ROLE(), vm.addr(ORDER_KEY));
        vm.prank(_seller);
        _certificate.setApprovalForAll(address(_exchange), true);
        vm.prank(BUYER);
        _stablecoin.approve(address(_exchange), type(uint256).max);
    }

    function testFuzz_fill_splitsThePriceInWholeCentsAsACardSaleIs(uint256 priceCents, uint96 royaltyBps, uint16 feeBps) public {
        // Up to ten billion dollars, any royalty the certificate allows, any fee the exchange allows.
        priceCents = bound(priceCents, 0, 1e12);
        royaltyBps = uint96(bound(royaltyBps, 0, _certificate.MAX_ROYALTY_BPS()));
        feeBps = uint16(bound(feeBps, 0, _exchange.MAX_FEE_BPS()));
        uint256 price = priceCents * 1e4;
        _certificate.certify(_seller, "art_1", keccak256("doc"), "u", royaltyBps == 0 ? address(0) : ARTIST, royaltyBps);
        _exchange.setFee(TREASURY, feeBps);
        _stablecoin.mint(BUYER, price);

        IArtExchange.Order memory order = _order(1, price, uint64(block.timestamp));
        // Signed first: the calls that compute the signature would take the prank.
        bytes memory signature = _sign(ORDER_KEY, order);
        vm.prank(BUYER);
        _exchange.fill(order, signature);

        uint256 royalty = _stablecoin.balanceOf(ARTIST);
        uint256 fee = _stablecoin.balanceOf(TREASURY);
        vm.assertEq(_stablecoin.balanceOf(BUYER), 0, "the buyer did not pay the price");
        vm.assertEq(royalty + fee + _stablecoin.balanceOf(_seller), price, "payouts differ from the price");
        // The API's card split (payments.platformFeeCents, ArtMarket's royaltyInfo in cents): the royalty
        // rounded down, the fee half up, both in whole cents (10⁴ units).
        vm.assertEq(royalty, priceCents * royaltyBps / 10_000 * 1e4, "royalty");
        vm.assertEq(fee, (priceCents * feeBps + 5_000) / 10_000 * 1e4, "fee");
        vm.assertEq(royalty % 1e4, 0, "royalty in fractions of a cent");
        vm.assertEq(fee % 1e4, 0, "fee in fractions of a cent");
        vm.assertEq(_certificate.ownerOf(1), BUYER, "token not moved");
    }

    function testFuzz_fill_refusesEveryOtherSigner(uint256 key) public {
        key = bound(key, 1, SECP256K1_N - 1);
        vm.assume(key != ORDER_KEY && key != SELLER_KEY);
        _certificate.certify(_seller, "art_1", keccak256("doc"), "u", address(0), 0);
        _stablecoin.mint(BUYER, 100e6);
        IArtExchange.Order memory order = _order(1, 100e6, uint64(block.timestamp));
        bytes memory signature = _sign(key, order);

        vm.expectRevert(
            abi.encodeWithSelector(IArtExchange.ArtExchangeInvalidSignature.selector, _exchange.hashOrder(order))
        );
        vm.prank(BUYER);
        _exchange.fill(order, signature);
        vm.assertEq(_certificate.ownerOf(1), _seller, "a stranger's signature sold the token");
    }

    function testFuzz_fill_refusesAfterTheExpiryAndASecondTime(uint64 expiry, uint64 fillAt) public {
        expiry = uint64(bound(expiry, block.timestamp, type(uint64).max - 1));
        fillAt = uint64(bound(fillAt, block.timestamp, type(uint64).max));
        _certificate.certify(_seller, "art_1", keccak256("doc"), "u", address(0), 0);
        _stablecoin.mint(BUYER, 200e6);
        IArtExchange.Order memory order = _order(1, 100e6, expiry);
        bytes memory signature = _sign(SELLER_KEY, order);
        bytes32 orderHash = _exchange.hashOrder(order);
        vm.warp(fillAt);

        vm.startPrank(BUYER);
        if (fillAt > expiry) {
            vm.expectRevert(abi.encodeWithSelector(IArtExchange.ArtExchangeOrderExpired.selector, orderHash, expiry));
            _exchange.fill(order, signature);
            vm.assertEq(_certificate.ownerOf(1), _seller, "an expired order sold");
        } else {
            _exchange.fill(order, signature);
            // The buyer hands the token back: the seller holds it again, and still the order does not sell it twice.
            _certificate.transferFrom(BUYER, _seller, 1);
            vm.expectRevert(abi.encodeWithSelector(IArtExchange.ArtExchangeOrderFilled.selector, orderHash));
            _exchange.fill(order, signature);
            vm.assertEq(_stablecoin.balanceOf(BUYER), 100e6, "paid twice");
        }
        vm.stopPrank();
    }

    function _order(uint256 tokenId, uint256 price, uint64 expiry) private view returns (IArtExchange.Order memory) {
        return IArtExchange.Order({
            listingId: "lst_1",
            seller: _seller,
            buyer: address(0),
            tokenId: tokenId,
            currency: address(_stablecoin),
            price: price,
            feeBps: _exchange.feeBps(),
            expiry: expiry
        });
    }

    function _sign(uint256 key, IArtExchange.Order memory order) private view returns (bytes memory) {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(key, _exchange.hashOrder(order));
        return abi.encodePacked(r, s, v);
    }
}
