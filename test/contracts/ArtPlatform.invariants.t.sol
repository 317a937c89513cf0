// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {ArtCertificate} from "../../contracts/ArtCertificate.sol";
import {ArtShares} from "../../contracts/ArtShares.sol";
import {IArtCertificate} from "../../contracts/interfaces/IArtCertificate.sol";
import {ERC1155ReceiverMock} from "../../contracts/test/ERC1155ReceiverMock.sol";
import {Test, Vm} from "./utils/Test.sol";

/// @notice What the invariant fuzzer calls: the platform's relayer (it holds both minter roles) and
/// outsiders, on small sets of artworks, classes and purchase keys so that retries and collisions are
/// frequent. It counts what it saw succeed; the invariants compare that with the contracts.
contract ArtPlatformHandler {
    Vm private constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    uint256 public constant ARTWORKS = 12;
    uint256 public constant PURCHASE_KEYS = 24;
    uint256 public constant HOLDERS = 3;

    ArtCertificate public immutable certificate;
    ArtShares public immutable shares;
    /// @notice A recipient holding the issuer role that mints the same purchase again from its hook.
    ERC1155ReceiverMock public immutable reentrantHolder;

    uint256 public certifiedCount;
    uint256 public mintedTotal;
    uint256 public unauthorizedSuccesses;
    mapping(bytes32 purchaseKey => uint256) public mintsOf;

    constructor(ArtCertificate certificate_, ArtShares shares_, ERC1155ReceiverMock reentrantHolder_) {
        certificate = certificate_;
        shares = shares_;
        reentrantHolder = reentrantHolder_;
    }

    function artworkId(uint256 index) public pure returns (string memory) {
        return string.concat("art_", vm.toString(index % ARTWORKS));
    }

    function purchaseKey(uint256 index) public pure returns (bytes32) {
        return keccak256(abi.encode("purchase", index % PURCHASE_KEYS));
    }

    function certify(uint256 artworkSeed, uint256 holderSeed) external {
        uint256 before = certificate.totalCertified();
        try certificate.certify(_holder(holderSeed), artworkId(artworkSeed), keccak256("doc"), "u", address(0), 0) {
            certifiedCount += 1;
        } catch {}
        _expectNewTokens(before);
    }

    function certifyBatch(uint256[3] calldata artworkSeeds) external {
        IArtCertificate.CertificationRequest[] memory requests = new IArtCertificate.CertificationRequest[](3);
        for (uint256 i = 0; i < 3; ++i) {
            requests[i] = IArtCertificate.CertificationRequest(
                _holder(i), artworkId(artworkSeeds[i]), keccak256("doc"), "u", address(this), 250
            );
        }
        uint256 before = certificate.totalCertified();
        certificate.certifyBatch(requests);
        certifiedCount += certificate.totalCertified() - before;
    }

    function createShareClass(uint256 tokenSeed, uint256 cap) external {
        try shares.createShareClass(_tokenId(tokenSeed), cap % 1_000) {} catch {}
    }

    function mintShares(uint256 tokenSeed, uint256 amount, uint256 keySeed, uint256 holderSeed) external {
        uint256 tokenId = _tokenId(tokenSeed);
        bytes32 key = purchaseKey(keySeed);
        address to = holderSeed % 4 == 3 ? address(reentrantHolder) : _holder(holderSeed);
        if (to == address(reentrantHolder)) reentrantHolder.watch(key, true);
        amount %= 600;
        try shares.mintShares(to, tokenId, amount, key) {
            mintsOf[key] += 1;
            mintedTotal += amount;
        } catch {}
    }

    function transferShares(uint256 tokenSeed, uint256 amount, uint256 fromSeed, uint256 toSeed) external {
        uint256 tokenId = _tokenId(tokenSeed);
        address from = _holder(fromSeed);
        uint256 balance = shares.balanceOf(from, tokenId);
        if (balance == 0) return;
        vm.prank(from);
        shares.safeTransferFrom(from, _holder(toSeed), tokenId, amount % (balance + 1), "");
    }

    /// @notice An outsider (any address without the roles) tries every minting call.
    function mintAsOutsider(address caller, uint256 artworkSeed, uint256 tokenSeed, uint256 keySeed) external {
        if (certificate.hasRole(certificate.CERTIFIER_ROLE(), caller)) return;
        if (shares.hasRole(shares.SHARE_ISSUER_ROLE(), caller)) return;
        uint256 tokenId = _tokenId(tokenSeed);
        bytes32 key = purchaseKey(keySeed);

        vm.prank(caller);
        try certificate.certify(caller, artworkId(artworkSeed), keccak256("doc"), "u", address(0), 0) {
            unauthorizedSuccesses += 1;
        } catch {}
        vm.prank(caller);
        try shares.createShareClass(tokenId, 10) {
            unauthorizedSuccesses += 1;
        } catch {}
        vm.prank(caller);
        try shares.mintShares(caller, tokenId, 1, key) {
            unauthorizedSuccesses += 1;
        } catch {}
    }

    function _expectNewTokens(uint256 before) private view {
        require(certificate.totalCertified() - before <= 1, "certify minted more than one token");
    }

    function _tokenId(uint256 seed) private pure returns (uint256) {
        return 1 + (seed % (ARTWORKS + 1)); // one id past the artworks: never certified
    }

    function _holder(uint256 seed) private pure returns (address) {
        return address(uint160(0xB0B0 + (seed % HOLDERS)));
    }
}

