// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IArtExchange
/// @notice Sales paid on-chain in a USD stablecoin: a buyer fills an EIP-712 order for one certificate in
/// one call, which takes the price from the buyer and moves the certificate to them atomically. The price is
/// split, straight from the buyer, between the certificate's ERC-2981 royalty receiver, the platform's
/// treasury (its fee) and the seller, in whole cents of the currency as a card sale is split. An order is signed by the platform's order key (`ORDER_SIGNER_ROLE`) or
/// by its seller, is valid only before its expiry, and fills once unless cancelled before.
interface IArtExchange {
    /// @notice A certificate offered for sale at a fixed price, as signed (EIP-712 type `Order`, domain name
    /// "ArtExchange", version "1", this chain and this contract).
    /// @param listingId The platform's listing id (`lst_…`), reported by `OrderFilled`.
    /// @param seller The certificate's holder, paid the proceeds; it must hold the token at the fill.
    /// @param buyer The only account that may fill, or the zero address for anyone.
    /// @param tokenId The `ArtCertificate` token sold.
    /// @param currency The ERC-20 token the price is in: `paymentToken()`.
    /// @param price The price in the currency's smallest unit (a 6-decimal USD token: cents × 10⁴).
    /// @param feeBps The platform's fee the seller agreed to, in basis points: `feeBps()` at the fill.
    /// @param expiry The last second (unix time, `block.timestamp`) at which the order fills.
    struct Order {
        string listingId;
        address seller;
        address buyer;
        uint256 tokenId;
        address currency;
        uint256 price;
        uint16 feeBps;
        uint64 expiry;
    }

    /// @notice Where an order stands; an order never signed or never seen is `Open`.
    enum OrderStatus {
        Open,
        Filled,
        Cancelled
    }

    /// @notice The order `orderHash` was filled already.
    error ArtExchangeOrderFilled(bytes32 orderHash);
    /// @notice The order `orderHash` was cancelled.
    error ArtExchangeOrderCancelled(bytes32 orderHash);
    /// @notice The order `orderHash` expired at `expiry`.
    error ArtExchangeOrderExpired(bytes32 orderHash, uint64 expiry);
    /// @notice The signature is neither the order key's nor the seller's (ECDSA or ERC-1271).
    error ArtExchangeInvalidSignature(bytes32 orderHash);
    /// @notice The order is reserved for `buyer`; `caller` may not fill it.
    error ArtExchangeWrongBuyer(address buyer, address caller);
    /// @notice The order's currency is not `paymentToken()`.
    error ArtExchangeUnsupportedCurrency(address currency);
    /// @notice The order was signed for a fee of `orderFeeBps`; the fee is now `feeBps`.
    error ArtExchangeFeeChanged(uint16 orderFeeBps, uint16 feeBps);
    /// @notice The seller no longer holds the certificate: `owner` does.
    error ArtExchangeSellerNotOwner(uint256 tokenId, address seller, address owner);
    /// @notice Only the order's seller or a holder of `ORDER_SIGNER_ROLE` may cancel it.
    error ArtExchangeUnauthorizedCanceller(address caller);
    /// @notice A fee of `feeBps` exceeds the cap of `maxFeeBps`.
    error ArtExchangeFeeTooHigh(uint16 feeBps, uint16 maxFeeBps);
    /// @notice An admin, certificate, payment token or treasury of the zero address.
    error ArtExchangeZeroAddress();
    /// @notice A payment token of `decimals` decimals has no cent to split in (at least 2 are needed).
    error ArtExchangeUnsupportedDecimals(uint8 decimals);

    /// @notice Emitted once per order, right after certificate `tokenId` moved from `seller` to `buyer` (after
    /// the ERC-20 and ERC-721 `Transfer`s of the same transaction). `price` (in `currency`) was paid by `buyer`:
    /// `royalty` to `royaltyReceiver`, `fee` to the treasury, and the rest to `seller`.
    event OrderFilled(
        bytes32 indexed orderHash,
        uint256 indexed tokenId,
        string listingId,
        address seller,
        address buyer,
        address currency,
        uint256 price,
        address royaltyReceiver,
        uint256 royalty,
        uint256 fee
    );

