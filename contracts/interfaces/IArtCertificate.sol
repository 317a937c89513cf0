// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IArtCertificate
/// @notice The on-chain certificate of an artwork registered on the platform: one ERC-721 token per
/// artwork, keyed by `keccak256(bytes(artworkId))`, carrying the immutable hash of the artwork's
/// canonical certificate document (RFC 8785 JSON: docs/decisions.md#certificate-hash).
interface IArtCertificate {
    /// @notice The immutable facts recorded when an artwork is certified.
    struct Certificate {
        bytes32 artworkKey;
        bytes32 certificateHash;
        uint64 certifiedAt;
    }

    /// @notice One artwork to certify with `certifyBatch`: the arguments of `certify`.
    struct CertificationRequest {
        address to;
        string artworkId;
        bytes32 certificateHash;
        string tokenURI;
        address royaltyReceiver;
        uint96 royaltyBps;
    }

    /// @notice The artwork behind `artworkKey` already holds certificate `tokenId`.
    error ArtCertificateAlreadyCertified(bytes32 artworkKey, uint256 tokenId);
    /// @notice No certificate exists for `tokenId`.
    error ArtCertificateNonexistentToken(uint256 tokenId);
    /// @notice The artwork id is empty.
    error ArtCertificateEmptyArtworkId();
    /// @notice The certificate hash is zero.
    error ArtCertificateEmptyHash();
    /// @notice The royalty of `royaltyBps` basis points exceeds the cap of `maxRoyaltyBps`.
    error ArtCertificateRoyaltyTooHigh(uint96 royaltyBps, uint96 maxRoyaltyBps);

    /// @notice Emitted once per artwork, right after its certificate token `tokenId` was minted to `owner`
    /// (after the ERC-721 `Transfer` and the EIP-4906 `MetadataUpdate` of the same transaction).
    /// `royaltyReceiver` and `royaltyBps` are as requested; with `royaltyBps` 0 no royalty is recorded.
    event ArtworkCertified(
        uint256 indexed tokenId,
        bytes32 indexed artworkKey,
        address indexed owner,
        string artworkId,
        bytes32 certificateHash,
        string tokenURI,
        address royaltyReceiver,
        uint96 royaltyBps
    );

    /// @notice Mints the certificate of `artworkId` to `to`. Reverts with
    /// `ArtCertificateAlreadyCertified` when the artwork already has one, so a retried relay can
    /// never mint twice. The token is minted without the ERC-721 receiver callback, so any address
    /// (custodial account or contract wallet) receives it. `royaltyBps` is at most 1000 (10%); when
    /// it is not 0, `royaltyReceiver` must not be the zero address. Only callable by holders of
    /// `CERTIFIER_ROLE`.
    /// @return tokenId The new token id; ids are sequential from 1.
    function certify(
        address to,
        string calldata artworkId,
        bytes32 certificateHash,
        string calldata tokenURI,
        address royaltyReceiver,
        uint96 royaltyBps
    ) external returns (uint256 tokenId);

    /// @notice Certifies several artworks in one transaction, as `certify` would one by one, except
    /// that an artwork which already holds a certificate (from an earlier transaction, or earlier in
    /// this batch) is skipped: nothing is minted or emitted for it and its existing token id is
    /// returned. So a batch retried after a crash, or overlapping another batch, still mints one
    /// token per artwork and never fails because of it. Any other invalid request reverts the whole
    /// batch with the error `certify` would give. Only callable by holders of `CERTIFIER_ROLE`.
    /// @return tokenIds The token id of each request, in order (new or existing).
    function certifyBatch(CertificationRequest[] calldata requests) external returns (uint256[] memory tokenIds);

    /// @notice Points `tokenId` at a new metadata URI (the certificate hash never changes); emits
    /// EIP-4906 `MetadataUpdate`. Only callable by holders of `DEFAULT_ADMIN_ROLE`.
    function setTokenURI(uint256 tokenId, string calldata newTokenURI) external;

    /// @notice The certificate of `tokenId`; reverts with `ArtCertificateNonexistentToken` when absent.
    function certificateOf(uint256 tokenId) external view returns (Certificate memory);

    /// @notice The token id certifying `artworkKey`, or 0 when the artwork is not certified.
    function tokenIdOfArtwork(bytes32 artworkKey) external view returns (uint256);

    /// @notice The key under which `artworkId` is certified: `keccak256(bytes(artworkId))`.
    function artworkKeyOf(string calldata artworkId) external pure returns (bytes32);

    /// @notice How many certificates were ever issued (also the highest token id).
    function totalCertified() external view returns (uint256);

    /// @notice The role allowed to call `certify`.
    function CERTIFIER_ROLE() external view returns (bytes32);
}
