// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {ArtCertificate} from "../../contracts/ArtCertificate.sol";
import {ArtMarket} from "../../contracts/ArtMarket.sol";
import {IArtMarket} from "../../contracts/interfaces/IArtMarket.sol";
import {Test} from "./utils/Test.sol";

/// @notice Fuzz tests of ArtMarket: a sale id settles once, the royalty is the certificate's, only settlers settle.
contract ArtMarketFuzzTest is Test {
    ArtCertificate private _certificate;
    ArtMarket private _market;
    address private constant SETTLER = address(0x5E77);
    address private constant SELLER = address(0xA11CE);
    address private constant BUYER = address(0xB0B);
    address private constant ARTIST = address(0xA27);

    function setUp() public {
        _certificate = new ArtCertificate(address(this), address(0));
        _market = new ArtMarket(address(this), address(_certificate));
        _certificate.grantRole(_certificate.CERTIFIER_ROLE(), address(this));
        _market.grantRole(_market.SETTLER_ROLE(), SETTLER);
        _certificate.certify(SELLER, "art_1", keccak256("doc 1"), "u", ARTIST, 500);
        _certificate.certify(SELLER, "art_2", keccak256("doc 2"), "u", address(0), 0);
        vm.prank(SELLER);
        _certificate.setApprovalForAll(address(_market), true);
        vm.prank(BUYER);
        _certificate.setApprovalForAll(address(_market), true);
    }

    function testFuzz_settle_settlesOncePerSaleId(
        string calldata saleId,
        uint256 priceCents,
        uint256 retryTokenId,
        address retryFrom,
        address retryTo,
        uint256 retryPriceCents
    ) public {
        vm.assume(bytes(saleId).length > 0);
        priceCents = bound(priceCents, 0, type(uint128).max);
        bytes32 saleKey = keccak256(bytes(saleId));

        vm.startPrank(SETTLER);
        _market.settle(saleId, 1, SELLER, BUYER, priceCents);
        vm.assertTrue(_market.isSettled(saleKey), "sale not recorded");

        // A retry with any token, parties and price (even ones that would otherwise move a token back) is
        // refused as settled, never for another reason.
        vm.expectRevert(abi.encodeWithSelector(IArtMarket.ArtMarketAlreadySettled.selector, saleKey));
        _market.settle(saleId, retryTokenId, retryFrom, retryTo, retryPriceCents);
        vm.expectRevert(abi.encodeWithSelector(IArtMarket.ArtMarketAlreadySettled.selector, saleKey));
        _market.settle(saleId, 1, BUYER, SELLER, priceCents);
        vm.stopPrank();

        vm.assertEq(_certificate.ownerOf(1), BUYER, "the retry moved the token");
        vm.assertEq(_certificate.ownerOf(2), SELLER, "the retry moved another token");
    }

    function testFuzz_settle_returnsTheCertificatesRoyalty(uint256 priceCents, bool withRoyalty) public {
        priceCents = bound(priceCents, 0, type(uint128).max);
        uint256 tokenId = withRoyalty ? 1 : 2;
        (address expectedReceiver, uint256 expectedCents) = _certificate.royaltyInfo(tokenId, priceCents);

        vm.prank(SETTLER);
        (address receiver, uint256 royaltyCents) = _market.settle("txn_1", tokenId, SELLER, BUYER, priceCents);
        vm.assertEq(receiver, expectedReceiver, "royalty receiver");
        vm.assertEq(royaltyCents, expectedCents, "royalty amount");
        vm.assertEq(royaltyCents, withRoyalty ? priceCents * 500 / 10_000 : 0, "not 5% of the price");
    }

    function testFuzz_settle_revertsForNonSettler(address caller, string calldata saleId) public {
        vm.assume(!_market.hasRole(_market.SETTLER_ROLE(), caller) && bytes(saleId).length > 0);
        vm.expectRevert(
            abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, caller, _market.SETTLER_ROLE())
        );
        vm.prank(caller);
        _market.settle(saleId, 1, SELLER, caller, 100);

        vm.assertTrue(!_market.isSettled(keccak256(bytes(saleId))), "an outsider settled");
        vm.assertEq(_certificate.ownerOf(1), SELLER, "an outsider moved the token");
    }
}