    /// @notice Emitted when the order `orderHash` was cancelled by `canceller`.
    event OrderCancelled(bytes32 indexed orderHash, address indexed canceller);

    /// @notice Emitted when the admin set where the fee goes and how much it is.
    event FeeSet(address treasury, uint16 feeBps);

    /// @notice Buys the certificate of `order` as the caller: in one transaction, takes `order.price` of
    /// `paymentToken()` from the caller (who approved this contract for at least that much), pays the
    /// certificate's `royaltyInfo(tokenId, price)` rounded down to a whole cent to its receiver (none when
    /// the receiver is the seller), `price * feeBps / 10_000` rounded half up to a whole cent to the
    /// treasury, and the rest to the seller (a card sale of the same price is split the same), and moves the certificate from
    /// the seller (who approved this contract) to the caller, without the ERC-721 receiver callback.
    /// Reverts with `ArtExchangeOrderFilled`, `ArtExchangeOrderCancelled`, `ArtExchangeOrderExpired`,
    /// `ArtExchangeWrongBuyer`, `ArtExchangeUnsupportedCurrency`, `ArtExchangeFeeChanged`,
    /// `ArtExchangeInvalidSignature` or `ArtExchangeSellerNotOwner`; the tokens' errors bubble up
    /// (`ERC20InsufficientAllowance`, `ERC20InsufficientBalance`, `ERC721InsufficientApproval`).
    /// @param signature The order's EIP-712 signature by a holder of `ORDER_SIGNER_ROLE` (65 bytes) or by
    /// `order.seller` (ECDSA, or ERC-1271 when the seller is a contract).
    /// @return orderHash The order's EIP-712 digest, its key in `orderStatus`.
    function fill(Order calldata order, bytes calldata signature) external returns (bytes32 orderHash);

    /// @notice Cancels `order` for good, before it is filled. Only callable by `order.seller` or a holder of
    /// `ORDER_SIGNER_ROLE`. Reverts with `ArtExchangeOrderFilled` or `ArtExchangeOrderCancelled` when it
    /// is not open.
    /// @return orderHash The order's EIP-712 digest.
    function cancel(Order calldata order) external returns (bytes32 orderHash);

    /// @notice Sets the treasury paid the fee and the fee in basis points (at most `MAX_FEE_BPS`). Orders
    /// signed for another fee no longer fill. Only callable by the holder of `DEFAULT_ADMIN_ROLE`.
    function setFee(address treasury, uint16 feeBps) external;

    /// @notice The order's EIP-712 digest: what is signed, and its key in `orderStatus`.
    function hashOrder(Order calldata order) external view returns (bytes32);

    /// @notice Whether the order `orderHash` is open, filled or cancelled (expiry is not recorded).
    function orderStatus(bytes32 orderHash) external view returns (OrderStatus);

    /// @notice The ERC-20 token every price is paid in (a USD stablecoin with 6 decimals).
    function paymentToken() external view returns (address);

    /// @notice The `ArtCertificate` contract whose tokens are sold.
    function certificate() external view returns (address);

    /// @notice The account paid the platform's fee.
    function treasury() external view returns (address);

    /// @notice The platform's fee in basis points of the price.
    function feeBps() external view returns (uint16);

    /// @notice A cent of `paymentToken()` in its smallest unit (10⁴ for 6 decimals): the royalty and the fee
    /// are whole multiples of it.
    function unitsPerCent() external view returns (uint256);

    /// @notice The highest fee `setFee` accepts, in basis points (10%).
    function MAX_FEE_BPS() external view returns (uint16);

    /// @notice The role whose holders sign orders for the platform and may cancel any order.
    function ORDER_SIGNER_ROLE() external view returns (bytes32);
}
