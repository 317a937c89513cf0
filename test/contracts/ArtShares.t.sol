// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {ArtCertificate} from "../../contracts/ArtCertificate.sol";
import {ArtShares} from "../../contracts/ArtShares.sol";
import {IArtShares} from "../../contracts/interfaces/IArtShares.sol";
import {Test} from "./utils/Test.sol";

/// @notice Fuzz tests of ArtShares: the cap, the purchase key and the issuer role, whatever the inputs.
contract ArtSharesFuzzTest is Test {
    ArtCertificate private _certificate;
    ArtShares private _shares;
    address private constant ISSUER = address(0x155E4);
    address private constant HOLDER = address(0xB0B);

    function setUp() public {
        _certificate = new ArtCertificate(address(this), address(0));
        _shares = new ArtShares(address(this), _certificate, "https://x/{id}.json");
        _certificate.grantRole(_certificate.CERTIFIER_ROLE(), address(this));
        _shares.grantRole(_shares.SHARE_ISSUER_ROLE(), ISSUER);
        _certificate.certify(HOLDER, "art_1", keccak256("doc 1"), "u", address(0), 0);
        _certificate.certify(HOLDER, "art_2", keccak256("doc 2"), "u", address(0), 0);
    }

    function testFuzz_mintShares_neverExceedsTheCap(uint256 cap, uint256[8] calldata amounts) public {
        cap = bound(cap, 1, type(uint128).max);
        vm.prank(ISSUER);
        _shares.createShareClass(1, cap);

        uint256 minted;
        for (uint256 i = 0; i < amounts.length; ++i) {
            // Half the amounts fit the cap, the others are anything at all.
            uint256 amount = i % 2 == 0 ? bound(amounts[i], 1, cap) : amounts[i];
            bytes32 key = keccak256(abi.encode("purchase", i));
            vm.prank(ISSUER);
            try _shares.mintShares(HOLDER, 1, amount, key) {
                minted += amount;
            } catch (bytes memory reason) {
                bytes memory expected = amount == 0
                    ? abi.encodeWithSelector(IArtShares.ArtSharesZeroAmount.selector)
                    : abi.encodeWithSelector(IArtShares.ArtSharesCapExceeded.selector, 1, amount, cap - minted);
                vm.assertEq(keccak256(reason), keccak256(expected), "unexpected revert");
                vm.assertTrue(amount == 0 || amount > cap - minted, "refused a mint that fits");
            }
            vm.assertLe(_shares.totalSupply(1), cap, "supply above the cap");
        }
        vm.assertEq(_shares.totalSupply(1), minted, "supply is not the sum of the mints");
    }

    function testFuzz_mintShares_purchaseKeyMintsOnce(
        bytes32 key,
        uint256 cap,
        uint256 amount,
        uint256 retryTokenId,
        uint256 retryAmount,
        address retryTo
    ) public {
        cap = bound(cap, 1, type(uint128).max);
        amount = bound(amount, 1, cap);
        vm.startPrank(ISSUER);
        _shares.createShareClass(1, cap);
        _shares.mintShares(HOLDER, 1, amount, key);

        // A retry with any class (even none), amount (even zero or past the cap) and recipient is refused
        // as already minted, never for another reason.
        vm.expectRevert(abi.encodeWithSelector(IArtShares.ArtSharesPurchaseAlreadyMinted.selector, key));
        _shares.mintShares(retryTo, retryTokenId, retryAmount, key);
        vm.stopPrank();

        vm.assertTrue(_shares.purchaseMinted(key), "purchase not recorded");
        vm.assertEq(_shares.totalSupply(1), amount, "the retry changed the supply");
    }

    function testFuzz_mintShares_revertsForNonIssuer(address caller, bytes32 key, uint256 amount) public {
        vm.assume(!_shares.hasRole(_shares.SHARE_ISSUER_ROLE(), caller));
        vm.prank(ISSUER);
        _shares.createShareClass(1, 100);

        vm.expectRevert(
            abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, caller, _shares.SHARE_ISSUER_ROLE())
        );
        vm.prank(caller);
        _shares.mintShares(caller, 1, bound(amount, 1, 100), key);
        vm.assertEq(_shares.totalSupply(1), 0, "a non-issuer minted");
    }

    function testFuzz_createShareClass_revertsForNonIssuer(address caller, uint256 cap) public {
        vm.assume(!_shares.hasRole(_shares.SHARE_ISSUER_ROLE(), caller));
        vm.expectRevert(
            abi.encodeWithSelector(IAccessControl.AccessControlUnauthorizedAccount.selector, caller, _shares.SHARE_ISSUER_ROLE())
        );
        vm.prank(caller);
        _shares.createShareClass(2, bound(cap, 1, type(uint256).max));
    }
}
