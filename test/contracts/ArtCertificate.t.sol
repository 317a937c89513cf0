// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {IAccessControl} from "@openzeppelin/contracts/access/IAccessControl.sol";
import {ArtCertificate} from "../../contracts/ArtCertificate.sol";
import {IArtCertificate} from "../../contracts/interfaces/IArtCertificate.sol";
import {Test} from "./utils/Test.sol";

/// @notice Fuzz tests of ArtCertificate: one token per artwork key and the certifier role, whatever the inputs.
contract ArtCertificateFuzzTest is Test {
    ArtCertificate private _certificate;
    address private constant CERTIFIER = address(0xCE47);

    function setUp() public {
        _certificate = new ArtCertificate(address(this), address(0));
        _certificate.grantRole(_certificate.CERTIFIER_ROLE(), CERTIFIER);
    }

    function testFuzz_certify_oneTokenPerArtworkKey(
        string calldata artworkId,
        bytes32 certificateHash,
        address to,
        bytes32 retryHash,
        address retryTo
    ) public {
        vm.assume(bytes(artworkId).length > 0 && certificateHash != 0 && retryHash != 0);
        vm.assume(to != address(0) && retryTo != address(0));
        bytes32 artworkKey = keccak256(bytes(artworkId));

        vm.startPrank(CERTIFIER);
        uint256 tokenId = _certificate.certify(to, artworkId, certificateHash, "u", address(0), 0);
        vm.assertEq(_certificate.tokenIdOfArtwork(artworkKey), tokenId, "artwork not keyed to its token");

        // certify refuses the artwork again, whatever the other arguments...
        vm.expectRevert(
            abi.encodeWithSelector(IArtCertificate.ArtCertificateAlreadyCertified.selector, artworkKey, tokenId)
        );
        _certificate.certify(retryTo, artworkId, retryHash, "v", address(0), 0);

        // ...and certifyBatch skips it, even twice in one batch, next to a new artwork.
        IArtCertificate.CertificationRequest[] memory requests = new IArtCertificate.CertificationRequest[](3);
        requests[0] = IArtCertificate.CertificationRequest(retryTo, artworkId, retryHash, "v", address(0), 0);
        requests[1] = IArtCertificate.CertificationRequest(retryTo, string.concat(artworkId, "/2"), retryHash, "v", address(0), 0);
        requests[2] = requests[0];
        uint256[] memory tokenIds = _certificate.certifyBatch(requests);
        vm.stopPrank();

        vm.assertEq(tokenIds[0], tokenId, "batch minted the artwork again");
        vm.assertEq(tokenIds[2], tokenId, "batch minted the artwork again");
        vm.assertEq(tokenIds[1], tokenId + 1, "batch skipped a new artwork");
        vm.assertEq(_certificate.totalCertified(), 2, "more tokens than artworks");
        vm.assertEq(_certificate.ownerOf(tokenId), to, "the retry moved the token");
        vm.assertEq(_certificate.certificateOf(tokenId).certificateHash, certificateHash, "the retry changed the hash");
    }

    function testFuzz_certify_revertsForNonCertifier(address caller, string calldata artworkId) public {
        vm.assume(!_certificate.hasRole(_certificate.CERTIFIER_ROLE(), caller) && bytes(artworkId).length > 0);
        bytes memory unauthorized = abi.encodeWithSelector(
            IAccessControl.AccessControlUnauthorizedAccount.selector, caller, _certificate.CERTIFIER_ROLE()
        );

        vm.expectRevert(unauthorized);
        vm.prank(caller);
        _certificate.certify(caller, artworkId, keccak256("doc"), "u", address(0), 0);

        IArtCertificate.CertificationRequest[] memory requests = new IArtCertificate.CertificationRequest[](1);
        requests[0] = IArtCertificate.CertificationRequest(caller, artworkId, keccak256("doc"), "u", address(0), 0);
        vm.expectRevert(unauthorized);
        vm.prank(caller);
        _certificate.certifyBatch(requests);

        vm.assertEq(_certificate.totalCertified(), 0, "a non-certifier minted");
    }
}
