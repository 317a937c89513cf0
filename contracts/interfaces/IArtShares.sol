// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IArtShares
/// @notice Fractional ownership of certified artworks: an ERC-1155 share class per certificate
/// token id (the share token id equals the certificate token id), with a cap fixed once.
interface IArtShares {
    /// @notice `tokenId` is not a certificate of the linked `ArtCertificate` contract.
    error ArtSharesNotCertified(uint256 tokenId);
    /// @notice A share class for `tokenId` already exists; its cap is fixed.
    error ArtSharesClassExists(uint256 tokenId);
    /// @notice No share class exists for `tokenId`.
    error ArtSharesUnknownClass(uint256 tokenId);
    /// @notice A cap or a mint amount of zero.
    error ArtSharesZeroAmount();
    /// @notice Minting `requested` shares of `tokenId` would exceed its cap; `available` remain.
    error ArtSharesCapExceeded(uint256 tokenId, uint256 requested, uint256 available);
    /// @notice The purchase `purchaseKey` has already minted its shares.
    error ArtSharesPurchaseAlreadyMinted(bytes32 purchaseKey);

    /// @notice Emitted right after the share class of certificate `tokenId` was created with `cap` shares.
    event ShareClassCreated(uint256 indexed tokenId, uint256 cap);
    /// @notice Emitted right after `amount` shares of `tokenId` were minted to `to` for purchase `purchaseKey`
    /// (after the ERC-1155 `TransferSingle`, before the recipient's `onERC1155Received` hook).
    event SharesMinted(uint256 indexed tokenId, address indexed to, bytes32 indexed purchaseKey, uint256 amount);

    /// @notice Creates the share class of certified token `tokenId` with a fixed `cap`.
    /// Only callable by holders of `SHARE_ISSUER_ROLE`.
    function createShareClass(uint256 tokenId, uint256 cap) external;

    /// @notice Mints `amount` shares of `tokenId` to `to` for purchase `purchaseKey`. Reverts with
    /// `ArtSharesPurchaseAlreadyMinted` when `purchaseKey` already minted (checked before anything else,
    /// so a retried purchase always learns it was settled), else past the cap. A contract recipient must
    /// accept ERC-1155 tokens (`onERC1155Received`); its hook runs last, after the purchase, the supply
    /// and `SharesMinted` are recorded. Only callable by holders of `SHARE_ISSUER_ROLE`.
    function mintShares(address to, uint256 tokenId, uint256 amount, bytes32 purchaseKey) external;

    /// @notice The fixed cap of `tokenId`'s share class, 0 when it has none.
    function shareCap(uint256 tokenId) external view returns (uint256);

    /// @notice Whether purchase `purchaseKey` has minted.
    function purchaseMinted(bytes32 purchaseKey) external view returns (bool);

    /// @notice The `ArtCertificate` contract whose tokens the share classes fractionalize.
    function certificate() external view returns (address);

    /// @notice The role allowed to create share classes and mint shares.
    function SHARE_ISSUER_ROLE() external view returns (bytes32);
}
