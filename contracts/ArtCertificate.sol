// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {AccessControlDefaultAdminRules} from "@openzeppelin/contracts/access/extensions/AccessControlDefaultAdminRules.sol";
import {ERC2771Context} from "@openzeppelin/contracts/metatx/ERC2771Context.sol";
import {ERC2981} from "@openzeppelin/contracts/token/common/ERC2981.sol";
import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {ERC721URIStorage} from "@openzeppelin/contracts/token/ERC721/extensions/ERC721URIStorage.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";
import {IArtCertificate} from "./interfaces/IArtCertificate.sol";

/// @title ArtCertificate
/// @notice One ERC-721 certificate per artwork registered on the platform, with ERC-2981 royalties and
/// EIP-4906 metadata updates. Certificates are minted by the platform's relayer (`CERTIFIER_ROLE`),
/// can never be minted twice for the same artwork, and are never burned. `DEFAULT_ADMIN_ROLE` has one
/// holder and moves in two steps, after a delay (AccessControlDefaultAdminRules). Calls relayed by the
/// platform's ERC-2771 forwarder (`trustedForwarder()`) act as their signer: custodial wallets, which hold
/// no ETH, approve the market with a signed request the relayer submits.
contract ArtCertificate is IArtCertificate, ERC721URIStorage, ERC2981, AccessControlDefaultAdminRules, ERC2771Context {
    /// @inheritdoc IArtCertificate
    bytes32 public constant CERTIFIER_ROLE = keccak256("CERTIFIER_ROLE");

    /// @notice The highest royalty a certificate can carry, in basis points (10%).
    uint96 public constant MAX_ROYALTY_BPS = 1000;

    // Time to notice and cancel a mistaken or unauthorized admin transfer; the admin can change it.
    uint48 private constant INITIAL_ADMIN_DELAY = 3 days;

    uint256 private _totalCertified;
    mapping(uint256 tokenId => Certificate) private _certificates;
    mapping(bytes32 artworkKey => uint256 tokenId) private _tokenIdOfArtwork;

    /// @param admin The account granted `DEFAULT_ADMIN_ROLE` (manages roles and token URIs); it can hand
    /// the role over with `beginDefaultAdminTransfer`, accepted by the new admin after 3 days.
    /// @param trustedForwarder_ The platform's ERC-2771 forwarder (`ArtForwarder`), fixed for the contract's
    /// lifetime; the zero address trusts none.
    constructor(address admin, address trustedForwarder_)
        ERC721("Art Platform Certificate", "ARTC")
        AccessControlDefaultAdminRules(INITIAL_ADMIN_DELAY, admin)
        ERC2771Context(trustedForwarder_)
    {}

    /// @inheritdoc IArtCertificate
    function certify(
        address to,
        string calldata artworkId,
        bytes32 certificateHash,
        string calldata tokenURI_,
        address royaltyReceiver,
        uint96 royaltyBps
    ) external onlyRole(CERTIFIER_ROLE) returns (uint256 tokenId) {
        _requireValid(artworkId, certificateHash, royaltyBps);
        bytes32 artworkKey = keccak256(bytes(artworkId));
        uint256 existingTokenId = _tokenIdOfArtwork[artworkKey];
        if (existingTokenId != 0) revert ArtCertificateAlreadyCertified(artworkKey, existingTokenId);
        tokenId = _mintCertificate(to, artworkId, artworkKey, certificateHash, tokenURI_, royaltyReceiver, royaltyBps);
    }

    /// @inheritdoc IArtCertificate
    function certifyBatch(CertificationRequest[] calldata requests)
        external
        onlyRole(CERTIFIER_ROLE)
        returns (uint256[] memory tokenIds)
    {
        tokenIds = new uint256[](requests.length);
        for (uint256 i = 0; i < requests.length; ++i) {
            CertificationRequest calldata request = requests[i];
            _requireValid(request.artworkId, request.certificateHash, request.royaltyBps);
            bytes32 artworkKey = keccak256(bytes(request.artworkId));
            uint256 existingTokenId = _tokenIdOfArtwork[artworkKey];
            tokenIds[i] = existingTokenId != 0
                ? existingTokenId
                : _mintCertificate(
                    request.to,
                    request.artworkId,
                    artworkKey,
                    request.certificateHash,
                    request.tokenURI,
                    request.royaltyReceiver,
                    request.royaltyBps
                );
        }
    }

    /// @inheritdoc IArtCertificate
    function setTokenURI(uint256 tokenId, string calldata newTokenURI) external onlyRole(DEFAULT_ADMIN_ROLE) {
        _requireCertified(tokenId);
        _setTokenURI(tokenId, newTokenURI);
    }

    /// @inheritdoc IArtCertificate
    function certificateOf(uint256 tokenId) external view returns (Certificate memory) {
        _requireCertified(tokenId);
        return _certificates[tokenId];
    }

    /// @inheritdoc IArtCertificate
    function tokenIdOfArtwork(bytes32 artworkKey) external view returns (uint256) {
        return _tokenIdOfArtwork[artworkKey];
    }

    /// @inheritdoc IArtCertificate
    function artworkKeyOf(string calldata artworkId) external pure returns (bytes32) {
        return keccak256(bytes(artworkId));
    }

    /// @inheritdoc IArtCertificate
    function totalCertified() external view returns (uint256) {
        return _totalCertified;
    }

    /// @notice ERC-165: ERC-721 (+ metadata), ERC-2981, EIP-4906 (0x49064906), AccessControl (+ default admin
    /// rules) and IArtCertificate.
    function supportsInterface(bytes4 interfaceId)
        public
        view
        override(ERC721URIStorage, ERC2981, AccessControlDefaultAdminRules)
        returns (bool)
    {
        return interfaceId == type(IArtCertificate).interfaceId || super.supportsInterface(interfaceId);
    }

    function _msgSender() internal view override(Context, ERC2771Context) returns (address) {
        return ERC2771Context._msgSender();
    }

    function _msgData() internal view override(Context, ERC2771Context) returns (bytes calldata) {
        return ERC2771Context._msgData();
    }

    function _contextSuffixLength() internal view override(Context, ERC2771Context) returns (uint256) {
        return ERC2771Context._contextSuffixLength();
    }

    function _requireValid(string calldata artworkId, bytes32 certificateHash, uint96 royaltyBps) private pure {
        if (bytes(artworkId).length == 0) revert ArtCertificateEmptyArtworkId();
        if (certificateHash == bytes32(0)) revert ArtCertificateEmptyHash();
        if (royaltyBps > MAX_ROYALTY_BPS) revert ArtCertificateRoyaltyTooHigh(royaltyBps, MAX_ROYALTY_BPS);
    }

    function _mintCertificate(
        address to,
        string calldata artworkId,
        bytes32 artworkKey,
        bytes32 certificateHash,
        string calldata tokenURI_,
        address royaltyReceiver,
        uint96 royaltyBps
    ) private returns (uint256 tokenId) {
        tokenId = ++_totalCertified;
        _tokenIdOfArtwork[artworkKey] = tokenId;
        _certificates[tokenId] = Certificate({
            artworkKey: artworkKey,
            certificateHash: certificateHash,
            certifiedAt: uint64(block.timestamp)
        });

        // `_mint`, not `_safeMint`: a recipient contract's callback must never block a certification.
        _mint(to, tokenId);
        _setTokenURI(tokenId, tokenURI_);
        if (royaltyBps != 0) _setTokenRoyalty(tokenId, royaltyReceiver, royaltyBps);

        emit ArtworkCertified(tokenId, artworkKey, to, artworkId, certificateHash, tokenURI_, royaltyReceiver, royaltyBps);
    }

    // Ids are sequential from 1 and never burned, so a token exists exactly when it is in this range.
    function _requireCertified(uint256 tokenId) private view {
        if (tokenId == 0 || tokenId > _totalCertified) revert ArtCertificateNonexistentToken(tokenId);
    }
}