/// @notice Invariants of the two contracts under any sequence of the handler's calls.
contract ArtPlatformInvariantTest is Test {
    ArtCertificate private _certificate;
    ArtShares private _shares;
    ArtPlatformHandler private _handler;

    function setUp() public {
        _certificate = new ArtCertificate(address(this), address(0));
        _shares = new ArtShares(address(this), _certificate, "https://x/{id}.json");
        ERC1155ReceiverMock reentrantHolder = new ERC1155ReceiverMock(_shares);
        _handler = new ArtPlatformHandler(_certificate, _shares, reentrantHolder);
        _certificate.grantRole(_certificate.CERTIFIER_ROLE(), address(_handler));
        _shares.grantRole(_shares.SHARE_ISSUER_ROLE(), address(_handler));
        _shares.grantRole(_shares.SHARE_ISSUER_ROLE(), address(reentrantHolder));
        targetContract(address(_handler));
    }

    function invariant_supplyNeverExceedsTheCap() public view {
        for (uint256 tokenId = 1; tokenId <= _handler.ARTWORKS() + 1; ++tokenId) {
            vm.assertLe(_shares.totalSupply(tokenId), _shares.shareCap(tokenId), "supply above the cap");
        }
    }

    function invariant_oneTokenPerArtworkKey() public view {
        uint256 certifiedArtworks;
        for (uint256 i = 0; i < _handler.ARTWORKS(); ++i) {
            bytes32 artworkKey = keccak256(bytes(_handler.artworkId(i)));
            uint256 tokenId = _certificate.tokenIdOfArtwork(artworkKey);
            if (tokenId == 0) continue;
            certifiedArtworks += 1;
            vm.assertEq(_certificate.certificateOf(tokenId).artworkKey, artworkKey, "token keyed to another artwork");
        }
        // Ids are sequential: as many tokens as certified artworks means none has two.
        vm.assertEq(_certificate.totalCertified(), certifiedArtworks, "more tokens than artworks");
    }

    function invariant_purchaseKeyMintsOnce() public view {
        for (uint256 i = 0; i < _handler.PURCHASE_KEYS(); ++i) {
            bytes32 key = _handler.purchaseKey(i);
            uint256 mints = _handler.mintsOf(key);
            vm.assertLe(mints, 1, "a purchase minted twice");
            vm.assertEq(_shares.purchaseMinted(key), mints == 1, "purchase record differs from the mints");
        }
    }

    function invariant_onlyRoleHoldersMint() public view {
        vm.assertEq(_handler.unauthorizedSuccesses(), 0, "an outsider minted");
        // Every token and share came from the relayer's calls the handler counted (the reentrant holder's
        // own mints included: they must all have failed).
        vm.assertEq(_certificate.totalCertified(), _handler.certifiedCount(), "certificates from elsewhere");
        vm.assertEq(_shares.totalSupply(), _handler.mintedTotal(), "shares from elsewhere");
    }
}
