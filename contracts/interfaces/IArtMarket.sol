// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IArtMarket
/// @notice Settlement of the platform's off-chain sales on-chain: each sale id moves a certificate from
/// its seller to its buyer exactly once, with the ERC-2981 royalty the certificate owes on the price.
interface IArtMarket {
    /// @notice The sale `saleKey` (`keccak256(bytes(saleId))`) was settled already.
    error ArtMarketAlreadySettled(bytes32 saleKey);
    /// @notice The sale id is empty.
    error ArtMarketEmptySaleId();
    /// @notice A seller, buyer or certificate contract of the zero address.
    error ArtMarketZeroAddress();

    /// @notice Emitted once per sale id, right after certificate `tokenId` moved from `from` to `to` (after the
    /// ERC-721 `Transfer` of the same transaction). `royaltyReceiver` and `royaltyCents` are the certificate's
    /// `royaltyInfo(tokenId, priceCents)`: what the platform pays off-chain, in USD cents.
    event SaleSettled(
        bytes32 indexed saleKey,
        uint256 indexed tokenId,
        string saleId,
        address from,
        address to,
        uint256 priceCents,
        address royaltyReceiver,
        uint256 royaltyCents
    );

    /// @notice Moves the certificate `tokenId` from `from` to `to` for the off-chain sale `saleId` (the API's
    /// `txn_…` id, or `return:<dispute id>` for a refund's return), once per saleId: a retried settlement
    /// reverts with `ArtMarketAlreadySettled`, whatever its other arguments. Needs `from` to have approved
    /// this contract (`setApprovalForAll` or `approve`); the certificate's ERC-721 errors bubble up
    /// (`ERC721IncorrectOwner`, `ERC721InsufficientApproval`). `priceCents` is the sale's price in USD
    /// cents, the unit `royaltyInfo` is asked in. Only callable by holders of `SETTLER_ROLE`.
    /// @return royaltyReceiver The certificate's royalty receiver (the zero address when it has none).
    /// @return royaltyCents The royalty on `priceCents`, in USD cents.
    function settle(string calldata saleId, uint256 tokenId, address from, address to, uint256 priceCents)
        external
        returns (address royaltyReceiver, uint256 royaltyCents);

    /// @notice Whether the sale `saleKey` has been settled.
    function isSettled(bytes32 saleKey) external view returns (bool);

    /// @notice The key under which `saleId` is settled: `keccak256(bytes(saleId))`.
    function saleKeyOf(string calldata saleId) external pure returns (bytes32);

    /// @notice The `ArtCertificate` contract whose tokens this market moves.
    function certificate() external view returns (address);

    /// @notice The role allowed to settle sales.
    function SETTLER_ROLE() external view returns (bytes32);
}
